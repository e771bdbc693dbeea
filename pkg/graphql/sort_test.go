package graphql

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetcache/fleetcache/pkg/graphql/filter"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index"
)

const sortedQuery = `query($filter: ResourceFilter, $sort: [ResourceSort!], $first: Int, $after: String) {
  resources(filter: $filter, sort: $sort, first: $first, after: $after) {
    edges { cursor node { cluster name } }
    pageInfo { hasNextPage endCursor }
    totalCount
  }
}`

type sortedPage struct {
	Resources struct {
		Edges []struct {
			Cursor string
			Node   struct{ Cluster, Name string }
		}
		PageInfo struct {
			HasNextPage bool
			EndCursor   string
		}
		TotalCount int
	}
}

// sortIndex holds ConfigMaps in two clusters whose data has a number n, a
// string s and a time t, each absent from some.
func sortIndex(t *testing.T) *index.Index {
	ix := index.New(index.Options{})
	for i, d := range []map[string]any{
		{"n": 10, "s": "b", "t": "2026-01-01T00:00:09Z"},
		{"n": 9, "s": "a", "t": "2026-01-01T00:00:10Z"},
		{"n": 2.5, "s": "c"},
		{"s": "b", "t": "2026-01-01T00:00:01Z"},
		{"n": 100},
		{},
	} {
		for _, c := range []string{"c2", "c1"} {
			ix.Upsert(newObject(t, spec{cluster: c, typ: cmType, namespace: "ns", name: fmt.Sprintf("cm-%d", i), data: d}))
		}
	}
	return ix
}

func sortedNames(p sortedPage) []string {
	var out []string
	for _, e := range p.Resources.Edges {
		out = append(out, e.Node.Cluster+"/"+e.Node.Name)
	}
	return out
}

// TestSort: sorts by a number, a string and a time in both orders, with
// absent values last and cluster, namespace, name as the tie-break; pages
// of any size put together give the same order.
func TestSort(t *testing.T) {
	ix := sortIndex(t)
	s := newServer(t, ix, health.NewTracker(ix, health.Options{}), Options{})
	for _, tc := range []struct {
		name string
		sort []any
		want []string
	}{
		{name: "number", sort: []any{map[string]any{"field": "data.n"}},
			want: []string{"c1/cm-2", "c2/cm-2", "c1/cm-1", "c2/cm-1", "c1/cm-0", "c2/cm-0", "c1/cm-4", "c2/cm-4", "c1/cm-3", "c1/cm-5", "c2/cm-3", "c2/cm-5"}},
		{name: "number desc", sort: []any{map[string]any{"field": "data.n", "order": "DESC"}},
			want: []string{"c1/cm-4", "c2/cm-4", "c1/cm-0", "c2/cm-0", "c1/cm-1", "c2/cm-1", "c1/cm-2", "c2/cm-2", "c1/cm-3", "c1/cm-5", "c2/cm-3", "c2/cm-5"}},
		{name: "time desc then string", sort: []any{map[string]any{"field": "data.t", "order": "DESC"}, map[string]any{"field": "data.s"}},
			want: []string{"c1/cm-1", "c2/cm-1", "c1/cm-0", "c2/cm-0", "c1/cm-3", "c2/cm-3", "c1/cm-2", "c2/cm-2", "c1/cm-4", "c1/cm-5", "c2/cm-4", "c2/cm-5"}},
		{name: "string desc then cluster desc", sort: []any{map[string]any{"field": "data.s", "order": "DESC"}, map[string]any{"field": "cluster", "order": "DESC"}},
			want: []string{"c2/cm-2", "c1/cm-2", "c2/cm-0", "c2/cm-3", "c1/cm-0", "c1/cm-3", "c2/cm-1", "c1/cm-1", "c2/cm-4", "c2/cm-5", "c1/cm-4", "c1/cm-5"}},
		{name: "empty sort is Position order", sort: []any{},
			want: []string{"c1/cm-0", "c1/cm-1", "c1/cm-2", "c1/cm-3", "c1/cm-4", "c1/cm-5", "c2/cm-0", "c2/cm-1", "c2/cm-2", "c2/cm-3", "c2/cm-4", "c2/cm-5"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, first := range []int{100, 5, 1} {
				var got []string
				var after any
				for pages := 0; ; pages++ {
					var p sortedPage
					data(t, s, sortedQuery, map[string]any{"sort": tc.sort, "first": first, "after": after}, &p)
					if p.Resources.TotalCount != len(tc.want) {
						t.Fatalf("totalCount %d, want %d", p.Resources.TotalCount, len(tc.want))
					}
					got = append(got, sortedNames(p)...)
					if n := len(p.Resources.Edges); n > 0 && p.Resources.Edges[n-1].Cursor != p.Resources.PageInfo.EndCursor {
						t.Fatalf("endCursor %q is not the last edge's cursor %q", p.Resources.PageInfo.EndCursor, p.Resources.Edges[n-1].Cursor)
					}
					if !p.Resources.PageInfo.HasNextPage {
						break
					}
					if pages > len(tc.want) {
						t.Fatal("paging does not end")
					}
					after = p.Resources.PageInfo.EndCursor
				}
				if d := cmp.Diff(tc.want, got); d != "" {
					t.Errorf("first %d (-want +got):\n%s", first, d)
				}
			}
		})
	}
}

// TestSortBadInput: every bad sort and every cursor used with another
// sort or filter is BAD_USER_INPUT, saying why.
func TestSortBadInput(t *testing.T) {
	ix := sortIndex(t)
	s := newServer(t, ix, health.NewTracker(ix, health.Options{}), Options{})
	byN := []any{map[string]any{"field": "data.n"}}
	sortedCursor := func(sort []any, filter any) string {
		var p sortedPage
		data(t, s, sortedQuery, map[string]any{"sort": sort, "filter": filter, "first": 1}, &p)
		return p.Resources.PageInfo.EndCursor
	}
	var plain sortedPage
	data(t, s, sortedQuery, map[string]any{"first": 1}, &plain)
	tooMany := make([]any, filter.MaxSortKeys+1)
	for i := range tooMany {
		tooMany[i] = map[string]any{"field": "data.n"}
	}
	for _, tc := range []struct {
		name   string
		vars   map[string]any
		reason string
	}{
		{name: "array path", vars: map[string]any{"sort": []any{map[string]any{"field": "spec.containers[].image"}}},
			reason: "must not cross an array"},
		{name: "malformed path", vars: map[string]any{"sort": []any{map[string]any{"field": "data..n"}}},
			reason: `invalid path "data..n"`},
		{name: "too many keys", vars: map[string]any{"sort": tooMany}, reason: "at most 8"},
		{name: "page cursor with a sort", vars: map[string]any{"sort": byN, "after": plain.Resources.PageInfo.EndCursor},
			reason: "a page cursor, not a sorted page cursor"},
		{name: "sorted cursor without a sort", vars: map[string]any{"after": sortedCursor(byN, nil)},
			reason: "a sorted page cursor, not a page cursor"},
		{name: "sorted cursor with another sort", vars: map[string]any{"sort": []any{map[string]any{"field": "data.n", "order": "DESC"}},
			"after": sortedCursor(byN, nil)}, reason: "another filter or sort"},
		{name: "sorted cursor with another filter", vars: map[string]any{"sort": byN, "filter": map[string]any{"clusters": []any{"c1"}},
			"after": sortedCursor(byN, nil)}, reason: "another filter or sort"},
		{name: "garbage cursor", vars: map[string]any{"sort": byN, "after": "bm90IGEgY3Vyc29y"}, reason: "malformed cursor"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := run(t, s, sortedQuery, tc.vars)
			if diff := cmp.Diff([]string{CodeBadUserInput}, codes(res)); diff != "" {
				t.Fatalf("codes (-want +got):\n%s\n%s", diff, mustJSON(t, res))
			}
			if msg := res.Errors[0].Message; !strings.Contains(msg, tc.reason) {
				t.Errorf("message %q does not say %q", msg, tc.reason)
			}
		})
	}
	// The same filter and sort, spelled with the default order, continue.
	after := sortedCursor(byN, map[string]any{"clusters": []any{"c1"}})
	res := run(t, s, sortedQuery, map[string]any{"sort": []any{map[string]any{"field": "data.n", "order": "ASC"}},
		"filter": map[string]any{"clusters": []any{"c1"}}, "after": after, "first": 1})
	if len(res.Errors) > 0 {
		t.Errorf("the same filter and sort: %v", res.Errors)
	}
}
