package object_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/fleetcache/fleetcache/internal/indextest"
	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
	"github.com/fleetcache/fleetcache/pkg/index/object"
)

// TestStatusApart checks that a compressed body keeps status apart, so
// that paths into status decode that part alone.
func TestStatusApart(t *testing.T) {
	r := rand.New(rand.NewPCG(16, 1))
	ty := indextest.CompressedTwin(indextest.PodType, r)
	compressed := 0
	for i := range 200 {
		o := indextest.Obj("c1", ty, "ns", fmt.Sprint("p", i), indextest.WithRaw(indextest.RandomFieldRaw(r)))
		if !o.Compressed() {
			continue
		}
		compressed++
		if got, want := object.StatusApart(o); got != want || want == 0 {
			t.Fatalf("object %d is stored in parts at %d, its status begins at %d", i, got, want)
		}
	}
	if compressed < 150 {
		t.Fatalf("only %d of 200 bodies are compressed", compressed)
	}
}

// TestRawConcurrently reads compressed objects from many goroutines at
// once, more objects than the cache of recent bodies holds, and checks
// every read.
func TestRawConcurrently(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	ty := indextest.CompressedTwin(indextest.PodType, r)
	objs := make([]*object.Object, 600)
	raws := make([]string, len(objs))
	for i := range objs {
		raws[i] = indextest.RandomFieldRaw(r)
		objs[i] = indextest.Obj("c1", ty, "ns", fmt.Sprintf("p%d", i), indextest.WithRaw(raws[i]))
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
// bodies, scalars, arrays and absent values; other paths have none
// (TestProjectedMetadataOnly in package index: nor have objects stored
// without their body).
func TestProjected(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	// metadata.name first: the others are often absent at the end.
	projected := indextest.Paths("metadata.name", "status.phase", "spec.nodeName", "spec.containers[].image", "status.n")
	for _, compressed := range []bool{false, true} {
		ty := *indextest.PodType
		if compressed {
			ty = *indextest.CompressedTwin(indextest.PodType, r)
		}
		ty.Projected = fieldpath.NewSet(projected)
		for i := range 300 {
			raw := `{"metadata":{"name":"p` + fmt.Sprint(i) + `"},` + indextest.RandomFieldRaw(r)[1:]
			o := indextest.Obj("c1", &ty, "ns", fmt.Sprint("p", i), indextest.WithRaw(raw))
			for _, p := range projected {
				got, ok := o.Projected(p)
				if want := string(p.AppendJSONIn(nil, fieldpath.Doc{Cluster: "c1", Raw: []byte(raw)})); !ok || string(got) != want {
					t.Fatalf("%s of %s: projected %q (%t), want %s", p, raw, got, ok, want)
				}
			}
			// EachProjected gives the same values, one per path; an
			// absent one is kept as its length alone, or not at all at
			// the end (but for the first).
			calls, size, kept := 0, 0, 0
			o.EachProjected(func(i int, v []byte) {
				if want, _ := o.Projected(projected[i]); i != calls || string(v) != string(want) {
					t.Fatalf("%s of %s: EachProjected's call %d gives %q, Projected %q", projected[i], raw, calls, v, want)
				}
				calls++
				size++
				if string(v) != "null" {
					size += len(v)
					kept = size
				}
			})
			if calls != len(projected) {
				t.Fatalf("%s: EachProjected called %d times, want %d", raw, calls, len(projected))
			}
			if got := len(o.Stored().Projected); got != max(kept, 1) {
				t.Fatalf("%s: %d bytes of projected values kept, want %d", raw, got, max(kept, 1))
			}
			if i == 0 {
				// No value at all: one length kept, so that the object
				// still says it keeps its values.
				empty := indextest.Obj("c1", &ty, "ns", "empty", indextest.WithRaw(`{"spec":{}}`))
				if got := empty.Stored().Projected; got != "\x00" {
					t.Fatalf("no value: %q kept, want one length of 0", got)
				}
				if !empty.EachProjected(func(int, []byte) {}) {
					t.Fatal("no value: EachProjected says none is kept")
				}
			}
			if v, ok := o.Projected(fieldpath.MustParse("spec.unschedulable")); ok {
				t.Fatalf("spec.unschedulable, not projected, has %q", v)
			}
		}
	}

}
