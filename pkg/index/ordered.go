package index

import (
	"github.com/google/btree"

	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
)

// OrderedIndex holds objects in order of their value at one path, then of
// Position: a B-tree of the objects with a value, and a posting of those
// without one. The index keeps one of metadata.creationTimestamp and one
// per configured path that does not cross an array; sorted reads walk
// them (package planner).
type OrderedIndex struct {
	path   fieldpath.Path
	tree   *btree.BTreeG[orderedEntry]
	absent *Posting
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
	if c := CompareSortValues(a.v, b.v); c != 0 {
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
	return CompareObjects(a.o, b.o) < 0
}

func newOrderedIndex(path fieldpath.Path) *OrderedIndex {
	return &OrderedIndex{path: path, tree: btree.NewG(treeDegree, lessEntries), absent: new(Posting)}
}

// Len returns how many objects the index holds, with a value or without.
func (oi *OrderedIndex) Len() int { return oi.tree.Len() + oi.absent.Len() }

func (oi *OrderedIndex) put(o *Object, fl *btree.FreeListG[*Object], r *BodyReader) {
	if v := SortValueOf(oi.path, o, r); v.Kind != Absent {
		oi.tree.ReplaceOrInsert(orderedEntry{v: v.interned(), o: o})
	} else {
		oi.absent.Put(o, fl)
	}
}

// remove removes o, which must be the object put: its value is read again.
func (oi *OrderedIndex) remove(o *Object, r *BodyReader) {
	if v := SortValueOf(oi.path, o, r); v.Kind != Absent {
		oi.tree.Delete(orderedEntry{v: v, o: o})
	} else {
		oi.absent.Remove(o)
	}
}

// Min returns the smallest value held, false when none.
func (oi *OrderedIndex) Min() (SortValue, bool) {
	e, ok := oi.tree.Min()
	return e.v, ok
}

// Max returns the greatest value held, false when none.
func (oi *OrderedIndex) Max() (SortValue, bool) {
	e, ok := oi.tree.Max()
	return e.v, ok
}

// Above returns the smallest value greater than g.
func (oi *OrderedIndex) Above(g SortValue) (SortValue, bool) {
	var next SortValue
	found := false
	oi.tree.AscendGreaterOrEqual(orderedEntry{v: g, o: endOfValue}, func(e orderedEntry) bool {
		next, found = e.v, true
		return false
	})
	return next, found
}

// Below returns the greatest value less than g.
func (oi *OrderedIndex) Below(g SortValue) (SortValue, bool) {
	var next SortValue
	found := false
	oi.tree.DescendLessOrEqual(orderedEntry{v: g}, func(e orderedEntry) bool {
		next, found = e.v, true
		return false
	})
	return next, found
}

// AscendValue calls fn, in Position order, with the objects whose value is
// g, from the first after from (nil: from the first), until fn returns
// false.
func (oi *OrderedIndex) AscendValue(g SortValue, from *Object, fn func(*Object) bool) {
	oi.tree.AscendRange(orderedEntry{v: g, o: from}, orderedEntry{v: g, o: endOfValue}, func(e orderedEntry) bool { return fn(e.o) })
}

// AscendAbsent calls fn, in Position order, with the objects that have no
// value, from from (nil: the first), until fn returns false.
func (oi *OrderedIndex) AscendAbsent(from *Object, fn func(*Object) bool) { oi.absent.Ascend(from, fn) }
