package index

import (
	"cmp"
	"slices"
	"unique"

	"github.com/google/btree"

	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
	"github.com/fleetcache/fleetcache/pkg/index/object"
)

// OrderedIndex holds objects in order of their value at one path, then
// of Position, those without a value apart: sorted reads walk it (package
// planner). The index keeps one of metadata.creationTimestamp, where
// nearly every object has a value of its own (a B-tree of the objects by
// time), and one per configured path that does not cross an array, where
// objects share few values (the values in order, each with the posting of
// its objects: FieldIndex.Ordered). Read it with the read lock held.
type OrderedIndex interface {
	// Len returns how many objects the index holds, with a value or
	// without.
	Len() int
	// Min and Max return the smallest and the greatest value held, false
	// when none.
	Min() (object.SortValue, bool)
	Max() (object.SortValue, bool)
	// Above returns the smallest value greater than g, Below the greatest
	// value less than g.
	Above(g object.SortValue) (object.SortValue, bool)
	Below(g object.SortValue) (object.SortValue, bool)
	// AscendValue calls fn, in Position order, with the objects whose
	// value is g, from the first at or after from (nil: from the first),
	// until fn returns false.
	AscendValue(g object.SortValue, from *object.Object, fn func(*object.Object) bool)
	// AscendAbsent calls fn, in Position order, with the objects that
	// have no value, from the first at or after from (nil: the first),
	// until fn returns false.
	AscendAbsent(from *object.Object, fn func(*object.Object) bool)
}

// creationTimestamp is the path of the ordered index every object is in;
// object.SortValueOf reads its values from object.Object.Created.
var creationTimestamp = fieldpath.MustParse("metadata.creationTimestamp")

// timeOrder is the ordered index of creation times: a B-tree of the
// objects by time, 16 bytes an entry, and the objects without one apart.
type timeOrder struct {
	tree   *btree.BTreeG[timeEntry]
	absent *positionTree
}

// timeEntry is an object of a timeOrder with its time (a SortValue's Num
// of kind Time). Seeks use placeholder entries: a nil object sorts before
// every object of its time, endOfValue after them.
type timeEntry struct {
	t float64
	o *object.Object
}

// endOfValue is the placeholder object that sorts after every object of
// its value.
var endOfValue = new(object.Object)

func lessTimeEntries(a, b timeEntry) bool {
	if a.t != b.t {
		return a.t < b.t
	}
	switch {
	case a.o == b.o:
		return false
	case a.o == nil || b.o == endOfValue:
		return true
	case b.o == nil || a.o == endOfValue:
		return false
	}
	return object.CompareObjects(a.o, b.o) < 0
}

func newTimeOrder(fl *btree.FreeListG[*object.Object]) *timeOrder {
	return &timeOrder{tree: btree.NewG(treeDegree, lessTimeEntries), absent: newPositionTree(fl)}
}

func (to *timeOrder) put(o *object.Object) {
	if v := object.SortValueOf(creationTimestamp, o, nil); v.Kind == object.Time {
		to.tree.ReplaceOrInsert(timeEntry{t: v.Num, o: o})
	} else {
		to.absent.ReplaceOrInsert(o)
	}
}

// remove removes o, which must be the object put: its time is read again.
func (to *timeOrder) remove(o *object.Object) {
	if v := object.SortValueOf(creationTimestamp, o, nil); v.Kind == object.Time {
		to.tree.Delete(timeEntry{t: v.Num, o: o})
	} else {
		to.absent.Delete(o)
	}
}

func (to *timeOrder) Len() int { return to.tree.Len() + to.absent.Len() }

func timeValue(e timeEntry, ok bool) (object.SortValue, bool) {
	if !ok {
		return object.SortValue{}, false
	}
	return object.SortValue{Kind: object.Time, Num: e.t}, true
}

func (to *timeOrder) Min() (object.SortValue, bool) { return timeValue(to.tree.Min()) }
func (to *timeOrder) Max() (object.SortValue, bool) { return timeValue(to.tree.Max()) }

func (to *timeOrder) Above(g object.SortValue) (object.SortValue, bool) {
	var next timeEntry
	found := false
	to.tree.AscendGreaterOrEqual(timeEntry{t: g.Num, o: endOfValue}, func(e timeEntry) bool {
		next, found = e, true
		return false
	})
	return timeValue(next, found)
}

func (to *timeOrder) Below(g object.SortValue) (object.SortValue, bool) {
	var next timeEntry
	found := false
	to.tree.DescendLessOrEqual(timeEntry{t: g.Num}, func(e timeEntry) bool {
		next, found = e, true
		return false
	})
	return timeValue(next, found)
}

func (to *timeOrder) AscendValue(g object.SortValue, from *object.Object, fn func(*object.Object) bool) {
	to.tree.AscendRange(timeEntry{t: g.Num, o: from}, timeEntry{t: g.Num, o: endOfValue}, func(e timeEntry) bool { return fn(e.o) })
}

func (to *timeOrder) AscendAbsent(from *object.Object, fn func(*object.Object) bool) {
	ascendFrom(to.absent, from, fn)
}

// valueOrder is the ordered index of a configured path: its distinct
// values in order, the posting of each value's objects, and the posting
// of the objects without a value. It reads the Position order of a
// value's objects from the index's ranks, or walks the primary order when
// they are many.
type valueOrder struct {
	ix      *Index
	path    fieldpath.Path
	values  *btree.BTreeG[object.SortValue]
	byValue map[object.SortValue]*Posting
	absent  Posting
	n       int
}

func lessSortValues(a, b object.SortValue) bool { return object.CompareSortValues(a, b) < 0 }

func newValueOrder(ix *Index, path fieldpath.Path) *valueOrder {
	return &valueOrder{ix: ix, path: path, values: btree.NewG(treeDegree, lessSortValues), byValue: map[object.SortValue]*Posting{}}
}

func (vo *valueOrder) put(o *object.Object, id uint32, r *object.BodyReader) {
	vo.putValue(id, object.SortValueOf(vo.path, o, r))
}

// putValue is put for an object whose sort value, read already, is v.
func (vo *valueOrder) putValue(id uint32, v object.SortValue) {
	vo.n++
	if v.Kind == object.Absent {
		vo.absent.Add(id)
		return
	}
	p := vo.byValue[v]
	if p == nil {
		v = interned(v)
		p = new(Posting)
		vo.byValue[v] = p
		vo.values.ReplaceOrInsert(v)
	}
	p.Add(id)
}

// remove removes o, of id id, which must be the object put: its value is
// read again.
func (vo *valueOrder) remove(o *object.Object, id uint32, r *object.BodyReader) {
	vo.n--
	v := object.SortValueOf(vo.path, o, r)
	if v.Kind == object.Absent {
		vo.absent.Remove(id)
		return
	}
	if p := vo.byValue[v]; p != nil {
		if p.Remove(id); p.Len() == 0 {
			delete(vo.byValue, v)
			vo.values.Delete(v)
		}
	}
}

func (vo *valueOrder) Len() int { return vo.n }

func (vo *valueOrder) Min() (object.SortValue, bool) { return vo.values.Min() }
func (vo *valueOrder) Max() (object.SortValue, bool) { return vo.values.Max() }

func (vo *valueOrder) Above(g object.SortValue) (object.SortValue, bool) {
	var next object.SortValue
	found := false
	vo.values.AscendGreaterOrEqual(g, func(v object.SortValue) bool {
		if object.CompareSortValues(v, g) == 0 {
			return true
		}
		next, found = v, true
		return false
	})
	return next, found
}

func (vo *valueOrder) Below(g object.SortValue) (object.SortValue, bool) {
	var next object.SortValue
	found := false
	vo.values.DescendLessOrEqual(g, func(v object.SortValue) bool {
		if object.CompareSortValues(v, g) == 0 {
			return true
		}
		next, found = v, true
		return false
	})
	return next, found
}

func (vo *valueOrder) AscendValue(g object.SortValue, from *object.Object, fn func(*object.Object) bool) {
	if p := vo.byValue[g]; p != nil {
		vo.ix.ascendPosting(p, from, fn)
	}
}

func (vo *valueOrder) AscendAbsent(from *object.Object, fn func(*object.Object) bool) {
	vo.ix.ascendPosting(&vo.absent, from, fn)
}

// denseShare: a posting that holds more than one object in denseShare of
// the index is read in Position order by walking the primary order, which
// then finds one of its objects every few steps; a smaller one by
// ordering its ids by rank.
const denseShare = 16

// ascendPosting calls fn, in Position order, with the objects of p from
// the first at or after from (nil: the first), until fn returns false.
func (ix *Index) ascendPosting(p *Posting, from *object.Object, fn func(*object.Object) bool) {
	if p.Len()*denseShare > ix.all.Len() {
		it := func(e entry) bool { return !p.Has(e.id) || fn(e.o) }
		if from == nil {
			ix.all.Ascend(it)
		} else {
			ix.all.AscendGreaterOrEqual(entry{o: from}, it)
		}
		return
	}
	least := uint64(0)
	if from != nil {
		found := false
		ix.all.AscendGreaterOrEqual(entry{o: from}, func(e entry) bool {
			least, found = ix.ranks.of(e.id), true
			return false
		})
		if !found {
			return
		}
	}
	var ids []uint32
	p.Each(func(id uint32) bool {
		if ix.ranks.of(id) >= least {
			ids = append(ids, id)
		}
		return true
	})
	slices.SortFunc(ids, func(a, b uint32) int { return cmp.Compare(ix.ranks.of(a), ix.ranks.of(b)) })
	for _, id := range ids {
		if !fn(ix.ids.object(id)) {
			return
		}
	}
}

// interned returns v with a String's text interned: the values at a
// configured path repeat across objects (phases, node names), so each
// distinct one is held once, and none points into a decoded body.
func interned(v object.SortValue) object.SortValue {
	if v.Kind == object.String && v.Str != "" {
		v.Str = unique.Make(v.Str).Value()
	}
	return v
}
