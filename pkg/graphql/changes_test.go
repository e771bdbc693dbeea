package graphql

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetcache/fleetcache/pkg/authn"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index"
)

// changesAnswer is what the tests read of a changes query.
type changesAnswer struct {
	Changes struct {
		Edges []struct {
			Type     string
			Cursor   string
			Time     *time.Time
			Resource struct{ Cluster, Kind, Namespace, Name string }
		}
		PageInfo struct {
			HasNextPage bool
			EndCursor   *string
		}
		Revision  string
		Truncated bool
	}
}

func (a changesAnswer) lines() []string {
	out := []string{}
	for _, e := range a.Changes.Edges {
		r := e.Resource
		out = append(out, fmt.Sprintf("%s %s %s/%s/%s", e.Type, r.Kind, r.Cluster, r.Namespace, r.Name))
	}
	return out
}

const changesQuery = `query($f: ResourceFilter, $since: String, $until: String, $first: Int, $after: String, $order: SortOrder) {
  changes(filter: $f, since: $since, until: $until, first: $first, after: $after, order: $order) {
    edges { type cursor time resource { cluster kind namespace name } }
    pageInfo { hasNextPage endCursor }
    revision truncated
  }
}`

// TestChanges checks the changes query against what the test did to the
// index: creates, updates, deletes and a cluster's removal, as the
// subscription path classifies them for a filter (an object leaving the
// filter is DELETED), by revision and by time, forwards and backwards, a
// page at a time.
func TestChanges(t *testing.T) {
	ix := index.New(index.Options{})
	s := newServer(t, ix, health.NewTracker(ix, health.Options{}), Options{})
	cm := func(cluster, name, rv string, labels map[string]string) {
		ix.Upsert(version(t, cluster, "web", name, rv, labels))
	}
	cm("c1", "a", "1", map[string]string{"app": "web"})
	var before changesAnswer
	data(t, s, changesQuery, map[string]any{"first": 0}, &before)
	start := before.Changes.Revision
	mid := time.Now()

	cm("c1", "b", "1", map[string]string{"app": "web"})
	cm("c2", "c", "1", map[string]string{"app": "web"})
	cm("c1", "a", "2", map[string]string{"app": "web", "v": "2"})
	cm("c1", "b", "2", map[string]string{"app": "db"}) // leaves app=web
	ix.Delete(version(t, "c1", "web", "a", "2", nil).Key())
	ix.RemoveCluster("c2")

	all := []string{"ADDED ConfigMap c1/web/b", "ADDED ConfigMap c2/web/c", "MODIFIED ConfigMap c1/web/a",
		"DELETED ConfigMap c1/web/b", "DELETED ConfigMap c1/web/a", "DELETED ConfigMap c2/web/c"}
	web := map[string]any{"labelSelector": "app=web"}
	tests := []struct {
		name string
		vars map[string]any
		want []string
		more bool
	}{
		{name: "since a revision", vars: map[string]any{"f": web, "since": start}, want: all},
		{name: "since a time", vars: map[string]any{"f": web, "since": mid.UTC().Format(time.RFC3339Nano)}, want: all},
		{name: "since a duration", vars: map[string]any{"f": web, "since": "1h"},
			want: append([]string{"ADDED ConfigMap c1/web/a"}, all...)},
		{name: "one cluster", vars: map[string]any{"f": map[string]any{"clusters": []any{"c2"}}, "since": start},
			want: []string{"ADDED ConfigMap c2/web/c", "DELETED ConfigMap c2/web/c"}},
		{name: "every change of b, unfiltered", vars: map[string]any{"f": map[string]any{"fieldSelector": "metadata.name=b"}},
			want: []string{"ADDED ConfigMap c1/web/b", "MODIFIED ConfigMap c1/web/b"}},
		{name: "first page", vars: map[string]any{"f": web, "since": start, "first": 2}, want: all[:2], more: true},
		{name: "newest first", vars: map[string]any{"f": web, "since": start, "order": "DESC", "first": 2},
			want: []string{all[5], all[4]}, more: true},
		{name: "until in the future", vars: map[string]any{"f": web, "since": start, "until": time.Now().Add(time.Hour).Format(time.RFC3339)}, want: all},
		{name: "until before it all", vars: map[string]any{"f": web, "since": start, "until": mid.Add(-time.Hour).Format(time.RFC3339)}, want: []string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got changesAnswer
			data(t, s, changesQuery, tc.vars, &got)
			if diff := cmp.Diff(tc.want, got.lines()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if got.Changes.PageInfo.HasNextPage != tc.more {
				t.Errorf("hasNextPage %v, want %v", got.Changes.PageInfo.HasNextPage, tc.more)
			}
			for _, e := range got.Changes.Edges {
				if e.Time == nil || e.Time.Before(mid.Add(-time.Minute)) || e.Time.After(time.Now().Add(time.Second)) {
					t.Errorf("change %s at %v, want a time of this test", e.Resource.Name, e.Time)
				}
			}
		})
	}

	// Paging: every change once, in order, forwards and backwards.
	for _, order := range []string{"ASC", "DESC"} {
		var got []string
		vars := map[string]any{"f": web, "since": start, "first": 4, "order": order}
		for range 10 {
			var page changesAnswer
			data(t, s, changesQuery, vars, &page)
			got = append(got, page.lines()...)
			if !page.Changes.PageInfo.HasNextPage {
				break
			}
			vars["after"] = *page.Changes.PageInfo.EndCursor
		}
		want := all
		if order == "DESC" {
			want = []string{all[5], all[4], all[3], all[2], all[1], all[0]}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("pages %s (-want +got):\n%s", order, diff)
		}
	}
}

// retainedFew returns a server whose index retains retention changes
// after changes of five ConfigMaps, and the changes' revision before and
// after them.
func retainedFew(t testing.TB, retention, changes int) (s *Server, before, after changesAnswer) {
	ix := index.New(index.Options{Retention: retention})
	s = newServer(t, ix, health.NewTracker(ix, health.Options{}), Options{})
	data(t, s, changesQuery, map[string]any{"first": 0}, &before)
	for i := range changes {
		ix.Upsert(version(t, "c1", "web", fmt.Sprint("cm-", i%5), fmt.Sprint(i+1), nil))
	}
	data(t, s, changesQuery, map[string]any{"first": 0}, &after)
	return s, before, after
}

// TestChangesErrors checks the arguments the changes query refuses, and
// that a range older than the retained changes is said to be truncated,
// or, for a cursor, expired.
func TestChangesErrors(t *testing.T) {
	s, first, _ := retainedFew(t, 3, 5)
	for _, tc := range []struct {
		name     string
		vars     map[string]any
		wantCode string
		wantMsg  string
	}{
		{name: "expired cursor", vars: map[string]any{"since": first.Changes.Revision}, wantCode: CodeCursorExpired, wantMsg: "older than the retained changes"},
		{name: "expired after", vars: map[string]any{"after": first.Changes.Revision}, wantCode: CodeCursorExpired, wantMsg: "after: revision"},
		{name: "garbage", vars: map[string]any{"since": "yesterday"}, wantCode: CodeBadUserInput, wantMsg: "want a duration (1h, 30m), an RFC 3339 time"},
		{name: "malformed time", vars: map[string]any{"since": "2026-13-01T00:00:00Z"}, wantCode: CodeBadUserInput, wantMsg: "RFC 3339"},
		{name: "negative duration", vars: map[string]any{"since": "-1h"}, wantCode: CodeBadUserInput, wantMsg: "must not be negative"},
		{name: "page too large", vars: map[string]any{"first": 100000}, wantCode: CodeBadUserInput, wantMsg: "first must be between"},
		{name: "page cursor as after", vars: map[string]any{"after": "garbage"}, wantCode: CodeBadUserInput, wantMsg: "invalid after cursor"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := run(t, s, changesQuery, tc.vars)
			if got := codes(res); len(got) != 1 || got[0] != tc.wantCode || !strings.Contains(res.Errors[0].Message, tc.wantMsg) {
				t.Errorf("errors %+v, want one %s containing %q", res.Errors, tc.wantCode, tc.wantMsg)
			}
		})
	}
	var got changesAnswer
	data(t, s, changesQuery, map[string]any{"since": "1h"}, &got)
	if !got.Changes.Truncated || len(got.Changes.Edges) != 3 {
		t.Errorf("since 1h with 3 of 5 changes retained: truncated %v, %d changes; want true and 3", got.Changes.Truncated, len(got.Changes.Edges))
	}
}

// TestChangesWithRights checks that changes holds only what the caller
// may see, as resourceEvents does, checked with the same decisions.
func TestChangesWithRights(t *testing.T) {
	ix := index.New(index.Options{})
	s := newServer(t, ix, health.NewTracker(ix, health.Options{}), Options{Authorizer: scopesAuthorizer{}})
	ix.Upsert(newObject(t, spec{cluster: "c1", typ: cmType, namespace: "web", name: "cm"}))
	ix.Upsert(newObject(t, spec{cluster: "c1", typ: podType, namespace: "web", name: "pod"}))
	for _, tc := range []struct {
		scopes []string
		want   []string
	}{
		{scopes: []string{"configmaps"}, want: []string{"ADDED ConfigMap c1/web/cm"}},
		{scopes: []string{"configmaps", "pods"}, want: []string{"ADDED ConfigMap c1/web/cm", "ADDED Pod c1/web/pod"}},
		{scopes: nil, want: []string{}},
	} {
		var got changesAnswer
		dataAs(t, s, &authn.User{Name: "alice", Extra: map[string][]string{"scopes": tc.scopes}}, changesQuery, &got)
		if diff := cmp.Diff(tc.want, got.lines()); diff != "" {
			t.Errorf("scopes %v (-want +got):\n%s", tc.scopes, diff)
		}
	}
}

// FuzzChangesBounds sends any since, until and after text, in either
// order, through the changes query: the answer is data with at most a page
// of changes, or one BAD_USER_INPUT or CURSOR_EXPIRED error, never another
// (an internal error, a panic).
func FuzzChangesBounds(f *testing.F) {
	s, start, now := retainedFew(f, 8, 12)
	for _, seed := range [][3]string{
		{"1h", "", ""}, {"0s", "", ""}, {"-5m", "", ""}, {"2026-01-02T03:04:05Z", "", ""}, {"2026-01-02T03:04:05+02:00", "1h", ""},
		{start.Changes.Revision, "", ""}, {now.Changes.Revision, "", ""}, {"", now.Changes.Revision, ""}, {"", "", now.Changes.Revision},
		{"yesterday", "", ""}, {"R", "", ""}, {"", "", "garbage"}, {"1h", "2h", ""}, {"9999999h", "", ""}, {"1e9h", "", ""},
	} {
		f.Add(seed[0], seed[1], seed[2], false)
	}
	f.Fuzz(func(t *testing.T, since, until, after string, desc bool) {
		vars := map[string]any{"first": 5}
		for k, v := range map[string]string{"since": since, "until": until, "after": after} {
			if v != "" {
				vars[k] = v
			}
		}
		if desc {
			vars["order"] = "DESC"
		}
		res := run(t, s, changesQuery, vars)
		if len(res.Errors) > 0 {
			if got := codes(res); len(got) != 1 || (got[0] != CodeBadUserInput && got[0] != CodeCursorExpired) {
				t.Fatalf("since %q until %q after %q: errors %v, want one BAD_USER_INPUT or CURSOR_EXPIRED", since, until, after, res.Errors)
			}
			return
		}
		var got changesAnswer
		b, err := json.Marshal(res.Data)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		if n := len(got.Changes.Edges); n > 5 {
			t.Fatalf("%d changes on a page of 5", n)
		}
	})
}
