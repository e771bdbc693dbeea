package index

import (
	"unique"

	"github.com/google/btree"

	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
	"github.com/fleetcache/fleetcache/pkg/index/object"
)

// OrderedIndex holds objects in order of their value at one path, then of
// Position: a B-tree of the objects with a value, and a posting of those
// without one, in Position order. The index keeps one of metadata.creationTimestamp and one
// per configured path that does not cross an array; sorted reads walk
// them (package planner).
type OrderedIndex struct {
	path   fieldpath.Path
	tree   *btree.BTreeG[orderedEntry]
	absent *positionTree
}

// orderedEntry is an object of an ordered index with its value. Seeks use
// placeholder entries: a nil object sorts before every object of its
// value, endOfValue after them.
type orderedEntry struct {
	v object.SortValue
	o *object.Object
}

// creationTimestamp is the path of the ordered index every object is in;
// object.SortValueOf reads its values from object.Object.Created.
var creationTimestamp = fieldpath.MustParse("metadata.creationTimestamp")

// endOfValue is the placeholder object that sorts after every object of
// its value.
var endOfValue = new(object.Object)

func lessEntries(a, b orderedEntry) bool {
	if c := object.CompareSortValues(a.v, b.v); c != 0 {
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
	return object.CompareObjects(a.o, b.o) < 0
}

func newOrderedIndex(path fieldpath.Path, fl *btree.FreeListG[*object.Object]) *OrderedIndex {
	return &OrderedIndex{path: path, tree: btree.NewG(treeDegree, lessEntries), absent: newPositionTree(fl)}
}

// Len returns how many objects the index holds, with a value or without.
func (oi *OrderedIndex) Len() int { return oi.tree.Len() + oi.absent.Len() }

func (oi *OrderedIndex) put(o *object.Object, r *object.BodyReader) {
	if v := object.SortValueOf(oi.path, o, r); v.Kind != object.Absent {
		oi.tree.ReplaceOrInsert(orderedEntry{v: interned(v), o: o})
	} else {
		oi.absent.ReplaceOrInsert(o)
	}
}

// remove removes o, which must be the object put: its value is read again.
func (oi *OrderedIndex) remove(o *object.Object, r *object.BodyReader) {
	if v := object.SortValueOf(oi.path, o, r); v.Kind != object.Absent {
		oi.tree.Delete(orderedEntry{v: v, o: o})
	} else {
		oi.absent.Delete(o)
	}
}

// Min returns the smallest value held, false when none.
func (oi *OrderedIndex) Min() (object.SortValue, bool) {
	e, ok := oi.tree.Min()
	return e.v, ok
}

// Max returns the greatest value held, false when none.
func (oi *OrderedIndex) Max() (object.SortValue, bool) {
	e, ok := oi.tree.Max()
	return e.v, ok
}

// Above returns the smallest value greater than g.
func (oi *OrderedIndex) Above(g object.SortValue) (object.SortValue, bool) {
	var next object.SortValue
	found := false
	oi.tree.AscendGreaterOrEqual(orderedEntry{v: g, o: endOfValue}, func(e orderedEntry) bool {
		next, found = e.v, true
		return false
	})
	return next, found
}

// Below returns the greatest value less than g.
func (oi *OrderedIndex) Below(g object.SortValue) (object.SortValue, bool) {
	var next object.SortValue
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
func (oi *OrderedIndex) AscendValue(g object.SortValue, from *object.Object, fn func(*object.Object) bool) {
	oi.tree.AscendRange(orderedEntry{v: g, o: from}, orderedEntry{v: g, o: endOfValue}, func(e orderedEntry) bool { return fn(e.o) })
}

// AscendAbsent calls fn, in Position order, with the objects that have no
// value, from from (nil: the first), until fn returns false.
func (oi *OrderedIndex) AscendAbsent(from *object.Object, fn func(*object.Object) bool) {
	ascendFrom(oi.absent, from, fn)
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
