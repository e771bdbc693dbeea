package views_test

import (
	"fmt"
	"github.com/fleetcache/fleetcache/internal/indextest"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
	"github.com/fleetcache/fleetcache/pkg/index/views"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestUnion checks ListUnion, CountUnion and FacetsUnion against List of
// everything filtered by the union's predicate, page by page, and Contents.
func TestUnion(t *testing.T) {
	ix := index.New(index.Options{})
	for _, c := range []string{"c1", "c2", "c3"} {
		for _, ns := range []string{"a", "b", "c"} {
			for i := range 5 {
				ix.Upsert(indextest.Obj(c, indextest.PodType, ns, fmt.Sprintf("p%d", i), indextest.WithLabels("app", fmt.Sprint(i%2))))
				ix.Upsert(indextest.Obj(c, indextest.ConfigMapType, ns, fmt.Sprintf("m%d", i)))
			}
		}
		ix.Upsert(indextest.Obj(c, indextest.NodeType, "", "n1"))
	}
	union := []planner.Filter{
		{Clusters: []string{"c1"}, Namespaces: []string{"a", "c"}, Resources: []string{"configmaps"}},
		{Clusters: []string{"c1"}, Resources: []string{"pods", "nodes"}},
		{Clusters: []string{"c3"}, Namespaces: []string{"b"}, Resources: []string{"pods"}},
	}
	matchers := make([]*planner.Matcher, len(union))
	for i, f := range union {
		matchers[i] = planner.NewMatcher(f)
	}
	var want []string
	for _, o := range planner.List(ix, planner.Filter{}, nil, 0).Objects {
		for _, m := range matchers {
			if m.Matches(o) {
				want = append(want, o.Key().String())
				break
			}
		}
	}
	var got []string
	var after *object.Position
	for pages := 0; ; pages++ {
		p := planner.ListUnion(ix, union, after, 4)
		got = append(got, indextest.Keys(p.Objects)...)
		if !p.More {
			break
		}
		pos := p.Objects[len(p.Objects)-1].Position()
		after = &pos
		if pages > 100 {
			t.Fatal("paging does not end")
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ListUnion pages (-want +got):\n%s", diff)
	}
	if n := planner.CountUnion(ix, union); n != len(want) {
		t.Errorf("CountUnion = %d, want %d", n, len(want))
	}
	wantFacets := []views.Facet{{Value: "c1", Count: 26}, {Value: "c3", Count: 5}}
	if diff := cmp.Diff(wantFacets, views.FacetsUnion(ix, union, views.FacetBy{Key: views.FacetCluster})); diff != "" {
		t.Errorf("FacetsUnion (-want +got):\n%s", diff)
	}
	if n := planner.CountUnion(ix, nil); n != 0 || len(planner.ListUnion(ix, nil, nil, 0).Objects) != 0 {
		t.Errorf("an empty union selects %d objects, want none", n)
	}

	gotContents := views.ContentsOf(ix, planner.Filter{Clusters: []string{"c2", "zz"}, Kinds: []string{"Pod", "Node"}, Namespaces: []string{"b"}})
	wantContents := []views.Contents{{Cluster: "c2", Resources: []views.ResourceContents{{Resource: "nodes"}, {Resource: "pods", Namespaced: true}}, Namespaces: []string{"b"}}}
	if diff := cmp.Diff(wantContents, gotContents); diff != "" {
		t.Errorf("Contents (-want +got):\n%s", diff)
	}
	if got := views.ContentsOf(ix, planner.Filter{Clusters: []string{"c1"}}); len(got) != 1 || got[0].Namespaces != nil || len(got[0].Resources) != 3 {
		t.Errorf("Contents without namespaces in the filter: %+v, want 3 resources and nil namespaces", got)
	}
	if diff := cmp.Diff([]string{"a", "b", "c"}, ix.Namespaces("c1")); diff != "" {
		t.Errorf("Namespaces (-want +got):\n%s", diff)
	}
}
