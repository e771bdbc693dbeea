package planner_test

import (
	"fmt"
	"github.com/fleetcache/fleetcache/internal/indextest"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
)

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
