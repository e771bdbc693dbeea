package index

import (
	"container/heap"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/google/btree"

	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
)

// SortedPosition is where a page of ListSorted ends: the sort values and
// the Position of its last object. The next page starts strictly after it.
type SortedPosition struct {
	Values   []SortValue
	Position Position
}

// SortValues returns o's values of keys: what ListSorted orders o by, and
// what a SortedPosition after o holds.
func SortValues(keys []SortKey, o *Object) []SortValue {
	vs := make([]SortValue, len(keys))
	for i, k := range keys {
		vs[i] = sortValueOf(k.Path, o, nil).owned()
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
func (ix *Index) ListSorted(fs []Filter, keys []SortKey, after *SortedPosition, limit int) (Page, error) {
	if len(keys) == 0 {
		var pos *Position
		if after != nil {
			pos = &after.Position
		}
		return ix.ListUnion(fs, pos, limit), nil
	}
	if err := CheckSort(keys); err != nil {
		return Page{}, err
	}
	if after != nil && len(after.Values) != len(keys) {
		return Page{}, fmt.Errorf("the position holds %d sort values, the sort has %d keys", len(after.Values), len(keys))
	}
	s := &sorter{keys: keys, after: after, need: math.MaxInt}
	if after != nil {
		s.pivot = after.Position.pivot()
	}
	if limit > 0 {
		s.need = limit + 1
	}
	qs := compileAll(fs)

	ix.mu.RLock()
	defer ix.mu.RUnlock()
	page := Page{Revision: ix.log.Version()}
	plans := make([]plan, len(qs))
	candidates := 0
	for i := range qs {
		plans[i] = ix.planLocked(&qs[i])
		if !plans[i].none {
			candidates += plans[i].size
		}
	}
	if candidates == 0 {
		return page, nil
	}
	var objs []*Object
	walked := false
	if oi := ix.orderedLocked(qs, plans, keys[0].Path); oi != nil && s.need <= candidates {
		// Walking visits about need objects per share of the index that
		// matches; reading every candidate visits candidates.
		if total := oi.Len(); s.need*total/candidates < candidates/2 {
			objs, walked = ix.walkLocked(oi, qs, plans, s, candidates)
		}
	}
	if !walked {
		objs = ix.topLocked(qs, plans, s)
	}
	if limit > 0 && len(objs) > limit {
		objs, page.More = objs[:limit:limit], true
	}
	page.Objects = objs
	return page, nil
}

// sorter is one ListSorted read: its keys, where it starts, and how many
// objects it needs.
type sorter struct {
	keys  []SortKey
	after *SortedPosition
	pivot *Object // after's Position
	need  int
	// workers is how many goroutines topLocked reads with; 0 lets it
	// choose.
	workers int
}

// isAfter reports whether o, with its values vals, sorts after s.after.
func (s *sorter) isAfter(vals []SortValue, o *Object) bool {
	return s.after == nil || compareSorted(s.keys, vals, o, s.after.Values, s.pivot) > 0
}

// sortedObject is an object with its sort values.
type sortedObject struct {
	vals []SortValue
	o    *Object
}

// parallelTopMin is how many candidates make topLocked share the reading
// among goroutines: below it, starting them costs more than it saves.
const parallelTopMin = 4096

// topLocked reads every candidate of the plans that matches its query and
// returns in order the first s.need of those after s.after. Many
// candidates in several ranges (clusters, namespaces) are read by up to
// GOMAXPROCS goroutines, each with its own bodyReader and its own best
// s.need: decoding and reading the candidates' bytes is what a sort by an
// unindexed path spends its time on.
func (ix *Index) topLocked(qs []query, plans []plan, s *sorter) []*Object {
	var units []topUnit
	candidates := 0
	for i := range qs {
		if plans[i].none {
			continue
		}
		candidates += plans[i].size
		ranges := plans[i].ranges
		if ranges == nil {
			ranges = everything
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
		var r bodyReader
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
	out := make([]*Object, len(items))
	for i, x := range items {
		out[i] = x.o
	}
	return out
}

// topUnit is a share of topLocked's reading: one range of a query's plan.
type topUnit struct {
	q *query
	p *plan
	r []scopeRange
}

// topOf reads the candidates of u into h, which keeps the best s.need,
// decoding bodies with r.
func (ix *Index) topOf(u topUnit, s *sorter, h *sortHeap, r *bodyReader) {
	p := *u.p
	if p.ranges != nil {
		p.ranges = u.r
	}
	scratch := make([]SortValue, len(s.keys))
	ix.eachLocked(u.q, &p, func(o *Object) {
		for j, k := range s.keys {
			scratch[j] = sortValueOf(k.Path, o, r)
		}
		switch {
		case !s.isAfter(scratch, o):
		case len(h.items) < s.need:
			vals := make([]SortValue, len(scratch))
			for j, v := range scratch {
				vals[j] = v.owned()
			}
			heap.Push(h, sortedObject{vals: vals, o: o})
		case compareSorted(s.keys, scratch, o, h.items[0].vals, h.items[0].o) < 0:
			// Better than the worst kept: take its place.
			for j, v := range scratch {
				h.items[0].vals[j] = v.owned()
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

// walkLocked reads a sorted page by walking the ordered index oi of the
// first key, a group of objects with equal values at a time, from s.after,
// until s.need objects match. It gives up, returning false, once it has
// visited budget objects.
func (ix *Index) walkLocked(oi *orderedIndex, qs []query, plans []plan, s *sorter, budget int) ([]*Object, bool) {
	w := walk{ix: ix, qs: qs, plans: plans, s: s, budget: budget}
	desc := s.keys[0].Desc
	var g SortValue
	var ok bool
	switch {
	case s.after != nil:
		g, ok = s.after.Values[0], s.after.Values[0].Kind != Absent
	case desc:
		g, ok = oi.max()
	default:
		g, ok = oi.min()
	}
	for ok && len(w.out) < s.need && !w.aborted {
		w.group(g, func(fn func(*Object) bool) {
			from := orderedEntry{v: g}
			if s.after != nil && compareNatural(g, s.after.Values[0]) == 0 && len(s.keys) == 1 {
				from.o = s.pivot // the objects of the group before the cursor need no visit
			}
			oi.tree.AscendRange(from, orderedEntry{v: g, o: endOfValue}, func(e orderedEntry) bool { return fn(e.o) })
		})
		if desc {
			g, ok = oi.below(g)
		} else {
			g, ok = oi.above(g)
		}
	}
	if len(w.out) < s.need && !w.aborted {
		w.group(SortValue{}, func(fn func(*Object) bool) {
			var from *Object
			if s.after != nil && s.after.Values[0].Kind == Absent && len(s.keys) == 1 {
				from = s.pivot
			}
			oi.absent.Ascend(from, fn)
		})
	}
	ix.scanned.Add(int64(w.visited))
	if w.aborted {
		return nil, false
	}
	if len(w.out) > s.need {
		w.out = w.out[:s.need]
	}
	return w.out, true
}

// walk is the state of walkLocked.
type walk struct {
	ix      *Index
	qs      []query
	plans   []plan
	s       *sorter
	budget  int
	visited int
	aborted bool
	out     []*Object
	buf     []sortedObject
	bodies  bodyReader
}

// group reads the objects of one group, all with the first key's value
// g, which each calls fn for in Position order. With one key that is
// their order; with more, they are sorted by the other keys first.
func (w *walk) group(g SortValue, each func(fn func(*Object) bool)) {
	s := w.s
	single := len(s.keys) == 1
	w.buf = w.buf[:0]
	each(func(o *Object) bool {
		if w.visited++; w.visited > w.budget {
			w.aborted = true
			return false
		}
		if !w.matches(o) {
			return true
		}
		if single {
			vals := [1]SortValue{g}
			if s.isAfter(vals[:], o) {
				w.out = append(w.out, o)
			}
			return len(w.out) < s.need
		}
		vals := make([]SortValue, len(s.keys))
		vals[0] = g
		for i := 1; i < len(s.keys); i++ {
			vals[i] = sortValueOf(s.keys[i].Path, o, &w.bodies).owned()
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
func (w *walk) matches(o *Object) bool {
	for i := range w.qs {
		if !w.plans[i].none && w.qs[i].matches(o, &w.bodies) {
			return true
		}
	}
	return false
}

// orderedIndex holds objects in order of their value at one path, then of
// Position: a B-tree of the objects with a value, and a posting of those
// without one.
type orderedIndex struct {
	path   fieldpath.Path
	tree   *btree.BTreeG[orderedEntry]
	absent *posting
}

// orderedEntry is an object of an ordered index with its value. Seeks use
// placeholder entries: a nil object sorts before every object of its
// value, endOfValue after them.
type orderedEntry struct {
	v SortValue
	o *Object
}

// endOfValue is the placeholder object that sorts after every object of
// its value.
var endOfValue = new(Object)

func lessEntries(a, b orderedEntry) bool {
	if c := compareNatural(a.v, b.v); c != 0 {
		return c < 0
	}
	switch {
	case a.o == b.o:
		return false
	case a.o == nil || b.o == endOfValue:
		return true
	case b.o == nil || a.o == endOfValue:
		return false
	}
	return compareObjects(a.o, b.o) < 0
}

func newOrderedIndex(path fieldpath.Path) *orderedIndex {
	return &orderedIndex{path: path, tree: btree.NewG(treeDegree, lessEntries), absent: new(posting)}
}

func (oi *orderedIndex) Len() int { return oi.tree.Len() + oi.absent.Len() }

func (oi *orderedIndex) put(o *Object, fl *btree.FreeListG[*Object], r *bodyReader) {
	if v := sortValueOf(oi.path, o, r); v.Kind != Absent {
		oi.tree.ReplaceOrInsert(orderedEntry{v: v.interned(), o: o})
	} else {
		oi.absent.Put(o, fl)
	}
}

// remove removes o, which must be the object put: its value is read again.
func (oi *orderedIndex) remove(o *Object, r *bodyReader) {
	if v := sortValueOf(oi.path, o, r); v.Kind != Absent {
		oi.tree.Delete(orderedEntry{v: v, o: o})
	} else {
		oi.absent.Remove(o)
	}
}

func (oi *orderedIndex) min() (SortValue, bool) {
	e, ok := oi.tree.Min()
	return e.v, ok
}

func (oi *orderedIndex) max() (SortValue, bool) {
	e, ok := oi.tree.Max()
	return e.v, ok
}

// above returns the smallest value greater than g.
func (oi *orderedIndex) above(g SortValue) (SortValue, bool) {
	var next SortValue
	found := false
	oi.tree.AscendGreaterOrEqual(orderedEntry{v: g, o: endOfValue}, func(e orderedEntry) bool {
		next, found = e.v, true
		return false
	})
	return next, found
}

// below returns the greatest value less than g.
func (oi *orderedIndex) below(g SortValue) (SortValue, bool) {
	var next SortValue
	found := false
	oi.tree.DescendLessOrEqual(orderedEntry{v: g}, func(e orderedEntry) bool {
		next, found = e.v, true
		return false
	})
	return next, found
}

// orderedLocked returns the ordered index of path that holds every object
// the queries can match, or nil: the creation-time index, or the one of a
// configured path (Options.Indexes) when the queries can match objects of
// one resource only and it indexes path.
func (ix *Index) orderedLocked(qs []query, plans []plan, path fieldpath.Path) *orderedIndex {
	if path.String() == creationTimestamp.String() {
		return ix.created
	}
	var found *orderedIndex
	for i := range qs {
		if plans[i].none {
			continue
		}
		fis, _, ok := ix.coverLocked(&qs[i], path.String())
		if !ok || len(fis) != 1 || fis[0].ordered == nil || (found != nil && found != fis[0].ordered) {
			return nil
		}
		found = fis[0].ordered
	}
	return found
}
