package planner_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetcache/fleetcache/internal/indextest"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
	"github.com/fleetcache/fleetcache/pkg/index/search"
	"github.com/fleetcache/fleetcache/pkg/index/views"
)

// TestCompressedAgreesWithPlain holds the same random objects twice, in an
// index whose types compress their bodies and in one whose types do not,
// and checks that every read that looks into the bodies (field selectors
// on indexed and unindexed paths, facets, sorts, search, Matchers) answers
// the same, and that every object reads back byte for byte.
func TestCompressedAgreesWithPlain(t *testing.T) {
	r := rand.New(rand.NewPCG(16, 1))
	plainTypes := []*object.Type{indextest.PodType, indextest.PodType, indextest.ConfigMapType, indextest.DeploymentType}
	twins := map[*object.Type]*object.Type{}
	for _, ty := range plainTypes {
		if twins[ty] == nil {
			twins[ty] = indextest.CompressedTwin(ty, r)
		}
	}
	plain, packed := index.New(indextest.FieldIndexOptions()), index.New(indextest.FieldIndexOptions())
	compressed := 0
	for i := range 600 {
		ty := plainTypes[r.IntN(len(plainTypes))]
		cluster, ns, name := fmt.Sprintf("c%d", 1+r.IntN(2)), []string{"a", "b"}[r.IntN(2)], fmt.Sprintf("o%d", r.IntN(150))
		raw := indextest.RandomFieldRaw(r)
		if i%3 == 0 {
			// Search reads annotations from the bytes.
			raw = `{"metadata":{"annotations":{"team":"storage-` + fmt.Sprint(r.IntN(3)) + `"}},` + raw[1:]
		}
		app, rv := []string{"web", "db"}[r.IntN(2)], fmt.Sprint(r.Int())
		a := indextest.Obj(cluster, ty, ns, name, indextest.WithLabels("app", app), indextest.WithRaw(raw), indextest.WithRV(rv))
		b := indextest.Obj(cluster, twins[ty], ns, name, indextest.WithLabels("app", app), indextest.WithRaw(raw), indextest.WithRV(rv))
		if !bytes.Equal(b.Raw(), []byte(raw)) {
			t.Fatalf("object %d reads back\n%s\nwant\n%s", i, b.Raw(), raw)
		}
		if b.Compressed() {
			compressed++
		}
		plain.Upsert(a)
		packed.Upsert(b)
		if r.IntN(10) == 0 {
			k := a.Key()
			plain.Delete(k)
			packed.Delete(k)
		}
	}
	if compressed < 500 {
		t.Fatalf("only %d of 600 bodies are compressed", compressed)
	}
	if err := packed.Verify(); err != nil {
		t.Fatal(err)
	}

	words, err := search.Parse("storage")
	if err != nil {
		t.Fatal(err)
	}
	var filters []planner.Filter
	for _, fs := range []string{"", "status.phase=Running", "status.phase!=Running", "status.n=3", "spec.containers[].image in (nginx,redis)",
		"spec.template.spec.containers[].image=envoy", "spec.nodeName=n1,status.phase in (Failed,3)"} {
		for _, f := range []planner.Filter{{}, {Kinds: []string{"Pod"}}, {Resources: []string{"configmaps"}}, {Namespaces: []string{"a"}},
			{Search: words}} {
			f.Fields = indextest.MustFields(t, fs)
			filters = append(filters, f)
		}
	}
	sorts := [][]planner.SortKey{indextest.SortKeys(t, "status.phase"), indextest.SortKeys(t, "-status.n", "spec.nodeName"), indextest.SortKeys(t, "spec.unschedulable")}
	// Under -short, every fourth filter.
	for i := 0; i < len(filters); i += indextest.Scale(1, 4) {
		f := filters[i]
		name := fmt.Sprintf("%+v", f)
		want := indextest.Keys(planner.List(plain, f, nil, 0).Objects)
		if diff := cmp.Diff(want, indextest.Keys(planner.List(packed, f, nil, 0).Objects)); diff != "" {
			t.Errorf("%s: List (-plain +compressed):\n%s", name, diff)
		}
		if diff := cmp.Diff(want, indextest.Keys(indextest.ListAll(t, packed, f, 7, nil))); diff != "" {
			t.Errorf("%s: pages of 7 (-plain +compressed):\n%s", name, diff)
		}
		if a, b := planner.Count(plain, f), planner.Count(packed, f); a != b {
			t.Errorf("%s: Count = %d compressed, %d plain", name, b, a)
		}
		m := planner.NewMatcher(f)
		var matched []*object.Object
		for _, o := range planner.List(packed, planner.Filter{}, nil, 0).Objects {
			if m.Matches(o) {
				matched = append(matched, o)
			}
		}
		if diff := cmp.Diff(want, indextest.Keys(matched)); diff != "" {
			t.Errorf("%s: planner.Matcher (-plain +compressed):\n%s", name, diff)
		}
		for _, p := range facetPathsOf(t) {
			by := views.FacetBy{Key: views.FacetField, Field: p}
			if diff := cmp.Diff(views.Facets(plain, f, by), views.Facets(packed, f, by)); diff != "" {
				t.Errorf("%s: Facets by %s (-plain +compressed):\n%s", name, p, diff)
			}
		}
		for _, ks := range sorts {
			// Pages of 5 at full strength; under -short fewer, longer pages.
			page := indextest.Scale(5, 40)
			a := indextest.Keys(indextest.ListSortedAll(t, plain, f, ks, page, nil))
			if diff := cmp.Diff(a, indextest.Keys(indextest.ListSortedAll(t, packed, f, ks, page, nil))); diff != "" {
				t.Errorf("%s: sorted by %v (-plain +compressed):\n%s", name, ks, diff)
			}
			// Goroutines that read compressed candidates at once each
			// decode into their own buffers.
			if diff := cmp.Diff(indextest.Keys(indextest.BruteSorted(plain, f, ks)), indextest.Keys(planner.TopShared(packed, f, ks))); diff != "" {
				t.Errorf("%s: sorted by %v, read by three goroutines (-plain +compressed):\n%s", name, ks, diff)
			}
		}
	}
}

func facetPathsOf(t *testing.T) []fieldpath.Path {
	t.Helper()
	return indextest.Paths("status.phase", "status.n", "spec.containers[].image", "spec.nodeName")
}
