package planner_test

import (
	"errors"
	"github.com/fleetcache/fleetcache/internal/indextest"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
)

// TestSortedWalkAndTopAgree reads the same pages both ways, walking an
// ordered index (of creation times, or of a configured path) and reading
// every candidate, whichever ListSorted would choose.
func TestSortedWalkAndTopAgree(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	ix := index.New(index.Options{})
	for _, o := range indextest.SortFleet(r, 800) {
		ix.Upsert(o)
	}
	var created, phase index.OrderedIndex
	ix.Read(func(r index.Reader) {
		created = r.Ordered(fieldpath.MustParse("metadata.creationTimestamp"))
		phase = r.FieldIndex("pods", "status.phase").Ordered()
	})
	for _, tc := range []struct {
		spec    []string
		ordered index.OrderedIndex
		pods    bool // restrict the filters to pods, which index status.phase
	}{
		{spec: []string{"metadata.creationTimestamp"}, ordered: created},
		{spec: []string{"-metadata.creationTimestamp"}, ordered: created},
		{spec: []string{"-metadata.creationTimestamp", "status.phase"}, ordered: created},
		{spec: []string{"metadata.creationTimestamp", "-status.restarts"}, ordered: created},
		{spec: []string{"status.phase"}, ordered: phase, pods: true},
		{spec: []string{"-status.phase"}, ordered: phase, pods: true},
		{spec: []string{"-status.phase", "-metadata.creationTimestamp"}, ordered: phase, pods: true},
	} {
		sk := indextest.SortKeys(t, tc.spec...)
		for range indextest.Scale(20, 5) {
			f := planner.Filter{}
			if r.IntN(2) == 0 {
				f = indextest.RandomFilter(t, r)
			}
			if tc.pods {
				f.Resources, f.Kinds = []string{"pods"}, nil
			}
			all := indextest.BruteSorted(ix, f, sk)
			var after *planner.SortedPosition
			if len(all) > 0 && r.IntN(2) == 0 {
				o := all[r.IntN(len(all))]
				after = &planner.SortedPosition{Values: planner.SortValues(sk, o), Position: o.Position()}
			}
			walks, none, top, shared, walked, ok := planner.SortedReads(ix, f, sk, after, 1+r.IntN(40), tc.ordered)
			if !none && walks != tc.ordered {
				t.Errorf("sort %v, filter %+v: ListSorted would walk %v, want %v", tc.spec, f, walks, tc.ordered)
			}
			if !ok {
				t.Fatal("the walk gave up within a budget of every object")
			}
			if d := cmp.Diff(indextest.Keys(top), indextest.Keys(walked)); d != "" {
				t.Fatalf("sort %v, filter %+v: walk and top differ (-top +walk):\n%s", tc.spec, f, d)
			}
			if d := cmp.Diff(indextest.Keys(top), indextest.Keys(shared)); d != "" {
				t.Fatalf("sort %v, filter %+v: top read by one and by three goroutines differ (-one +three):\n%s", tc.spec, f, d)
			}
		}
	}
	// Other types may hold status.phase too: without a type filter there
	// is no index to walk.
	if walks, _, _, _, _, _ := planner.SortedReads(ix, planner.Filter{}, indextest.SortKeys(t, "status.phase"), nil, 10, nil); walks != nil {
		t.Error("an unfiltered sort by status.phase walks the index of pods")
	}
}

func TestSortValues(t *testing.T) {
	o := indextest.Obj("c1", indextest.PodType, "ns", "p", indextest.WithRaw(`{"a":{"n":3.5,"s":"x","t":"2026-01-02T03:04:05Z","tn":"2026-01-02T03:04:05.123456Z","b":true,"o":{"k":1},"z":null,"bad":"2026-13-02T03:04:05Z"}}`))
	o.SetCreated(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	t0 := float64(o.Created().UnixMicro())
	tests := []struct {
		path string
		want object.SortValue
	}{
		{"a.n", object.SortValue{Kind: object.Number, Num: 3.5}},
		{"a.s", object.SortValue{Kind: object.String, Str: "x"}},
		{"a.t", object.SortValue{Kind: object.Time, Num: t0}},
		{"a.tn", object.SortValue{Kind: object.Time, Num: t0 + 123456}},
		{"a.b", object.SortValue{Kind: object.String, Str: "true"}},
		{"a.o", object.SortValue{Kind: object.String, Str: `{"k":1}`}},
		{"a.z", object.SortValue{}},
		{"a.missing", object.SortValue{}},
		{"a.bad", object.SortValue{Kind: object.String, Str: "2026-13-02T03:04:05Z"}},
		{"metadata.creationTimestamp", object.SortValue{Kind: object.Time, Num: t0}},
		{"cluster", object.SortValue{Kind: object.String, Str: "c1"}},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			got := planner.SortValues(indextest.SortKeys(t, tt.path), o)[0]
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestListSortedRefuses(t *testing.T) {
	ix := index.New(index.Options{})
	ix.Upsert(indextest.Obj("c1", indextest.PodType, "ns", "p"))
	_, err := planner.ListSorted(ix, []planner.Filter{{}}, indextest.SortKeys(t, "spec.containers[].image"), nil, 10)
	if !errors.Is(err, planner.ErrSortPath) {
		t.Errorf("a path across an array: got %v, want planner.ErrSortPath", err)
	}
	_, err = planner.ListSorted(ix, []planner.Filter{{}}, indextest.SortKeys(t, "a", "b"), &planner.SortedPosition{Values: []object.SortValue{{}}}, 10)
	if err == nil {
		t.Error("a position with one value for two keys: no error")
	}
}

// TestSortedWalkVisitsPage checks that a page sorted by creation time
// without a filter walks the ordered index instead of reading every object.
func TestSortedWalkVisitsPage(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	ix := index.New(index.Options{})
	for _, o := range indextest.SortFleet(r, 5000) {
		ix.Upsert(o)
	}
	for _, spec := range []string{"metadata.creationTimestamp", "-metadata.creationTimestamp"} {
		before := ix.Scanned()
		page, err := planner.ListSorted(ix, []planner.Filter{{}}, indextest.SortKeys(t, spec), nil, 50)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Objects) != 50 {
			t.Fatalf("%s: %d objects", spec, len(page.Objects))
		}
		// The walk reads the page, and what the cursor skips of its
		// first group.
		if n := ix.Scanned() - before; n > 200 {
			t.Errorf("%s: visited %d objects for a page of 50", spec, n)
		}
	}
}
