package planner

import (
	"container/heap"
	"fmt"
	"github.com/fleetcache/fleetcache/pkg/index"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
	"github.com/fleetcache/fleetcache/pkg/index/object"
)

// SortedPosition is where a page of ListSorted ends: the sort values and
// the Position of its last object. The next page starts strictly after it.
type SortedPosition struct {
	Values   []object.SortValue
	Position object.Position
}

// SortValues returns o's values of keys: what ListSorted orders o by, and
// what a SortedPosition after o holds.
func SortValues(keys []SortKey, o *object.Object) []object.SortValue {
	vs := make([]object.SortValue, len(keys))
	for i, k := range keys {
		vs[i] = object.SortValueOf(k.Path, o, nil).Owned()
	}
	return vs
}

// ListSorted is ListUnion in the order of keys: by the first key's value,
// then the next key's, and so on, then by Position. Paging with the
// SortedPosition of each page's last object never skips or repeats an
// object that exists throughout with unchanged sort values, whatever
// changes meanwhile. after must come from the same keys, and no key may
// cross an array (see CheckSort).
//
// An ordered index on the first key (metadata.creationTimestamp has one,
// and so has every configured path that does not cross an array, see
// Options.Indexes) lets a page be read by walking it from after until limit
// objects match,
// when the filter matches enough of the index for that to be short;
// otherwise every candidate of the filter is read and the first limit
// after after are kept.
func ListSorted(ix *index.Index, fs []Filter, keys []SortKey, after *SortedPosition, limit int) (Page, error) {
	if len(keys) == 0 {
		var pos *object.Position
		if after != nil {
			pos = &after.Position
		}
		return ListUnion(ix, fs, pos, limit), nil
	}
	if err := CheckSort(keys); err != nil {
		return Page{}, err
	}
	if after != nil && len(after.Values) != len(keys) {
		return Page{}, fmt.Errorf("the position holds %d sort values, the sort has %d keys", len(after.Values), len(keys))
	}
	s := &sorter{keys: keys, after: after, need: math.MaxInt}
	if after != nil {
		s.pivot = after.Position.Placeholder()
	}
	if limit > 0 {
		s.need = limit + 1
	}
	qs := compileAll(fs)
	var page Page
	ix.Read(func(r index.Reader) { page = snapshot{r}.listSorted(qs, s) })
	if limit > 0 && len(page.Objects) > limit {
		page.Objects, page.More = page.Objects[:limit:limit], true
	}
	return page, nil
}

// listSorted reads the first s.need objects matching one of qs in the
// order of s.keys, after s.after.
func (ix snapshot) listSorted(qs []query, s *sorter) Page {
	page := Page{Revision: ix.Revision()}
	plans := make([]plan, len(qs))
	candidates := 0
	for i := range qs {
		plans[i] = ix.planFor(&qs[i])
		if !plans[i].none {
			candidates += plans[i].estimate()
		}
	}
	if candidates == 0 {
		return page
	}
	var objs []*object.Object
	walked := false
	if oi := ix.ordered(qs, plans, s.keys[0].Path); oi != nil && s.need <= candidates {
		// Walking visits about need objects per share of the index that
		// matches; reading every candidate visits candidates.
		if total := oi.Len(); s.need*total/candidates < candidates/2 {
			objs, walked = ix.walkSorted(oi, qs, plans, s, candidates)
		}
	}
	if !walked {
		objs = ix.top(qs, plans, s)
	}
	page.Objects = objs
	return page
}

// sorter is one ListSorted read: its keys, where it starts, and how many
// objects it needs.
type sorter struct {
	keys  []SortKey
	after *SortedPosition
	pivot *object.Object // after's Position
	need  int
	// workers is how many goroutines top reads with; 0 lets it
	// choose.
	workers int
}

// isAfter reports whether o, with its values vals, sorts after s.after.
func (s *sorter) isAfter(vals []object.SortValue, o *object.Object) bool {
	return s.after == nil || compareSorted(s.keys, vals, o, s.after.Values, s.pivot) > 0
}

// sortedObject is an object with its sort values.
type sortedObject struct {
	vals []object.SortValue
	o    *object.Object
}

// parallelTopMin is how many candidates make top share the reading
// among goroutines: below it, starting them costs more than it saves.
const parallelTopMin = 4096

// top reads every candidate of the plans that matches its query and
// returns in order the first s.need of those after s.after. Many
// candidates in several ranges (clusters, namespaces) are read by up to
// GOMAXPROCS goroutines, each with its own BodyReader and its own best
// s.need: decoding and reading the candidates' bytes is what a sort by an
// unindexed path spends its time on.
func (ix snapshot) top(qs []query, plans []plan, s *sorter) []*object.Object {
	var units []topUnit
	candidates := 0
	for i := range qs {
		if plans[i].none {
			continue
		}
		candidates += plans[i].estimate()
		ranges := plans[i].ranges
		if ranges == nil || plans[i].narrowed() {
			// An intersection is read whole, in one unit.
			units = append(units, topUnit{q: &qs[i], p: &plans[i], r: ranges})
			continue
		}
		for j := range ranges {
			units = append(units, topUnit{q: &qs[i], p: &plans[i], r: ranges[j : j+1]})
		}
	}
	workers := s.workers
	switch {
	case workers == 0 && candidates < parallelTopMin:
		workers = 1
	case workers == 0:
		workers = runtime.GOMAXPROCS(0)
	}
	workers = max(1, min(workers, len(units)))
	heaps := make([]*sortHeap, workers)
	// Each worker takes the next unit not yet taken, so that one held up
	// (by the collector, by another process) leaves its share to the
	// others instead of making the whole read wait for it.
	var next atomic.Int64
	read := func(w int) {
		var r object.BodyReader
		for u := next.Add(1) - 1; u < int64(len(units)); u = next.Add(1) - 1 {
			ix.topOf(units[u], s, heaps[w], &r)
		}
	}
	for w := range workers {
		heaps[w] = &sortHeap{keys: s.keys}
	}
	if workers == 1 {
		// Few candidates: no goroutine to start and wait for.
		read(0)
	} else {
		// The read lock the caller holds covers the workers: they run
		// and end inside it.
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() { read(w) })
		}
		wg.Wait()
	}
	items := heaps[0].items
	for _, h := range heaps[1:] {
		items = append(items, h.items...)
	}
	slices.SortFunc(items, func(a, b sortedObject) int { return compareSorted(s.keys, a.vals, a.o, b.vals, b.o) })
	if len(items) > s.need {
		items = items[:s.need]
	}
	out := make([]*object.Object, len(items))
	for i, x := range items {
		out[i] = x.o
	}
	return out
}

// topUnit is a share of top's reading: one range of a query's plan, or
// the whole plan.
type topUnit struct {
	q *query
	p *plan
	r []object.Range
}

// topOf reads the candidates of u into h, which keeps the best s.need,
// decoding bodies with r.
func (ix snapshot) topOf(u topUnit, s *sorter, h *sortHeap, r *object.BodyReader) {
	p := *u.p
	p.ranges = u.r
	scratch := make([]object.SortValue, len(s.keys))
	ix.each(u.q, &p, func(o *object.Object) {
		for j, k := range s.keys {
			scratch[j] = object.SortValueOf(k.Path, o, r)
		}
		switch {
		case !s.isAfter(scratch, o):
		case len(h.items) < s.need:
			vals := make([]object.SortValue, len(scratch))
			for j, v := range scratch {
				vals[j] = v.Owned()
			}
			heap.Push(h, sortedObject{vals: vals, o: o})
		case compareSorted(s.keys, scratch, o, h.items[0].vals, h.items[0].o) < 0:
			// Better than the worst kept: take its place.
			for j, v := range scratch {
				h.items[0].vals[j] = v.Owned()
			}
			h.items[0].o = o
			heap.Fix(h, 0)
		}
	})
}

// sortHeap keeps the best objects seen, the worst of them on top.
type sortHeap struct {
	keys  []SortKey
	items []sortedObject
}

func (h *sortHeap) Len() int { return len(h.items) }
func (h *sortHeap) Less(i, j int) bool {
	a, b := h.items[i], h.items[j]
	return compareSorted(h.keys, a.vals, a.o, b.vals, b.o) > 0
}
func (h *sortHeap) Swap(i, j int) { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *sortHeap) Push(x any)    { h.items = append(h.items, x.(sortedObject)) }
func (h *sortHeap) Pop() any {
	x := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return x
}

// walkSorted reads a sorted page by walking the ordered index oi of the
// first key, a group of objects with equal values at a time, from s.after,
// until s.need objects match. It gives up, returning false, once it has
// visited budget objects.
func (ix snapshot) walkSorted(oi index.OrderedIndex, qs []query, plans []plan, s *sorter, budget int) ([]*object.Object, bool) {
	w := walk{ix: ix, qs: qs, plans: plans, s: s, budget: budget}
	desc := s.keys[0].Desc
	var g object.SortValue
	var ok bool
	switch {
	case s.after != nil:
		g, ok = s.after.Values[0], s.after.Values[0].Kind != object.Absent
	case desc:
		g, ok = oi.Max()
	default:
		g, ok = oi.Min()
	}
	for ok && len(w.out) < s.need && !w.aborted {
		w.group(g, func(fn func(*object.Object) bool) {
			var from *object.Object
			if s.after != nil && object.CompareSortValues(g, s.after.Values[0]) == 0 && len(s.keys) == 1 {
				from = s.pivot // the objects of the group before the cursor need no visit
			}
			oi.AscendValue(g, from, fn)
		})
		if desc {
			g, ok = oi.Below(g)
		} else {
			g, ok = oi.Above(g)
		}
	}
	if len(w.out) < s.need && !w.aborted {
		w.group(object.SortValue{}, func(fn func(*object.Object) bool) {
			var from *object.Object
			if s.after != nil && s.after.Values[0].Kind == object.Absent && len(s.keys) == 1 {
				from = s.pivot
			}
			oi.AscendAbsent(from, fn)
		})
	}
	ix.AddScanned(w.visited)
	if w.aborted {
		return nil, false
	}
	if len(w.out) > s.need {
		w.out = w.out[:s.need]
	}
	return w.out, true
}

// walk is the state of walk.
type walk struct {
	ix      snapshot
	qs      []query
	plans   []plan
	s       *sorter
	budget  int
	visited int
	aborted bool
	out     []*object.Object
	buf     []sortedObject
	bodies  object.BodyReader
}

// group reads the objects of one group, all with the first key's value
// g, which each calls fn for in Position order. With one key that is
// their order; with more, they are sorted by the other keys first.
func (w *walk) group(g object.SortValue, each func(fn func(*object.Object) bool)) {
	s := w.s
	single := len(s.keys) == 1
	w.buf = w.buf[:0]
	each(func(o *object.Object) bool {
		if w.visited++; w.visited > w.budget {
			w.aborted = true
			return false
		}
		if !w.matches(o) {
			return true
		}
		if single {
			vals := [1]object.SortValue{g}
			if s.isAfter(vals[:], o) {
				w.out = append(w.out, o)
			}
			return len(w.out) < s.need
		}
		vals := make([]object.SortValue, len(s.keys))
		vals[0] = g
		for i := 1; i < len(s.keys); i++ {
			vals[i] = object.SortValueOf(s.keys[i].Path, o, &w.bodies).Owned()
		}
		w.buf = append(w.buf, sortedObject{vals: vals, o: o})
		return true
	})
	if single || w.aborted {
		return
	}
	slices.SortFunc(w.buf, func(a, b sortedObject) int { return compareSorted(s.keys, a.vals, a.o, b.vals, b.o) })
	for _, x := range w.buf {
		if len(w.out) == s.need {
			break
		}
		if s.isAfter(x.vals, x.o) {
			w.out = append(w.out, x.o)
		}
	}
}

// matches reports whether o matches one of the queries.
func (w *walk) matches(o *object.Object) bool {
	for i := range w.qs {
		if !w.plans[i].none && w.qs[i].matches(o, &w.bodies) {
			return true
		}
	}
	return false
}

// ordered returns the ordered index of path that holds every object
// the queries can match, or nil: the creation-time index, or the one of a
// configured path (Options.Indexes) when the queries can match objects of
// one resource only and it indexes path.
func (ix snapshot) ordered(qs []query, plans []plan, path fieldpath.Path) index.OrderedIndex {
	if oi := ix.Ordered(path); oi != nil {
		return oi
	}
	var found index.OrderedIndex
	for i := range qs {
		if plans[i].none {
			continue
		}
		fis, _, ok := ix.cover(&qs[i], path.String())
		if !ok || len(fis) != 1 || fis[0].Ordered() == nil || (found != nil && found != fis[0].Ordered()) {
			return nil
		}
		found = fis[0].Ordered()
	}
	return found
}
