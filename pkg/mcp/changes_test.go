package mcp_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetcache/fleetcache/internal/graphqltest"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/mcp"
)

// changeLines returns changes as "TYPE Kind cluster/namespace/name@rv".
func changeLines(changes []mcp.Change) []string {
	out := []string{}
	for _, c := range changes {
		out = append(out, fmt.Sprintf("%s %s %s/%s/%s@%s", c.Type, c.Kind, c.Cluster, c.Namespace, c.Name, c.ResourceVersion))
	}
	return out
}

// TestWhatChanged checks what_changed against what the test does to the
// fixture's index: creates, updates and deletes, filtered, in both
// orders, paged, cut by the budget, and as alice, who sees the namespace
// web only.
func TestWhatChanged(t *testing.T) {
	f := graphqltest.NewFixture(t)
	srv := serve(t, f.Index, f.Tracker, mcp.Options{})
	admin, alice := srv.connect(t, "admin-token"), srv.connect(t, "alice-token")
	var before mcp.ChangesOutput
	mustCall(t, admin, "what_changed", map[string]any{"first": 1}, &before)
	if before.Revision == "" || before.Returned != 1 || before.NextCursor == "" {
		t.Fatalf("before the test's changes: %+v", before)
	}
	start := time.Now().UTC().Truncate(time.Second)

	ix := f.Index
	ix.Upsert(graphqltest.Version(t, "c1", "web", "new", "10", map[string]string{"app": "web"}))
	ix.Upsert(graphqltest.Version(t, "c2", "data", "extra", "11", map[string]string{"app": "db"}))
	ix.Upsert(graphqltest.Version(t, "c1", "web", "new", "12", map[string]string{"app": "web", "v": "2"}))
	ix.Upsert(graphqltest.Version(t, "c1", "web", "settings", "13", map[string]string{"app": "web"}))
	ix.Delete(graphqltest.Version(t, "c1", "web", "new", "12", nil).Key())
	asc := []string{
		"ADDED ConfigMap c1/web/new@10",
		"ADDED ConfigMap c2/data/extra@11",
		"MODIFIED ConfigMap c1/web/new@12",
		"MODIFIED ConfigMap c1/web/settings@13",
		"DELETED ConfigMap c1/web/new@12",
	}
	desc := slices.Clone(asc)
	slices.Reverse(desc)

	for _, tt := range []struct {
		name string
		args map[string]any
		want []string
	}{
		{"newest first by default", map[string]any{}, desc},
		{"oldest first", map[string]any{"order": "ASC"}, asc},
		{"a namespace", map[string]any{"namespaces": []string{"data"}}, []string{"ADDED ConfigMap c2/data/extra@11"}},
		{"a cluster and a label", map[string]any{"clusters": []string{"c1"}, "labelSelector": "v=2", "order": "ASC"},
			// new gains v=2 at rv 12: it starts matching, then is deleted.
			[]string{"ADDED ConfigMap c1/web/new@12", "DELETED ConfigMap c1/web/new@12"}},
		{"a kind that did not change", map[string]any{"kinds": []string{"Pod"}}, []string{}},
		{"until before it all", map[string]any{"until": start.Add(-time.Hour).Format(time.RFC3339)}, []string{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.args["since"] = before.Revision
			var got mcp.ChangesOutput
			mustCall(t, admin, "what_changed", tt.args, &got)
			if diff := cmp.Diff(tt.want, changeLines(got.Changes)); diff != "" {
				t.Errorf("changes (-want +got):\n%s", diff)
			}
			if got.Returned != len(tt.want) || got.NextCursor != "" || got.Truncated || got.Incomplete || got.Revision == "" {
				t.Errorf("returned %d, nextCursor %q, truncated %v, incomplete %v, revision %q", got.Returned, got.NextCursor, got.Truncated, got.Incomplete, got.Revision)
			}
			for _, c := range got.Changes {
				if at, err := time.Parse(time.RFC3339, c.Time); err != nil || at.Before(start) || at.After(time.Now()) {
					t.Errorf("%s/%s changed at %q, want a time of this test", c.Namespace, c.Name, c.Time)
				}
			}
		})
	}

	t.Run("summary", func(t *testing.T) {
		var got mcp.ChangesOutput
		res := mustCall(t, admin, "what_changed", map[string]any{"since": before.Revision}, &got)
		for _, want := range []string{"5 changes returned, newest first, recorded from ", "2 ADDED, 2 MODIFIED, 1 DELETED.",
			"By cluster: c1 4, c2 1; kind: ConfigMap 5; namespace: web 4, data 1."} {
			if !strings.Contains(got.Summary, want) {
				t.Errorf("summary %q, want it to say %q", got.Summary, want)
			}
		}
		if !strings.HasPrefix(text(res), got.Summary+"\n") {
			t.Errorf("text %q: want the summary first", text(res))
		}
		var none mcp.ChangesOutput
		mustCall(t, admin, "what_changed", map[string]any{"since": before.Revision, "kinds": []string{"Pod"}}, &none)
		if !strings.HasPrefix(none.Summary, "No changes match since that revision.") {
			t.Errorf("summary %q", none.Summary)
		}
	})

	t.Run("fields", func(t *testing.T) {
		var got mcp.ChangesOutput
		mustCall(t, admin, "what_changed", map[string]any{"since": before.Revision, "namespaces": []string{"data"}, "fields": []string{"metadata.labels.app", "data.missing"}}, &got)
		if len(got.Changes) != 1 {
			t.Fatalf("changes %+v", got.Changes)
		}
		if diff := cmp.Diff(map[string]any{"metadata.labels.app": "db"}, got.Changes[0].Fields); diff != "" {
			t.Errorf("fields (-want +got):\n%s", diff)
		}
	})

	t.Run("a duration", func(t *testing.T) {
		var got mcp.ChangesOutput
		mustCall(t, admin, "what_changed", map[string]any{"since": "1h", "order": "ASC", "first": 1000}, &got)
		// The fixture's objects, then the test's changes.
		if n := len(got.Changes); n != len(f.ByName)+len(asc) || !slices.Equal(changeLines(got.Changes[n-len(asc):]), asc) {
			t.Errorf("%d changes, last %v; want the %d of the fixture and then %v", n, changeLines(got.Changes), len(f.ByName), asc)
		}
		since, err := time.Parse(time.RFC3339Nano, got.Since)
		if err != nil || time.Since(since) < time.Hour || time.Since(since) > time.Hour+time.Minute {
			t.Errorf("since %q (%v): want the time an hour ago", got.Since, err)
		}
	})

	t.Run("pages", func(t *testing.T) {
		for _, order := range []string{"ASC", "DESC"} {
			var all []string
			after := ""
			for range len(asc) + 1 {
				var page mcp.ChangesOutput
				mustCall(t, admin, "what_changed", map[string]any{"since": before.Revision, "order": order, "first": 2, "after": after}, &page)
				all = append(all, changeLines(page.Changes)...)
				if after = page.NextCursor; after == "" {
					break
				}
				if !strings.Contains(page.Summary, "More: call again with after set to nextCursor") {
					t.Errorf("summary %q", page.Summary)
				}
			}
			want := asc
			if order == "DESC" {
				want = desc
			}
			if diff := cmp.Diff(want, all); diff != "" {
				t.Errorf("%s in pages of 2 (-want +got):\n%s", order, diff)
			}
		}
	})

	t.Run("size budget", func(t *testing.T) {
		small := serve(t, f.Index, f.Tracker, mcp.Options{ResultBytes: 300}).connect(t, "admin-token")
		var all []string
		after := ""
		for range len(asc) + 1 {
			var page mcp.ChangesOutput
			mustCall(t, small, "what_changed", map[string]any{"since": before.Revision, "after": after}, &page)
			if page.NextCursor != "" && (!page.Truncated || !strings.Contains(page.Summary, "(cut at the 300 bytes size budget)")) {
				t.Errorf("a page cut short: truncated %v, summary %q", page.Truncated, page.Summary)
			}
			all = append(all, changeLines(page.Changes)...)
			if after = page.NextCursor; after == "" {
				break
			}
		}
		if diff := cmp.Diff(desc, all); diff != "" {
			t.Errorf("in budgets of 300 bytes (-want +got):\n%s", diff)
		}
	})

	t.Run("alice", func(t *testing.T) {
		var got mcp.ChangesOutput
		mustCall(t, alice, "what_changed", map[string]any{"since": before.Revision}, &got)
		var want []string
		for _, l := range desc {
			if strings.Contains(l, "/web/") {
				want = append(want, l)
			}
		}
		if diff := cmp.Diff(want, changeLines(got.Changes)); diff != "" {
			t.Errorf("alice (-namespace web +got):\n%s", diff)
		}
	})

	t.Run("stale clusters", func(t *testing.T) {
		var got mcp.ChangesOutput
		mustCall(t, admin, "what_changed", map[string]any{"since": before.Revision, "clusters": []string{"c3"}}, &got)
		if len(got.StaleClusters) != 1 || got.StaleClusters[0].Cluster != "c3" || !strings.Contains(got.Summary, "Stale clusters") {
			t.Errorf("over c3 (disconnected): %+v", got)
		}
	})

	t.Run("bad arguments", func(t *testing.T) {
		for _, tt := range []struct {
			name string
			args map[string]any
			want string
		}{
			{"since", map[string]any{"since": "yesterday"}, `invalid since "yesterday": want a duration (1h, 30m), an RFC 3339 time`},
			{"negative since", map[string]any{"since": "-1h"}, `invalid since "-1h": a duration before now must not be negative`},
			{"until", map[string]any{"until": "2026-13-01T00:00:00Z"}, `invalid until "2026-13-01T00:00:00Z"`},
			{"after", map[string]any{"after": "garbage"}, "invalid after cursor"},
			{"order", map[string]any{"order": "SIDEWAYS"}, "order"},
			{"first", map[string]any{"first": -1}, "first is -1: it must be 0 or more"},
			{"fields", map[string]any{"fields": []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"}}, "fields has 9 paths: at most 8"},
			{"a field path", map[string]any{"fields": []string{"metadata..name"}}, `invalid path "metadata..name"`},
			{"a label selector", map[string]any{"labelSelector": "app in (web"}, `invalid label selector "app in (web"`},
			{"an unknown argument", map[string]any{"when": "1h"}, "when"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				if msg := call(t, alice, "what_changed", tt.args, nil); !strings.Contains(msg, tt.want) {
					t.Errorf("tool error %q, want it to say %q", msg, tt.want)
				}
			})
		}
	})
}

// TestWhatChangedIncomplete checks that an answer whose range starts
// before the retained history says so.
func TestWhatChangedIncomplete(t *testing.T) {
	ix := index.New(index.Options{Retention: 3})
	for i := range 5 {
		ix.Upsert(graphqltest.Version(t, "c1", "web", fmt.Sprintf("cm-%d", i), "1", nil))
	}
	cs := serve(t, ix, health.NewTracker(ix, health.Options{}), mcp.Options{}).connect(t, "admin-token")
	var got mcp.ChangesOutput
	mustCall(t, cs, "what_changed", map[string]any{"since": "1h", "order": "ASC"}, &got)
	if diff := cmp.Diff([]string{"ADDED ConfigMap c1/web/cm-2@1", "ADDED ConfigMap c1/web/cm-3@1", "ADDED ConfigMap c1/web/cm-4@1"}, changeLines(got.Changes)); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	if !got.Incomplete || !strings.Contains(got.Summary, "earlier changes are not known") {
		t.Errorf("incomplete %v, summary %q", got.Incomplete, got.Summary)
	}
}
