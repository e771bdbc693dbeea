package planner_test

import (
	"fmt"
	"github.com/fleetcache/fleetcache/internal/indextest"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
	"github.com/fleetcache/fleetcache/pkg/index/views"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
)

// fieldFleet is Pods of two clusters with phases, nodes and images; the
// comment lists them in index order (the ConfigMap sorts before p3).
func fieldFleet() []*object.Object {
	return []*object.Object{
		indextest.Obj("c1", indextest.PodType, "a", "p1", indextest.WithLabels("app", "web"), indextest.WithPodStatus("Running", "node-1", 0, "nginx")),         // c1/pods/a/p1
		indextest.Obj("c1", indextest.PodType, "a", "p2", indextest.WithLabels("app", "web"), indextest.WithPodStatus("Failed", "node-2", 5, "nginx", "envoy")), // c1/pods/a/p2
		indextest.Obj("c1", indextest.PodType, "b", "p3", indextest.WithLabels("app", "db"), indextest.WithPodStatus("Running", "node-1", 2, "redis")),          // c1/pods/b/p3
		indextest.Obj("c1", indextest.ConfigMapType, "b", "cm"),                                                                                                  // c1/configmaps/b/cm: no JSON at all
		indextest.Obj("c2", indextest.PodType, "a", "p4", indextest.WithLabels("app", "web"), indextest.WithPodStatus("Pending", "", 0, "nginx")),                // c2/pods/a/p4
		indextest.Obj("c2", indextest.PodType, "a", "p5", indextest.WithLabels("app", "web"), indextest.WithPodStatus("Running", "node-9", 7, "envoy", "nginx")), // c2/pods/a/p5
	}
}

func TestFieldSelector(t *testing.T) {
	const (
		p1 = "c1/pods/a/p1"
		p2 = "c1/pods/a/p2"
		p3 = "c1/pods/b/p3"
		cm = "c1/configmaps/b/cm"
		p4 = "c2/pods/a/p4"
		p5 = "c2/pods/a/p5"
	)
	ix := index.New(index.Options{})
	for _, o := range fieldFleet() {
		ix.Upsert(o)
	}
	tests := []struct {
		name string
		f    planner.Filter
		want []string
	}{
		{"equals", planner.Filter{Fields: indextest.MustFields(t, "status.phase=Running")}, []string{p1, p3, p5}},
		{"not equals holds for the absent", planner.Filter{Fields: indextest.MustFields(t, "status.phase!=Running")}, []string{p2, cm, p4}},
		{"in", planner.Filter{Fields: indextest.MustFields(t, "spec.nodeName in (node-1,node-9)")}, []string{p1, p3, p5}},
		{"notin", planner.Filter{Fields: indextest.MustFields(t, "spec.nodeName notin (node-1,node-9)")}, []string{p2, cm, p4}},
		{"exists", planner.Filter{Fields: indextest.MustFields(t, "status.phase")}, []string{p1, p2, p3, p4, p5}},
		{"absent", planner.Filter{Fields: indextest.MustFields(t, "!status.phase")}, []string{cm}},
		{"greater", planner.Filter{Fields: indextest.MustFields(t, "status.restarts>4")}, []string{p2, p5}},
		{"less", planner.Filter{Fields: indextest.MustFields(t, "status.restarts<1")}, []string{p1, p4}},
		{"some element", planner.Filter{Fields: indextest.MustFields(t, "spec.containers[].image=envoy")}, []string{p2, p5}},
		{"no element", planner.Filter{Fields: indextest.MustFields(t, "spec.containers[].image!=envoy")}, []string{p1, cm, p3, p4}},
		{"cluster", planner.Filter{Fields: indextest.MustFields(t, "cluster=c2")}, []string{p4, p5}},
		{"cluster and clusters", planner.Filter{Clusters: []string{"c1"}, Fields: indextest.MustFields(t, "cluster in (c2)")}, nil},
		{"cluster notin", planner.Filter{Fields: indextest.MustFields(t, "cluster notin (c1)")}, []string{p4, p5}},
		{"with labels and namespaces", planner.Filter{Namespaces: []string{"a"}, Selector: indextest.MustSelector(t, "app=web"),
			Fields: indextest.MustFields(t, "status.phase=Running")}, []string{p1, p5}},
		{"with kinds", planner.Filter{Kinds: []string{"ConfigMap"}, Fields: indextest.MustFields(t, "status.phase=Running")}, nil},
		{"all must hold", planner.Filter{Fields: indextest.MustFields(t, "status.phase=Running,spec.containers[].image=nginx,cluster=c1")}, []string{p1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, indextest.Keys(planner.List(ix, tt.f, nil, 0).Objects), indextest.CmpSorted[1]); diff != "" {
				t.Errorf("List (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, indextest.Keys(indextest.ListAll(t, ix, tt.f, 1, nil)), indextest.CmpSorted[1]); diff != "" {
				t.Errorf("pages of 1 (-want +got):\n%s", diff)
			}
			if got := planner.Count(ix, tt.f); got != len(tt.want) {
				t.Errorf("Count = %d, want %d", got, len(tt.want))
			}
			// Split by cluster, as authorization does.
			fs := []planner.Filter{tt.f, tt.f}
			fs[0].Clusters, fs[1].Clusters = []string{"c1"}, []string{"c2"}
			if tt.f.Clusters != nil {
				fs = fs[:1]
			}
			if got := indextest.Keys(planner.ListUnion(ix, fs, nil, 0).Objects); len(got) != len(tt.want) {
				t.Errorf("ListUnion = %v, want %v", got, tt.want)
			}
			if got := planner.CountUnion(ix, fs); got != len(tt.want) {
				t.Errorf("CountUnion = %d, want %d", got, len(tt.want))
			}
			m := planner.NewMatcher(tt.f)
			var matched []string
			for _, o := range fieldFleet() {
				if m.Matches(o) {
					matched = append(matched, o.Key().String())
				}
			}
			if diff := cmp.Diff(tt.want, matched, indextest.CmpSorted); diff != "" {
				t.Errorf("Matcher (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFieldSelectorFacets(t *testing.T) {
	ix := index.New(index.Options{})
	for _, o := range fieldFleet() {
		ix.Upsert(o)
	}
	f := planner.Filter{Fields: indextest.MustFields(t, "status.phase=Running")}
	if diff := cmp.Diff([]views.Facet{{Value: "c1", Count: 2}, {Value: "c2", Count: 1}}, views.Facets(ix, f, views.FacetBy{Key: views.FacetCluster})); diff != "" {
		t.Errorf("by cluster (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]views.Facet{{Value: "a", Count: 2}, {Value: "b", Count: 1}}, views.Facets(ix, f, views.FacetBy{Key: views.FacetNamespace})); diff != "" {
		t.Errorf("by namespace (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]views.Facet{{Value: "web", Count: 2}, {Value: "db", Count: 1}}, views.Facets(ix, f, views.FacetBy{Key: views.FacetLabel, Label: "app"})); diff != "" {
		t.Errorf("by label (-want +got):\n%s", diff)
	}
}

// TestFieldSelectorVisitsCandidatesOnly checks with the visit counter that
// a field selector reads only the objects the other constraints leave, and
// that requirements on the path cluster narrow to the clusters' ranges:
// without an index on the path (seen), and with one (seenIndexed), where
// the posting of the value is the candidates.
func TestFieldSelectorVisitsCandidatesOnly(t *testing.T) {
	indexed, ix := index.New(index.Options{}), index.New(indextest.Unindexed())
	for c := range 4 {
		for ns := range 4 {
			for i := range 100 {
				o := indextest.Obj(fmt.Sprintf("c%d", c), indextest.PodType, fmt.Sprintf("ns-%d", ns), fmt.Sprintf("p-%03d", i),
					indextest.WithLabels("app", fmt.Sprintf("app-%d", i%10)),
					indextest.WithPodStatus([]string{"Running", "Failed"}[i%2], "node-1", i%7, "nginx"))
				ix.Upsert(o)
				indexed.Upsert(o)
			}
		}
	}
	tests := []struct {
		name                    string
		f                       planner.Filter
		want, seen, seenIndexed int
	}{
		{"whole index", planner.Filter{Fields: indextest.MustFields(t, "status.phase=Failed")}, 800, 1600, 800},
		{"cluster path", planner.Filter{Fields: indextest.MustFields(t, "cluster=c2,status.phase=Failed")}, 200, 400, 200},
		{"cluster path in", planner.Filter{Fields: indextest.MustFields(t, "cluster in (c0,c3,c9),status.phase=Failed")}, 400, 800, 400},
		{"namespace", planner.Filter{Clusters: []string{"c1"}, Namespaces: []string{"ns-2"}, Fields: indextest.MustFields(t, "status.phase=Failed")}, 50, 100, 50},
		{"label", planner.Filter{Selector: indextest.MustSelector(t, "app=app-3"), Fields: indextest.MustFields(t, "status.phase=Failed")}, 160, 160, 160},
		{"not equals", planner.Filter{Fields: indextest.MustFields(t, "status.phase!=Failed")}, 800, 1600, 1600},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, c := range []struct {
				ix   *index.Index
				seen int
			}{{ix, tt.seen}, {indexed, tt.seenIndexed}} {
				before := c.ix.Scanned()
				got := len(planner.List(c.ix, tt.f, nil, 0).Objects)
				if seen := int(c.ix.Scanned() - before); got != tt.want || seen != c.seen {
					t.Errorf("indexed %v: %d objects from %d visited, want %d from %d", c.ix == indexed, got, seen, tt.want, c.seen)
				}
			}
		})
	}
}

// TestFieldSelectorPaging: pages of a field selector, read while objects
// start and stop matching, return every object that matches throughout
// exactly once.
func TestFieldSelectorPaging(t *testing.T) {
	ix := index.New(index.Options{})
	for i := range 200 {
		ix.Upsert(indextest.Obj("c1", indextest.PodType, "ns", fmt.Sprintf("p-%03d", i), indextest.WithPodStatus("Running", "n", 0, "nginx")))
	}
	f := planner.Filter{Fields: indextest.MustFields(t, "status.phase=Running")}
	seen := map[string]int{}
	var after *object.Position
	for page := 0; ; page++ {
		p := planner.List(ix, f, after, 10)
		for _, o := range p.Objects {
			seen[o.Name]++
		}
		// Objects with an odd number flip between Failed and Running.
		for i := 1; i < 200; i += 2 {
			phase := []string{"Failed", "Running"}[page%2]
			ix.Upsert(indextest.Obj("c1", indextest.PodType, "ns", fmt.Sprintf("p-%03d", i), indextest.WithRV(fmt.Sprint(page+2)), indextest.WithPodStatus(phase, "n", 0, "nginx")))
		}
		if !p.More {
			break
		}
		pos := p.Objects[len(p.Objects)-1].Position()
		after = &pos
	}
	for i := 0; i < 200; i += 2 {
		if n := seen[fmt.Sprintf("p-%03d", i)]; n != 1 {
			t.Errorf("p-%03d returned %d times, want once", i, n)
		}
	}
	for name, n := range seen {
		if n > 1 {
			t.Errorf("%s returned %d times", name, n)
		}
	}
}

// TestFacetsByField counts objects per value at a path: each distinct
// value once per object across an array, numbers in their shortest form,
// with every filter, and over disjoint filters as authorization builds.
func TestFacetsByField(t *testing.T) {
	ix := index.New(index.Options{})
	for _, o := range fieldFleet() {
		ix.Upsert(o)
	}
	// Two containers with the same image count once for the object; 3.0
	// and 3 are the same number.
	ix.Upsert(indextest.Obj("c2", indextest.PodType, "b", "p6", indextest.WithRaw(`{"spec":{"containers":[{"image":"nginx"},{"image":"nginx"},{"image":"redis"}]},`+
		`"status":{"phase":"Running","restarts":3.0,"ready":true,"conditions":[{"type":"Ready"}]}}`)))
	ix.Upsert(indextest.Obj("c2", indextest.PodType, "b", "p7", indextest.WithRaw(`{"status":{"phase":null,"restarts":3,"ready":false,"big":123456789}}`)))
	by := func(path string) views.FacetBy {
		return views.FacetBy{Key: views.FacetField, Field: fieldpath.MustParse(path)}
	}
	tests := []struct {
		name   string
		filter planner.Filter
		by     views.FacetBy
		want   []views.Facet
	}{
		{"phase", planner.Filter{}, by("status.phase"), []views.Facet{{Value: "Running", Count: 4}, {Value: "Failed", Count: 1}, {Value: "Pending", Count: 1}}},
		{"images, once per object", planner.Filter{}, by("spec.containers[].image"), []views.Facet{{Value: "nginx", Count: 5}, {Value: "envoy", Count: 2}, {Value: "redis", Count: 2}}},
		{"numbers", planner.Filter{Clusters: []string{"c2"}}, by("status.restarts"), []views.Facet{{Value: "3", Count: 2}, {Value: "0", Count: 1}, {Value: "7", Count: 1}}},
		{"large integers", planner.Filter{}, by("status.big"), []views.Facet{{Value: "123456789", Count: 1}}},
		{"booleans", planner.Filter{}, by("status.ready"), []views.Facet{{Value: "false", Count: 1}, {Value: "true", Count: 1}}},
		{"objects and arrays are not values", planner.Filter{}, by("status.conditions"), []views.Facet{}},
		{"cluster", planner.Filter{Kinds: []string{"Pod"}}, by("cluster"), []views.Facet{{Value: "c2", Count: 4}, {Value: "c1", Count: 3}}},
		{"with a field selector", planner.Filter{Fields: indextest.MustFields(t, "status.phase=Running")}, by("spec.nodeName"), []views.Facet{{Value: "node-1", Count: 2}, {Value: "node-9", Count: 1}}},
		{"with labels and namespaces", planner.Filter{Namespaces: []string{"a"}, Selector: indextest.MustSelector(t, "app=web")}, by("status.phase"),
			[]views.Facet{{Value: "Running", Count: 2}, {Value: "Failed", Count: 1}, {Value: "Pending", Count: 1}}},
		{"nothing matches", planner.Filter{Clusters: []string{"c9"}}, by("status.phase"), []views.Facet{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, views.Facets(ix, tt.filter, tt.by)); diff != "" {
				t.Errorf("Facets (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("union", func(t *testing.T) {
		// What a caller who may see namespace a of c1 and all of c2 sees.
		union := []planner.Filter{{Clusters: []string{"c1"}, Namespaces: []string{"a"}}, {Clusters: []string{"c2"}}}
		want := []views.Facet{{Value: "Running", Count: 3}, {Value: "Failed", Count: 1}, {Value: "Pending", Count: 1}}
		if diff := cmp.Diff(want, views.FacetsUnion(ix, union, by("status.phase"))); diff != "" {
			t.Errorf("FacetsUnion (-want +got):\n%s", diff)
		}
	})
}
