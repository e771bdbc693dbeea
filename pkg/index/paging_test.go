package index

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// churn applies one random write to the index: a create, a delete or a
// modification of an object not in stable, or a modification (same UID) of
// a stable object. Stable objects exist throughout.
type churn struct {
	r      *rand.Rand
	stable map[Key]bool
	seq    int
}

func (c *churn) step(ix *Index, live []*Object) {
	c.seq++
	switch c.r.IntN(4) {
	case 0, 1: // create
		o := randomFleet(c.r, 1)[0]
		o.Name = fmt.Sprintf("new-%d", c.seq)
		ix.Upsert(o)
	case 2: // delete a non-stable object
		if o := live[c.r.IntN(len(live))]; !c.stable[o.Key()] {
			ix.Delete(o.Key())
		}
	case 3: // modify, changing labels; stable objects keep their UID
		o := live[c.r.IntN(len(live))]
		cur := ix.Get(o.Key())
		if cur == nil {
			return
		}
		n := modified(cur, fmt.Sprint(c.seq), withLabels("app", fmt.Sprintf("app-%d", c.r.IntN(8)), "tier", "fe"))
		if !c.stable[o.Key()] && c.r.IntN(2) == 0 {
			n.UID = "recreated"
		}
		ix.Upsert(n)
	}
}

// TestPagingUnderChurn pages through filters while objects are created,
// modified and deleted between pages, and checks that every object that
// exists throughout and matches throughout is returned exactly once, that no
// object is returned twice, and that pages are in order.
func TestPagingUnderChurn(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 7))
			fleet := randomFleet(r, 800)
			ix := New(Options{Retention: 1000})
			stable := map[Key]bool{}
			for i, o := range fleet {
				ix.Upsert(o)
				if i%2 == 0 {
					stable[o.Key()] = true
				}
			}
			c := &churn{r: r, stable: stable}
			for range 5 {
				// Filters on dimensions that modifications leave alone, so a
				// stable object matches throughout.
				f := randomFilter(t, r)
				f.Selector, f.OwnerUID = nil, ""
				var want []string
				for _, o := range ix.List(f, nil, 0).Objects {
					if stable[o.Key()] {
						want = append(want, o.Key().String())
					}
				}
				limit := 1 + r.IntN(30)
				got := listAll(t, ix, f, limit, func(int) {
					for range r.IntN(20) {
						c.step(ix, fleet)
					}
				})
				checkPages(t, got, want, stable)
			}
			if d := ix.checkInvariants(); d != "" {
				t.Error(d)
			}
		})
	}
}

// TestPagingConcurrentWrites is TestPagingUnderChurn with a writer goroutine
// running during the reads, for the race detector.
func TestPagingConcurrentWrites(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	fleet := randomFleet(r, 2000)
	ix := New(Options{Retention: 1000})
	stable := map[Key]bool{}
	for i, o := range fleet {
		ix.Upsert(o)
		if i%3 == 0 {
			stable[o.Key()] = true
		}
	}
	var want []string
	for _, o := range ix.List(Filter{}, nil, 0).Objects {
		if stable[o.Key()] {
			want = append(want, o.Key().String())
		}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(done)
	wg.Go(func() {
		c := &churn{r: rand.New(rand.NewPCG(5, 6)), stable: stable}
		for {
			select {
			case <-done:
				return
			default:
				c.step(ix, fleet)
			}
		}
	})
	for limit := range 10 {
		checkPages(t, listAll(t, ix, Filter{}, 3+limit*7, nil), want, stable)
	}
}

func checkPages(t *testing.T, got []*Object, want []string, stable map[Key]bool) {
	t.Helper()
	if !slices.IsSortedFunc(got, func(a, b *Object) int { return a.Position().Compare(b.Position()) }) {
		t.Error("pages out of order")
	}
	seen := map[Key]bool{}
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
	fleet := randomFleet(r, 1500)
	ix := New(Options{Retention: 10})
	for _, o := range fleet {
		ix.Upsert(o)
	}
	c := &churn{r: r, stable: map[Key]bool{}}
	for round := range 10 {
		for range 500 {
			c.step(ix, fleet)
		}
		if round%3 == 0 {
			ix.RemoveResource(fmt.Sprintf("c%d", r.IntN(4)), "pods")
		}
		if d := ix.checkInvariants(); d != "" {
			t.Fatalf("round %d: %s", round, d)
		}
		all := ix.List(Filter{}, nil, 0).Objects
		for range 30 {
			f := randomFilter(t, r)
			var want []*Object
			for _, o := range all {
				if refMatches(f, o) {
					want = append(want, o)
				}
			}
			if diff := cmp.Diff(keys(want), keys(ix.List(f, nil, 0).Objects), cmpSorted[1]); diff != "" {
				t.Fatalf("round %d, %+v: (-want +got):\n%s", round, f, diff)
			}
			if got := ix.Count(f); got != len(want) {
				t.Fatalf("round %d, %+v: Count = %d, want %d", round, f, got, len(want))
			}
		}
	}
	ix.RemoveCluster("c0")
	ix.RemoveCluster("c1")
	ix.RemoveCluster("c2")
	ix.RemoveCluster("c3")
	if d := ix.checkInvariants(); d != "" {
		t.Fatal(d)
	}
	if n := ix.all.Len() + len(ix.types) + len(ix.labels) + len(ix.labelKeys) + len(ix.owners); n != 0 {
		t.Errorf("%d objects or postings left", n)
	}
}
