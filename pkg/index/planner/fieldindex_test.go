package planner_test

import (
	"fmt"
	"github.com/fleetcache/fleetcache/internal/indextest"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
	"github.com/fleetcache/fleetcache/pkg/index/views"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
)

// TestFieldIndexAgreesWithBytes applies random changes (upserts that move
// objects between values, deletes, removed clusters) to an index with
// indexes on paths and to one without, and checks after each round that
// List (whole and in pages), Count and Facets answer the same for many
// filters, that List matches a brute-force Matcher, and that every posting
// holds exactly the objects with its value.
func TestFieldIndexAgreesWithBytes(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 15))
	indexed, plain := index.New(indextest.FieldIndexOptions()), index.New(indextest.Unindexed())
	model := map[object.Key]*object.Object{}
	types := []*object.Type{indextest.PodType, indextest.PodType, indextest.PodType, indextest.FooPodsType, indextest.NodeType, indextest.ConfigMapType, indextest.DeploymentType}
	upsert := func() {
		ty := types[r.IntN(len(types))]
		ns := []string{"a", "b"}[r.IntN(2)]
		if !ty.Namespaced {
			ns = ""
		}
		o := indextest.Obj(fmt.Sprintf("c%d", 1+r.IntN(2)), ty, ns, fmt.Sprintf("o%d", r.IntN(40)),
			indextest.WithLabels("app", []string{"web", "db"}[r.IntN(2)]), indextest.WithRaw(indextest.RandomFieldRaw(r)), indextest.WithRV(fmt.Sprint(r.Int())))
		indexed.Upsert(o)
		plain.Upsert(o)
		model[o.Key()] = o
	}

	sel := func(s string) labels.Selector { return indextest.MustSelector(t, s) }
	var filters []planner.Filter
	for _, fs := range []string{
		"", "status.phase=Running", "status.phase in (Running,Failed)", "status.phase=3", "status.phase=3.0", "status.phase=true",
		"status.n=0", "status.n=-0", "status.n in (3,true)", "status.n=1e21", "status.n=1e+21", "status.n=03",
		"spec.containers[].image=nginx", "spec.containers[].image in (nginx,redis)", "spec.containers[].image in (nginx,redis),status.phase=Running",
		"spec.nodeName=n1,status.phase=Running", "spec.unschedulable=true", "status.phase!=Running", "status.phase",
		"spec.template.spec.containers[].image in (envoy,redis)", "cluster=c2,status.phase=Failed", "status.phase=Nothing",
	} {
		for _, f := range []planner.Filter{
			{},
			{Kinds: []string{"Pod"}},
			{Kinds: []string{"Pod.foo.example.com"}},
			{Kinds: []string{"Node", "Pod"}},
			{Resources: []string{"pods"}},
			{Resources: []string{"pods", "configmaps"}},
			{Resources: []string{"nodes"}, Clusters: []string{"c1"}},
			{Resources: []string{"deployments.apps"}},
			{Resources: []string{"pods"}, Namespaces: []string{"a"}},
			{Kinds: []string{"Pod"}, Clusters: []string{"c2"}, Selector: sel("app=web")},
			{Namespaces: []string{"a", ""}},
		} {
			f.Fields = indextest.MustFields(t, fs)
			filters = append(filters, f)
		}
	}
	facetPaths := indextest.Paths("status.phase", "status.n", "spec.containers[].image", "spec.unschedulable", "spec.nodeName",
		"spec.template.spec.containers[].image")

	paging := int64(0) // visits of the pages, which only the indexed index reads
	for round := range indextest.Scale(12, 3) {
		for range 60 {
			switch n := r.IntN(20); {
			case n < 15:
				upsert()
			case n < 19:
				for k := range model {
					indexed.Delete(k)
					plain.Delete(k)
					delete(model, k)
					break
				}
			default:
				c := fmt.Sprintf("c%d", 1+r.IntN(2))
				if a, b := indexed.RemoveCluster(c), plain.RemoveCluster(c); a != b {
					t.Fatalf("RemoveCluster removed %d and %d", a, b)
				}
				maps.DeleteFunc(model, func(k object.Key, _ *object.Object) bool { return k.Cluster == c })
			}
		}
		if err := indexed.Verify(); err != nil {
			t.Fatalf("round %d: %s", round, err)
		}
		for _, f := range filters {
			var matched []*object.Object
			m := planner.NewMatcher(f)
			for _, o := range model {
				if m.Matches(o) {
					matched = append(matched, o)
				}
			}
			slices.SortFunc(matched, object.CompareObjects)
			want := indextest.Keys(matched)
			name := fmt.Sprintf("round %d, %+v", round, f)
			if diff := cmp.Diff(want, indextest.Keys(planner.List(indexed, f, nil, 0).Objects), indextest.CmpSorted[1]); diff != "" {
				t.Errorf("%s: List (-brute force +indexed):\n%s", name, diff)
			}
			if diff := cmp.Diff(want, indextest.Keys(planner.List(plain, f, nil, 0).Objects), indextest.CmpSorted[1]); diff != "" {
				t.Errorf("%s: List (-brute force +unindexed):\n%s", name, diff)
			}
			if got, gotPlain := planner.Count(indexed, f), planner.Count(plain, f); got != len(want) || gotPlain != len(want) {
				t.Errorf("%s: Count = %d, unindexed %d, want %d", name, got, gotPlain, len(want))
			}
			before := indexed.Scanned()
			if diff := cmp.Diff(want, indextest.Keys(indextest.ListAll(t, indexed, f, 3, nil)), indextest.CmpSorted[1]); diff != "" {
				t.Errorf("%s: pages of 3 (-brute force +indexed):\n%s", name, diff)
			}
			paging += indexed.Scanned() - before
			for _, p := range facetPaths {
				by := views.FacetBy{Key: views.FacetField, Field: p}
				if diff := cmp.Diff(views.Facets(plain, f, by), views.Facets(indexed, f, by)); diff != "" {
					t.Errorf("%s: Facets by %s (-bytes +indexed):\n%s", name, p, diff)
				}
			}
		}
	}
	// The comparison means something only if the indexes served reads.
	a, b := indexed.Scanned()-paging, plain.Scanned()
	if 10*a > 9*b {
		t.Errorf("the indexed reads visited %d objects, the others %d: the indexes were hardly used", a, b)
	}
	t.Logf("visited %d objects with the indexes, %d without", a, b)
}

// TestFieldIndexVisits checks with the visit counter that a requirement on
// an indexed path visits only its postings, that Count and Facets by the
// path read the postings' sizes, and that the indexes narrow only when
// every resource the filter can match has the path indexed.
func TestFieldIndexVisits(t *testing.T) {
	ix := index.New(index.Options{Indexes: map[string][]fieldpath.Path{"pods.foo.example.com": nil}})
	phases := []string{"Running", "Running", "Running", "Failed", "Pending"}
	for c := range 2 {
		for i := range 100 {
			ix.Upsert(indextest.Obj(fmt.Sprintf("c%d", c), indextest.PodType, fmt.Sprintf("ns-%d", i%4), fmt.Sprintf("p-%03d", i),
				indextest.WithPodStatus(phases[i%5], fmt.Sprintf("node-%d", i%10), 0, "nginx", []string{"envoy", "nginx"}[i%2])))
		}
	}
	// Pods whose phase is not indexed, and nodes, which have no phase.
	for i := range 10 {
		ix.Upsert(indextest.Obj("c0", indextest.FooPodsType, "ns-0", fmt.Sprintf("f-%d", i), indextest.WithPodStatus("Failed", "node-0", 0, "nginx")))
		ix.Upsert(indextest.Obj("c0", indextest.NodeType, "", fmt.Sprintf("node-%d", i), indextest.WithRaw(`{"spec":{"unschedulable":true}}`)))
	}
	tests := []struct {
		name        string
		f           planner.Filter
		want, visit int
	}{
		{"equals", planner.Filter{Resources: []string{"pods"}, Fields: indextest.MustFields(t, "status.phase=Failed")}, 40, 40},
		{"in", planner.Filter{Kinds: []string{"Pod"}, Resources: []string{"pods"}, Fields: indextest.MustFields(t, "status.phase in (Failed,Pending)")}, 80, 80},
		{"array: each object once (the resource is smaller)", planner.Filter{Resources: []string{"pods"}, Fields: indextest.MustFields(t, "spec.containers[].image in (nginx,envoy)")}, 200, 200},
		{"namespace", planner.Filter{Resources: []string{"pods"}, Namespaces: []string{"ns-1"}, Fields: indextest.MustFields(t, "status.phase=Failed")}, 10, 10},
		{"two requirements: the smaller posting", planner.Filter{Resources: []string{"pods"}, Fields: indextest.MustFields(t, "spec.nodeName=node-3,status.phase=Failed")}, 20, 20},
		{"a type without the index: read every object", planner.Filter{Kinds: []string{"Pod"}, Fields: indextest.MustFields(t, "status.phase=Failed")}, 50, 210},
		{"resources the kinds exclude do not count", planner.Filter{Kinds: []string{"Pod"}, Resources: []string{"pods", "nodes"}, Fields: indextest.MustFields(t, "status.phase=Failed")}, 40, 40},
		{"every type of the index", planner.Filter{Fields: indextest.MustFields(t, "status.phase=Failed")}, 50, 220},
		{"a value no object has", planner.Filter{Resources: []string{"pods"}, Fields: indextest.MustFields(t, "status.phase=Unknown")}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := ix.Scanned()
			got := len(planner.List(ix, tt.f, nil, 0).Objects)
			if seen := int(ix.Scanned() - before); got != tt.want || seen != tt.visit {
				t.Errorf("List: %d objects from %d visited, want %d from %d", got, seen, tt.want, tt.visit)
			}
		})
	}

	counted := []struct {
		name string
		f    planner.Filter
		want int
	}{
		{"equals", planner.Filter{Resources: []string{"pods"}, Fields: indextest.MustFields(t, "status.phase=Failed")}, 40},
		{"in", planner.Filter{Kinds: []string{"Pod"}, Resources: []string{"pods"}, Fields: indextest.MustFields(t, "status.phase in (Failed,Pending)")}, 80},
	}
	for _, tt := range counted {
		t.Run("count "+tt.name, func(t *testing.T) {
			before := ix.Scanned()
			if got, seen := planner.Count(ix, tt.f), ix.Scanned()-before; got != tt.want || seen != 0 {
				t.Errorf("Count = %d from %d visited, want %d from none", got, seen, tt.want)
			}
		})
	}

	// Facets count each value's posting against the ids of the matching
	// objects when the postings answer the filter: no object is read.
	facets := []struct {
		name  string
		f     planner.Filter
		want  []views.Facet
		visit int
	}{
		{"postings' sizes", planner.Filter{Resources: []string{"pods"}}, []views.Facet{{Value: "Running", Count: 120}, {Value: "Failed", Count: 40}, {Value: "Pending", Count: 40}}, 0},
		{"in a scope", planner.Filter{Kinds: []string{"Pod"}, Resources: []string{"pods"}, Clusters: []string{"c1"}, Namespaces: []string{"ns-0"}},
			[]views.Facet{{Value: "Running", Count: 15}, {Value: "Failed", Count: 5}, {Value: "Pending", Count: 5}}, 0},
		{"a type without the index", planner.Filter{Kinds: []string{"Pod"}}, []views.Facet{{Value: "Running", Count: 120}, {Value: "Failed", Count: 50}, {Value: "Pending", Count: 40}}, 210},
		{"another constraint", planner.Filter{Resources: []string{"pods"}, Fields: indextest.MustFields(t, "spec.nodeName=node-3")},
			[]views.Facet{{Value: "Failed", Count: 20}}, 0},
	}
	for _, tt := range facets {
		t.Run("facets "+tt.name, func(t *testing.T) {
			before := ix.Scanned()
			got := views.Facets(ix, tt.f, views.FacetBy{Key: views.FacetField, Field: fieldpath.MustParse("status.phase")})
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Facets (-want +got):\n%s", diff)
			}
			if seen := int(ix.Scanned() - before); seen != tt.visit {
				t.Errorf("visited %d, want %d", seen, tt.visit)
			}
		})
	}
}

// TestFieldIndexChanges follows one Pod's values through changes: a
// modification moves it between postings, an array keeps it once per
// distinct value, a new kind name in the resource is counted, and deletes
// and RemoveCluster empty the postings.
func TestFieldIndexChanges(t *testing.T) {
	ix := index.New(index.Options{})
	postings := func(path string) map[string][]string {
		out := map[string][]string{}
		ix.Read(func(r index.Reader) {
			r.FieldIndex("pods", path).Values().Each(func(v string, p *index.Posting) {
				p.Each(func(id uint32) bool {
					o := r.Object(id)
					out[v] = append(out[v], o.Key().String()+"@"+o.ResourceVersion)
					return true
				})
				slices.Sort(out[v])
			})
		})
		return out
	}
	p1 := indextest.Obj("c1", indextest.PodType, "a", "p1", indextest.WithPodStatus("Pending", "", 0, "nginx", "nginx", "envoy"))
	ix.Upsert(p1)
	ix.Upsert(indextest.Obj("c2", indextest.PodType, "a", "p2", indextest.WithPodStatus("Running", "n1", 0, "nginx")))
	steps := []struct {
		name          string
		apply         func()
		phase, images map[string][]string
	}{
		{"added", func() {},
			map[string][]string{"Pending": {"c1/pods/a/p1@1"}, "Running": {"c2/pods/a/p2@1"}},
			map[string][]string{"envoy": {"c1/pods/a/p1@1"}, "nginx": {"c1/pods/a/p1@1", "c2/pods/a/p2@1"}}},
		{"phase and images change", func() {
			ix.Upsert(indextest.Modified(p1, "2", indextest.WithPodStatus("Running", "n1", 0, "redis", "envoy")))
		},
			map[string][]string{"Running": {"c1/pods/a/p1@2", "c2/pods/a/p2@1"}},
			map[string][]string{"envoy": {"c1/pods/a/p1@2"}, "nginx": {"c2/pods/a/p2@1"}, "redis": {"c1/pods/a/p1@2"}}},
		{"same values, new version", func() {
			ix.Upsert(indextest.Modified(p1, "3", indextest.WithPodStatus("Running", "n1", 0, "redis", "envoy")))
		},
			map[string][]string{"Running": {"c1/pods/a/p1@3", "c2/pods/a/p2@1"}},
			map[string][]string{"envoy": {"c1/pods/a/p1@3"}, "nginx": {"c2/pods/a/p2@1"}, "redis": {"c1/pods/a/p1@3"}}},
		{"recreated with another UID", func() {
			ix.Upsert(indextest.Modified(p1, "4", indextest.WithUID("new"), indextest.WithPodStatus("Failed", "", 0)))
		},
			map[string][]string{"Failed": {"c1/pods/a/p1@4"}, "Running": {"c2/pods/a/p2@1"}},
			map[string][]string{"nginx": {"c2/pods/a/p2@1"}}},
		{"deleted", func() { ix.Delete(p1.Key()) },
			map[string][]string{"Running": {"c2/pods/a/p2@1"}},
			map[string][]string{"nginx": {"c2/pods/a/p2@1"}}},
		{"cluster removed", func() { ix.RemoveCluster("c2") }, map[string][]string{}, map[string][]string{}},
	}
	for _, st := range steps {
		st.apply()
		if diff := cmp.Diff(st.phase, postings("status.phase"), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: status.phase (-want +got):\n%s", st.name, diff)
		}
		if diff := cmp.Diff(st.images, postings("spec.containers[].image"), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: images (-want +got):\n%s", st.name, diff)
		}
		if err := ix.Verify(); err != nil {
			t.Errorf("%s: %s", st.name, err)
		}
	}
}

// TestIndexedPaths: a configured list replaces the resource's defaults, an
// empty one turns them off, the others keep theirs, and the path cluster
// and repeats are dropped; index.RelationPaths are indexed whatever the
// configuration says.
func TestIndexedPaths(t *testing.T) {
	ix := index.New(index.Options{Indexes: map[string][]fieldpath.Path{
		"pods":    indextest.Paths("spec.nodeName", "cluster", "spec.nodeName", "metadata.annotations[\"a/b\"]"),
		"nodes":   {},
		"widgets": indextest.Paths("spec.size"),
	}})
	str := func(ps []fieldpath.Path) []string {
		out := []string{}
		for _, p := range ps {
			out = append(out, p.String())
		}
		return out
	}
	relations := func(r string, paths ...string) []string {
		return append(paths, str(index.RelationPaths[r])...)
	}
	for r, want := range map[string][]string{
		"pods":             relations("pods", "spec.nodeName", `metadata.annotations["a/b"]`),
		"nodes":            {},
		"widgets":          {"spec.size"},
		"services":         {"spec.type"},
		"deployments.apps": {"spec.template.spec.containers[].image"},
		"configmaps":       {},
	} {
		if diff := cmp.Diff(want, str(ix.IndexedPaths(r))); diff != "" {
			t.Errorf("IndexedPaths(%q) (-want +got):\n%s", r, diff)
		}
	}
	if got := slices.Sorted(maps.Keys(index.DefaultOptions().Indexes)); !slices.Contains(got, "pods") || !slices.Contains(got, "events") {
		t.Errorf("DefaultOptions().Indexes has %v, want pods and events among them", got)
	}
}
