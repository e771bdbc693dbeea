package index

import (
	"github.com/google/btree"

	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/postings"
)

const (
	// treeDegree is the B-tree degree of the primary order and of the
	// ordered indexes: nodes hold up to 63 entries, few levels even at
	// millions of objects, little slack per entry.
	treeDegree = 32
	// freeListSize is how many B-tree nodes an Index keeps for reuse.
	freeListSize = 256
)

// Posting is the set of the ids of the objects with one value of a
// secondary index (package postings); Reader.Object turns an id into its
// object.
type Posting = postings.Set

// Values are the postings of one dimension of an Index, one per value
// objects have: the clusters, the namespace names, the kind names, the
// values of a label key, or the values at an indexed path. Facets count
// them. Read them, like any posting, under the read lock.
//
// Values is a concrete type, not a callback, so that the closures a
// caller passes to Each do not make what they capture (a facet's map of
// counts) escape to the heap.
type Values struct{ m map[string]*Posting }

// Len returns how many distinct values objects have.
func (v Values) Len() int { return len(v.m) }

// Each calls fn with every value and the posting of the objects that
// have it, in no order.
func (v Values) Each(fn func(value string, p *Posting)) {
	for k, p := range v.m {
		fn(k, p)
	}
}

// entry is an object of the primary order with its id.
type entry struct {
	o  *object.Object
	id uint32
}

// entryTree is the primary order of an Index: its objects, with their
// ids, in Position order.
type entryTree = btree.BTreeG[entry]

func lessEntryPositions(a, b entry) bool { return object.CompareObjects(a.o, b.o) < 0 }

func newEntryTree() *entryTree { return btree.NewG(treeDegree, lessEntryPositions) }

// positionTree is a B-tree of objects in Position order: the objects
// without a value of an ordered index.
type positionTree = btree.BTreeG[*object.Object]

func lessPositions(a, b *object.Object) bool { return object.CompareObjects(a, b) < 0 }

func newPositionTree(fl *btree.FreeListG[*object.Object]) *positionTree {
	return btree.NewWithFreeListG(treeDegree, lessPositions, fl)
}

// ascendFrom calls fn for each object of t at or after from (nil: from
// the first) in Position order, until fn returns false.
func ascendFrom(t *positionTree, from *object.Object, fn func(*object.Object) bool) {
	if from == nil {
		t.Ascend(fn)
	} else {
		t.AscendGreaterOrEqual(from, fn)
	}
}

// postingFor returns the posting of k in m, creating it if needed.
func postingFor[K comparable](m map[K]*Posting, k K) *Posting {
	p := m[k]
	if p == nil {
		p = new(Posting)
		m[k] = p
	}
	return p
}

// removeFrom removes id from the posting of k in m, and drops the posting
// once it is empty.
func removeFrom[K comparable](m map[K]*Posting, k K, id uint32) {
	p := m[k]
	if p == nil {
		return
	}
	p.Remove(id)
	if p.Len() == 0 {
		delete(m, k)
	}
}
