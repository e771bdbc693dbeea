package index

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
)

// sortFleet is randomFleet with creation times, several objects per
// second so that ties are common.
func sortFleet(r *rand.Rand, n int) []*Object {
	fleet := randomFleet(r, n)
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, o := range fleet {
		o.Created = base.Add(time.Duration(r.IntN(n/4+1)) * time.Second)
	}
	return fleet
}

// topShared returns every object matching f in the order of keys, as
// topLocked reads them with three goroutines.
func topShared(ix *Index, f Filter, keys []SortKey) []*Object {
	qs := compileAll([]Filter{f})
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.topLocked(qs, []plan{ix.planLocked(&qs[0])}, &sorter{keys: keys, need: math.MaxInt, workers: 3})
}

func sortKeys(t testing.TB, spec ...string) []SortKey {
	t.Helper()
	var keys []SortKey
	for _, s := range spec {
		k := SortKey{}
		if s[0] == '-' {
			k.Desc, s = true, s[1:]
		}
		k.Path = fieldpath.MustParse(s)
		keys = append(keys, k)
	}
	return keys
}

// bruteSorted returns the objects matching f sorted by keys, by sorting
// them all with the documented order: each key's value (absent last in
// either direction; numbers, then times, then strings), then Position.
func bruteSorted(ix *Index, f Filter, keys []SortKey) []*Object {
	objs := ix.List(f, nil, 0).Objects
	vals := map[*Object][]SortValue{}
	for _, o := range objs {
		vals[o] = SortValues(keys, o)
	}
	slices.SortFunc(objs, func(a, b *Object) int {
		for i, k := range keys {
			va, vb := vals[a][i], vals[b][i]
			switch {
			case va.Kind == Absent && vb.Kind == Absent:
				continue
			case va.Kind == Absent:
				return 1
			case vb.Kind == Absent:
				return -1
			}
			c := compareNatural(va, vb)
			if k.Desc {
				c = -c
			}
			if c != 0 {
				return c
			}
		}
		return a.Position().Compare(b.Position())
	})
	return objs
}

// listSortedAll pages through a sorted list, calling between after each
// page.
func listSortedAll(t testing.TB, ix *Index, f Filter, keys []SortKey, limit int, between func()) []*Object {
	t.Helper()
	var out []*Object
	var after *SortedPosition
	for i := 0; ; i++ {
		page, err := ix.ListSorted([]Filter{f}, keys, after, limit)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page.Objects...)
		if !page.More {
			return out
		}
		if len(page.Objects) != limit {
			t.Fatalf("page %d has %d objects and More", i, len(page.Objects))
		}
		last := page.Objects[len(page.Objects)-1]
		after = &SortedPosition{Values: SortValues(keys, last), Position: last.Position()}
		if between != nil {
			between()
		}
	}
}

var sortSpecs = [][]string{
	{"metadata.creationTimestamp"},
	{"-metadata.creationTimestamp"},
	{"status.phase"},
	{"-status.phase", "metadata.creationTimestamp"},
	{"status.restarts"},
	{"-status.restarts", "-metadata.creationTimestamp"},
	{"spec.nodeName", "-status.restarts"},
	{"cluster"},
	{"-metadata.creationTimestamp", "status.phase"},
}

// TestListSortedMatchesBruteForce pages through sorted lists of random
// filters and page sizes and compares them with sorting every match.
func TestListSortedMatchesBruteForce(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 11))
			ix := New(Options{})
			for _, o := range sortFleet(r, 600) {
				ix.Upsert(o)
			}
			for _, spec := range sortSpecs {
				sk := sortKeys(t, spec...)
				for range 6 {
					f := Filter{}
					if r.IntN(3) > 0 {
						f = randomFilter(t, r)
					}
					want := keys(bruteSorted(ix, f, sk))
					for _, limit := range []int{0, 5, 50} {
						got := keys(listSortedAll(t, ix, f, sk, limit, nil))
						if d := cmp.Diff(want, got); d != "" {
							t.Fatalf("sort %v, filter %+v, limit %d (-want +got):\n%s", spec, f, limit, d)
						}
					}
				}
			}
		})
	}
}

// TestSortedWalkAndTopAgree reads the same pages both ways, walking an
// ordered index (of creation times, or of a configured path) and reading
// every candidate, whichever ListSorted would choose.
func TestSortedWalkAndTopAgree(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	ix := New(Options{})
	for _, o := range sortFleet(r, 800) {
		ix.Upsert(o)
	}
	phase := ix.fields.lookup("pods", "status.phase").ordered
	for _, tc := range []struct {
		spec    []string
		ordered *orderedIndex
		pods    bool // restrict the filters to pods, which index status.phase
	}{
		{spec: []string{"metadata.creationTimestamp"}, ordered: ix.created},
		{spec: []string{"-metadata.creationTimestamp"}, ordered: ix.created},
		{spec: []string{"-metadata.creationTimestamp", "status.phase"}, ordered: ix.created},
		{spec: []string{"metadata.creationTimestamp", "-status.restarts"}, ordered: ix.created},
		{spec: []string{"status.phase"}, ordered: phase, pods: true},
		{spec: []string{"-status.phase"}, ordered: phase, pods: true},
		{spec: []string{"-status.phase", "-metadata.creationTimestamp"}, ordered: phase, pods: true},
	} {
		sk := sortKeys(t, tc.spec...)
		for range 20 {
			f := Filter{}
			if r.IntN(2) == 0 {
				f = randomFilter(t, r)
			}
			if tc.pods {
				f.Resources, f.Kinds = []string{"pods"}, nil
			}
			all := bruteSorted(ix, f, sk)
			var after *SortedPosition
			if len(all) > 0 && r.IntN(2) == 0 {
				o := all[r.IntN(len(all))]
				after = &SortedPosition{Values: SortValues(sk, o), Position: o.Position()}
			}
			need := 1 + r.IntN(40)
			s := &sorter{keys: sk, after: after, need: need}
			if after != nil {
				s.pivot = after.Position.pivot()
			}
			qs := compileAll([]Filter{f})
			ix.mu.RLock()
			plans := []plan{ix.planLocked(&qs[0])}
			if got := ix.orderedLocked(qs, plans, sk[0].Path); !plans[0].none && got != tc.ordered {
				t.Errorf("sort %v, filter %+v: ListSorted would walk %v, want %v", tc.spec, f, got, tc.ordered)
			}
			top := ix.topLocked(qs, plans, s)
			s.workers = 3
			shared := ix.topLocked(qs, plans, s)
			walked, ok := ix.walkLocked(tc.ordered, qs, plans, s, ix.all.Len()+1)
			ix.mu.RUnlock()
			if !ok {
				t.Fatal("the walk gave up within a budget of every object")
			}
			if d := cmp.Diff(keys(top), keys(walked)); d != "" {
				t.Fatalf("sort %v, filter %+v: walk and top differ (-top +walk):\n%s", tc.spec, f, d)
			}
			if d := cmp.Diff(keys(top), keys(shared)); d != "" {
				t.Fatalf("sort %v, filter %+v: top read by one and by three goroutines differ (-one +three):\n%s", tc.spec, f, d)
			}
		}
	}
	// Other types may hold status.phase too: without a type filter there
	// is no index to walk.
	qs := compileAll([]Filter{{}})
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if got := ix.orderedLocked(qs, []plan{ix.planLocked(&qs[0])}, fieldpath.MustParse("status.phase")); got != nil {
		t.Error("an unfiltered sort by status.phase walks the index of pods")
	}
}

// TestSortedPagingUnderChurn pages through sorted lists while objects are
// created, modified and deleted between pages: every stable object (its
// sort values unchanged throughout) comes exactly once, none twice, in
// order.
func TestSortedPagingUnderChurn(t *testing.T) {
	for seed := range uint64(6) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 13))
			fleet := sortFleet(r, 800)
			ix := New(Options{Retention: 1000})
			stable := map[Key]bool{}
			for i, o := range fleet {
				ix.Upsert(o)
				if i%2 == 0 {
					stable[o.Key()] = true
				}
			}
			c := &churn{r: r, stable: stable}
			for _, spec := range sortSpecs {
				sk := sortKeys(t, spec...)
				f := randomFilter(t, r)
				f.Selector, f.OwnerUID = nil, ""
				var want []string
				for _, o := range bruteSorted(ix, f, sk) {
					if stable[o.Key()] {
						want = append(want, o.Key().String())
					}
				}
				got := listSortedAll(t, ix, f, sk, 1+r.IntN(30), func() {
					for range r.IntN(20) {
						c.step(ix, fleet)
					}
				})
				seen := map[Key]bool{}
				var gotStable []string
				for i, o := range got {
					if seen[o.Key()] {
						t.Errorf("%v returned twice", o.Key())
					}
					seen[o.Key()] = true
					if stable[o.Key()] {
						gotStable = append(gotStable, o.Key().String())
					}
					if i > 0 && compareSorted(sk, SortValues(sk, got[i-1]), got[i-1], SortValues(sk, o), o) >= 0 {
						t.Errorf("sort %v: %v before %v", spec, got[i-1].Key(), o.Key())
					}
				}
				if d := cmp.Diff(want, gotStable); d != "" {
					t.Errorf("sort %v: stable objects (-want +got):\n%s", spec, d)
				}
			}
			if d := ix.checkInvariants(); d != "" {
				t.Error(d)
			}
		})
	}
}

func TestSortValues(t *testing.T) {
	o := obj("c1", podType, "ns", "p", withRaw(`{"a":{"n":3.5,"s":"x","t":"2026-01-02T03:04:05Z","tn":"2026-01-02T03:04:05.123456Z","b":true,"o":{"k":1},"z":null,"bad":"2026-13-02T03:04:05Z"}}`))
	o.Created = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	t0 := float64(o.Created.UnixMicro())
	tests := []struct {
		path string
		want SortValue
	}{
		{"a.n", SortValue{Kind: Number, Num: 3.5}},
		{"a.s", SortValue{Kind: String, Str: "x"}},
		{"a.t", SortValue{Kind: Time, Num: t0}},
		{"a.tn", SortValue{Kind: Time, Num: t0 + 123456}},
		{"a.b", SortValue{Kind: String, Str: "true"}},
		{"a.o", SortValue{Kind: String, Str: `{"k":1}`}},
		{"a.z", SortValue{}},
		{"a.missing", SortValue{}},
		{"a.bad", SortValue{Kind: String, Str: "2026-13-02T03:04:05Z"}},
		{"metadata.creationTimestamp", SortValue{Kind: Time, Num: t0}},
		{"cluster", SortValue{Kind: String, Str: "c1"}},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			got := SortValues(sortKeys(t, tt.path), o)[0]
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestListSortedRefuses(t *testing.T) {
	ix := New(Options{})
	ix.Upsert(obj("c1", podType, "ns", "p"))
	_, err := ix.ListSorted([]Filter{{}}, sortKeys(t, "spec.containers[].image"), nil, 10)
	if !errors.Is(err, ErrSortPath) {
		t.Errorf("a path across an array: got %v, want ErrSortPath", err)
	}
	_, err = ix.ListSorted([]Filter{{}}, sortKeys(t, "a", "b"), &SortedPosition{Values: []SortValue{{}}}, 10)
	if err == nil {
		t.Error("a position with one value for two keys: no error")
	}
}

// TestSortedWalkVisitsPage checks that a page sorted by creation time
// without a filter walks the ordered index instead of reading every object.
func TestSortedWalkVisitsPage(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	ix := New(Options{})
	for _, o := range sortFleet(r, 5000) {
		ix.Upsert(o)
	}
	for _, spec := range []string{"metadata.creationTimestamp", "-metadata.creationTimestamp"} {
		before := ix.scanned.Load()
		page, err := ix.ListSorted([]Filter{{}}, sortKeys(t, spec), nil, 50)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Objects) != 50 {
			t.Fatalf("%s: %d objects", spec, len(page.Objects))
		}
		// The walk reads the page, and what the cursor skips of its
		// first group.
		if n := ix.scanned.Load() - before; n > 200 {
			t.Errorf("%s: visited %d objects for a page of 50", spec, n)
		}
	}
}

// TestListSortedUnion: a sorted list over disjoint filters (as
// authorization builds them) is the sorted list of their union.
func TestListSortedUnion(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	ix := New(Options{})
	for _, o := range sortFleet(r, 600) {
		ix.Upsert(o)
	}
	nonEmpty := 0
	for _, spec := range sortSpecs {
		sk := sortKeys(t, spec...)
		f := randomFilter(t, r)
		f.Clusters = nil
		a, b := f, f
		a.Clusters, b.Clusters = []string{"c0", "c2"}, []string{"c1", "c3"}
		want := keys(bruteSorted(ix, f, sk))
		if len(want) > 4 {
			nonEmpty++
		}
		for _, limit := range []int{0, 4, 100} {
			var got []*Object
			var after *SortedPosition
			for {
				page, err := ix.ListSorted([]Filter{a, b}, sk, after, limit)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, page.Objects...)
				if !page.More {
					break
				}
				last := page.Objects[len(page.Objects)-1]
				after = &SortedPosition{Values: SortValues(sk, last), Position: last.Position()}
			}
			if d := cmp.Diff(want, keys(got)); d != "" {
				t.Errorf("sort %v, limit %d (-want +got):\n%s", spec, limit, d)
			}
		}
	}
	if nonEmpty < len(sortSpecs)/2 {
		t.Errorf("only %d of %d filters selected more than a page: the test tests little", nonEmpty, len(sortSpecs))
	}
}
