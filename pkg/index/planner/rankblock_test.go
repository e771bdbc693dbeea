package planner_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetcache/fleetcache/internal/indextest"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
)

// TestPagesAcrossRankBlocks pages a sparse label over thousands of objects,
// so that its candidates span many blocks of ids (index.Reader.RankBlock):
// objects added in Position order (narrow blocks, most skipped), in random
// order (wide blocks), and after churn that hands freed ids to new objects
// elsewhere in the order. Every page must be the next of the brute-force
// order.
func TestPagesAcrossRankBlocks(t *testing.T) {
	for _, order := range []string{"position", "random"} {
		t.Run(order, func(t *testing.T) { pageAcrossRankBlocks(t, order, 6000, []int{1, 7, 50}, 3) })
	}
}

// TestPagesAcrossRankRegions is TestPagesAcrossRankBlocks over more ids
// than a region holds (index.Reader.RankRegion), added in Position order
// so that pages skip whole regions.
func TestPagesAcrossRankRegions(t *testing.T) {
	rounds := 1
	if testing.Short() {
		rounds = 0 // the fill alone: churn is TestPagesAcrossRankBlocks's
	}
	pageAcrossRankBlocks(t, "position", 70_000, []int{50, 400}, rounds)
}

// pageAcrossRankBlocks adds n objects in Position or random order, then
// pages a sparse label with each of limits after the fill and after each
// of rounds of churn.
func pageAcrossRankBlocks(t *testing.T, order string, n int, limits []int, rounds int) {
	{
		{
			r := rand.New(rand.NewPCG(7, 31))
			ix := index.New(index.Options{})
			live := map[object.Key]*object.Object{}
			add := func(i int) {
				name := fmt.Sprintf("p-%05d", i)
				o := indextest.Obj(fmt.Sprintf("c%d", i%3), indextest.PodType, fmt.Sprintf("ns-%d", i%7), name,
					indextest.WithLabels("app", fmt.Sprintf("a-%d", r.IntN(60))))
				ix.Upsert(o)
				live[o.Key()] = o
			}
			is := make([]int, n)
			for i := range is {
				is[i] = i
			}
			if order == "random" {
				r.Shuffle(len(is), func(a, b int) { is[a], is[b] = is[b], is[a] })
			}
			for _, i := range is {
				add(i)
			}
			check := func(stage string) {
				f := planner.Filter{Selector: indextest.MustSelector(t, "app=a-3")}
				var want []*object.Object
				for _, o := range live {
					if v, _ := o.Labels.Lookup("app"); v == "a-3" {
						want = append(want, o)
					}
				}
				slices.SortFunc(want, object.CompareObjects)
				for _, limit := range limits {
					got := indextest.ListAll(t, ix, f, limit, nil)
					if diff := cmp.Diff(indextest.Keys(want), indextest.Keys(got)); diff != "" {
						t.Fatalf("%s, pages of %d (-want +got):\n%s", stage, limit, diff)
					}
				}
			}
			check("filled")
			for round := range rounds {
				keys := make([]object.Key, 0, len(live))
				for k := range live {
					keys = append(keys, k)
				}
				slices.SortFunc(keys, func(a, b object.Key) int { return strings.Compare(a.String(), b.String()) })
				for range 1000 {
					k := keys[r.IntN(len(keys))]
					if live[k] != nil {
						ix.Delete(k)
						delete(live, k)
					}
				}
				for i := range 1000 {
					add(n*(round+1) + i)
				}
				if err := ix.Verify(); err != nil {
					t.Fatal(err)
				}
				check(fmt.Sprintf("churn %d", round))
			}
		}
	}
}
