package index

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetcache/fleetcache/pkg/index/compact"
	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
	"github.com/fleetcache/fleetcache/pkg/index/search"
)

// compressedTwin returns a copy of t whose objects' bodies a trained Codec
// compresses: training reads random bodies until the dictionary is built.
func compressedTwin(t *Type, r *rand.Rand) *Type {
	twin := *t
	twin.Codec = compact.NewCodec(t.Resource, 0)
	for !twin.Codec.Trained() {
		twin.Codec.Encode([]byte(randomFieldRaw(r)))
	}
	return &twin
}

// TestCompressedAgreesWithPlain holds the same random objects twice, in an
// index whose types compress their bodies and in one whose types do not,
// and checks that every read that looks into the bodies (field selectors
// on indexed and unindexed paths, facets, sorts, search, Matchers) answers
// the same, and that every object reads back byte for byte.
func TestCompressedAgreesWithPlain(t *testing.T) {
	r := rand.New(rand.NewPCG(16, 1))
	plainTypes := []*Type{podType, podType, cmType, deployType}
	twins := map[*Type]*Type{}
	for _, ty := range plainTypes {
		if twins[ty] == nil {
			twins[ty] = compressedTwin(ty, r)
		}
	}
	plain, packed := New(fieldIndexOptions()), New(fieldIndexOptions())
	compressed := 0
	for i := range 600 {
		ty := plainTypes[r.IntN(len(plainTypes))]
		cluster, ns, name := fmt.Sprintf("c%d", 1+r.IntN(2)), []string{"a", "b"}[r.IntN(2)], fmt.Sprintf("o%d", r.IntN(150))
		raw := randomFieldRaw(r)
		if i%3 == 0 {
			// Search reads annotations from the bytes.
			raw = `{"metadata":{"annotations":{"team":"storage-` + fmt.Sprint(r.IntN(3)) + `"}},` + raw[1:]
		}
		app, rv := []string{"web", "db"}[r.IntN(2)], fmt.Sprint(r.Int())
		a := obj(cluster, ty, ns, name, withLabels("app", app), withRaw(raw), withRV(rv))
		b := obj(cluster, twins[ty], ns, name, withLabels("app", app), withRaw(raw), withRV(rv))
		if !bytes.Equal(b.Raw(), []byte(raw)) {
			t.Fatalf("object %d reads back\n%s\nwant\n%s", i, b.Raw(), raw)
		}
		if b.Compressed() {
			compressed++
			// Status apart, so that status paths decode it alone.
			if got, want := b.body.Split(), int(b.statusAt); got != want || want == 0 {
				t.Fatalf("object %d is stored in parts at %d, its status begins at %d", i, got, want)
			}
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
	if d := packed.checkFieldIndexes(); d != "" {
		t.Fatal(d)
	}
	if d := packed.checkInvariants(); d != "" {
		t.Fatal(d)
	}

	words, err := search.Parse("storage")
	if err != nil {
		t.Fatal(err)
	}
	var filters []Filter
	for _, fs := range []string{"", "status.phase=Running", "status.phase!=Running", "status.n=3", "spec.containers[].image in (nginx,redis)",
		"spec.template.spec.containers[].image=envoy", "spec.nodeName=n1,status.phase in (Failed,3)"} {
		for _, f := range []Filter{{}, {Kinds: []string{"Pod"}}, {Resources: []string{"configmaps"}}, {Namespaces: []string{"a"}},
			{Search: words}} {
			f.Fields = mustFields(t, fs)
			filters = append(filters, f)
		}
	}
	sorts := [][]SortKey{sortKeys(t, "status.phase"), sortKeys(t, "-status.n", "spec.nodeName"), sortKeys(t, "spec.unschedulable")}
	for _, f := range filters {
		name := fmt.Sprintf("%+v", f)
		want := keys(plain.List(f, nil, 0).Objects)
		if diff := cmp.Diff(want, keys(packed.List(f, nil, 0).Objects)); diff != "" {
			t.Errorf("%s: List (-plain +compressed):\n%s", name, diff)
		}
		if diff := cmp.Diff(want, keys(listAll(t, packed, f, 7, nil))); diff != "" {
			t.Errorf("%s: pages of 7 (-plain +compressed):\n%s", name, diff)
		}
		if a, b := plain.Count(f), packed.Count(f); a != b {
			t.Errorf("%s: Count = %d compressed, %d plain", name, b, a)
		}
		m := NewMatcher(f)
		var matched []*Object
		for _, o := range packed.List(Filter{}, nil, 0).Objects {
			if m.Matches(o) {
				matched = append(matched, o)
			}
		}
		if diff := cmp.Diff(want, keys(matched)); diff != "" {
			t.Errorf("%s: Matcher (-plain +compressed):\n%s", name, diff)
		}
		for _, p := range facetPathsOf(t) {
			by := FacetBy{Key: FacetField, Field: p}
			if diff := cmp.Diff(plain.Facets(f, by), packed.Facets(f, by)); diff != "" {
				t.Errorf("%s: Facets by %s (-plain +compressed):\n%s", name, p, diff)
			}
		}
		for _, ks := range sorts {
			a := keys(listSortedAll(t, plain, f, ks, 5, nil))
			if diff := cmp.Diff(a, keys(listSortedAll(t, packed, f, ks, 5, nil))); diff != "" {
				t.Errorf("%s: sorted by %v (-plain +compressed):\n%s", name, ks, diff)
			}
			// Goroutines that read compressed candidates at once each
			// decode into their own buffers.
			if diff := cmp.Diff(keys(bruteSorted(plain, f, ks)), keys(topShared(packed, f, ks))); diff != "" {
				t.Errorf("%s: sorted by %v, read by three goroutines (-plain +compressed):\n%s", name, ks, diff)
			}
		}
	}
}

func facetPathsOf(t *testing.T) []fieldpath.Path {
	t.Helper()
	return paths("status.phase", "status.n", "spec.containers[].image", "spec.nodeName")
}

// TestRawConcurrently reads compressed objects from many goroutines at
// once, more objects than the cache of recent bodies holds, and checks
// every read.
func TestRawConcurrently(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	ty := compressedTwin(podType, r)
	objs := make([]*Object, 600)
	raws := make([]string, len(objs))
	for i := range objs {
		raws[i] = randomFieldRaw(r)
		objs[i] = obj("c1", ty, "ns", fmt.Sprintf("p%d", i), withRaw(raws[i]))
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for n := range 3000 {
				i := (n*7 + g*131) % len(objs)
				if got := string(objs[i].Raw()); got != raws[i] {
					t.Errorf("object %d reads back %s, want %s", i, got, raws[i])
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestProjected: the values of a type's Projected paths, kept beside the
// body, are what the body holds at those paths, for plain and compressed
// bodies, scalars, arrays and absent values; other paths, and objects
// stored without their body, have none.
func TestProjected(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	projected := paths("status.phase", "spec.nodeName", "spec.containers[].image", "status.n", "metadata.name")
	for _, compressed := range []bool{false, true} {
		ty := *podType
		if compressed {
			ty = *compressedTwin(podType, r)
		}
		ty.Projected = projected
		for i := range 300 {
			raw := `{"metadata":{"name":"p` + fmt.Sprint(i) + `"},` + randomFieldRaw(r)[1:]
			o := obj("c1", &ty, "ns", fmt.Sprint("p", i), withRaw(raw))
			for _, p := range projected {
				got, ok := o.Projected(p)
				if want := string(p.AppendJSONIn(nil, fieldpath.Doc{Cluster: "c1", Raw: []byte(raw)})); !ok || string(got) != want {
					t.Fatalf("%s of %s: projected %q (%t), want %s", p, raw, got, ok, want)
				}
			}
			if v, ok := o.Projected(fieldpath.MustParse("spec.unschedulable")); ok {
				t.Fatalf("spec.unschedulable, not projected, has %q", v)
			}
		}
	}

	// The memory budget keeps metadata only: no values beside it either.
	ty := *podType
	ty.Projected = projected
	ix := New(Options{MemoryBudget: 2 * objectOverhead})
	o := obj("c1", &ty, "ns", "p", withRaw(`{"metadata":{"name":"p"},"spec":{"data":"`+strings.Repeat("a", objectOverhead)+`"},"status":{"phase":"Running"}}`))
	ix.Upsert(o)
	if got := ix.Get(o.Key()); got == nil || !got.MetadataOnly() {
		t.Fatalf("a budget of two objects' overhead kept %+v", got)
	}
	if v, ok := ix.Get(o.Key()).Projected(fieldpath.MustParse("status.phase")); ok {
		t.Errorf("a metadata-only object has status.phase %q", v)
	}
}
