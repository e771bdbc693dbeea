package planner_test

import (
	"fmt"
	"github.com/fleetcache/fleetcache/internal/indextest"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPagingUnderChurn pages through filters while objects are created,
// modified and deleted between pages, and checks that every object that
// exists throughout and matches throughout is returned exactly once, that no
// object is returned twice, and that pages are in order.
func TestPagingUnderChurn(t *testing.T) {
	for seed := range uint64(indextest.Scale(20, 2)) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 7))
			fleet := indextest.RandomFleet(r, 800)
			ix := index.New(index.Options{Retention: 1000})
			c := indextest.NewChurn(r, ix, fleet, 2)
			stable := c.Stable
			for range 5 {
				// Filters on dimensions that modifications leave alone, so a
				// stable object matches throughout.
				f := indextest.RandomFilter(t, r)
				f.Selector, f.OwnerUID = nil, ""
				var want []string
				for _, o := range planner.List(ix, f, nil, 0).Objects {
					if stable[o.Key()] {
						want = append(want, o.Key().String())
					}
				}
				limit := 1 + r.IntN(30)
				got := indextest.ListAll(t, ix, f, limit, func(int) {
					for range r.IntN(20) {
						c.Step(ix, fleet)
					}
				})
				checkPages(t, got, want, stable)
			}
			if err := ix.Verify(); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestPagingConcurrentWrites is TestPagingUnderChurn with a writer goroutine
// running during the reads, for the race detector.
func TestPagingConcurrentWrites(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	fleet := indextest.RandomFleet(r, 2000)
	ix := index.New(index.Options{Retention: 1000})
	stable := map[object.Key]bool{}
	for i, o := range fleet {
		ix.Upsert(o)
		if i%3 == 0 {
			stable[o.Key()] = true
		}
	}
	var want []string
	for _, o := range planner.List(ix, planner.Filter{}, nil, 0).Objects {
		if stable[o.Key()] {
			want = append(want, o.Key().String())
		}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(done)
	wg.Go(func() {
		c := &indextest.Churn{R: rand.New(rand.NewPCG(5, 6)), Stable: stable}
		for {
			select {
			case <-done:
				return
			default:
				c.Step(ix, fleet)
			}
		}
	})
	for limit := range 10 {
		checkPages(t, indextest.ListAll(t, ix, planner.Filter{}, 3+limit*7, nil), want, stable)
	}
}

func checkPages(t *testing.T, got []*object.Object, want []string, stable map[object.Key]bool) {
	t.Helper()
	if !slices.IsSortedFunc(got, func(a, b *object.Object) int { return a.Position().Compare(b.Position()) }) {
		t.Error("pages out of order")
	}
	seen := map[object.Key]bool{}
	var gotStable []string
	for _, o := range got {
		if seen[o.Key()] {
			t.Errorf("%v returned twice", o.Key())
		}
		seen[o.Key()] = true
		if stable[o.Key()] {
			gotStable = append(gotStable, o.Key().String())
		}
	}
	if diff := cmp.Diff(want, gotStable); diff != "" {
		t.Errorf("stable objects (-want +got):\n%s", diff)
	}
}

// TestRandomWritesKeepIndexesConsistent applies random writes and checks the
// postings and counts against the primary set, and List against a brute
// force evaluation.
func TestRandomWritesKeepIndexesConsistent(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	fleet := indextest.RandomFleet(r, 1500)
	ix := index.New(index.Options{Retention: 10})
	for _, o := range fleet {
		ix.Upsert(o)
	}
	c := &indextest.Churn{R: r, Stable: map[object.Key]bool{}}
	for round := range indextest.Scale(10, 3) {
		for range 500 {
			c.Step(ix, fleet)
		}
		if round%3 == 0 {
			ix.RemoveResource(fmt.Sprintf("c%d", r.IntN(4)), "pods")
		}
		if err := ix.Verify(); err != nil {
			t.Fatalf("round %d: %s", round, err)
		}
		all := planner.List(ix, planner.Filter{}, nil, 0).Objects
		for range 30 {
			f := indextest.RandomFilter(t, r)
			var want []*object.Object
			for _, o := range all {
				if indextest.RefMatches(f, o) {
					want = append(want, o)
				}
			}
			if diff := cmp.Diff(indextest.Keys(want), indextest.Keys(planner.List(ix, f, nil, 0).Objects), indextest.CmpSorted[1]); diff != "" {
				t.Fatalf("round %d, %+v: (-want +got):\n%s", round, f, diff)
			}
			if got := planner.Count(ix, f); got != len(want) {
				t.Fatalf("round %d, %+v: Count = %d, want %d", round, f, got, len(want))
			}
		}
	}
	ix.RemoveCluster("c0")
	ix.RemoveCluster("c1")
	ix.RemoveCluster("c2")
	ix.RemoveCluster("c3")
	if err := ix.Verify(); err != nil {
		t.Fatal(err)
	}
	// Verify found the postings agree with an empty primary set: none is left.
	n := 0
	ix.Read(func(r index.Reader) {
		n = r.Len()
		r.EachType(func(*object.Type) { n++ })
	})
	if n != 0 {
		t.Errorf("%d objects or types left", n)
	}
}
