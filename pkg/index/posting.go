package index

import (
	"slices"

	"github.com/google/btree"
)

const (
	// treeDegree is the B-tree degree of large ordered sets: nodes hold up to
	// 63 pointers (about 500 bytes), few levels even at millions of objects,
	// and little slack per item.
	treeDegree = 32
	// smallMax is the size up to which an ordered set is a plain sorted
	// slice. Most postings (one owner's children, one pod-template-hash) are
	// tiny, and a slice costs a fraction of a B-tree's fixed overhead.
	smallMax = 64
	// freeListSize is how many B-tree nodes an Index keeps for reuse.
	freeListSize = 256
)

// posting is an ordered set of objects in Position order: a sorted slice
// while small, a B-tree once it grows past smallMax. It holds at most one
// object per Position, and so at most one per Key.
type posting struct {
	small []*Object
	tree  *btree.BTreeG[*Object]
}

// newTreePosting returns an empty posting that starts as a B-tree; the
// primary set of an Index uses it.
func newTreePosting(fl *btree.FreeListG[*Object]) *posting {
	return &posting{tree: btree.NewWithFreeListG(treeDegree, lessObjects, fl)}
}

func (p *posting) len() int {
	if p.tree != nil {
		return p.tree.Len()
	}
	return len(p.small)
}

// has reports whether the posting holds an object at o's Position.
func (p *posting) has(o *Object) bool {
	if p.tree != nil {
		return p.tree.Has(o)
	}
	_, found := slices.BinarySearchFunc(p.small, o, compareObjects)
	return found
}

// put adds o, replacing the object at the same Position if there is one.
func (p *posting) put(o *Object, fl *btree.FreeListG[*Object]) {
	if p.tree != nil {
		p.tree.ReplaceOrInsert(o)
		return
	}
	i, found := slices.BinarySearchFunc(p.small, o, compareObjects)
	if found {
		p.small[i] = o
		return
	}
	if len(p.small) < smallMax {
		p.small = slices.Insert(p.small, i, o)
		return
	}
	t := btree.NewWithFreeListG(treeDegree, lessObjects, fl)
	for _, x := range p.small {
		t.ReplaceOrInsert(x)
	}
	t.ReplaceOrInsert(o)
	p.tree, p.small = t, nil
}

// remove deletes the object at o's Position, if any.
func (p *posting) remove(o *Object) {
	if p.tree == nil {
		if i, found := slices.BinarySearchFunc(p.small, o, compareObjects); found {
			p.small = slices.Delete(p.small, i, i+1)
		}
		return
	}
	p.tree.Delete(o)
	if n := p.tree.Len(); n <= smallMax/2 {
		small := make([]*Object, 0, n)
		p.tree.Ascend(func(x *Object) bool {
			small = append(small, x)
			return true
		})
		p.tree.Clear(true)
		p.tree, p.small = nil, small
	}
}

// ascend calls fn for each object at or after from (nil: from the start) in
// order, until fn returns false.
func (p *posting) ascend(from *Object, fn func(*Object) bool) {
	if p.tree != nil {
		if from == nil {
			p.tree.Ascend(fn)
		} else {
			p.tree.AscendGreaterOrEqual(from, fn)
		}
		return
	}
	i := 0
	if from != nil {
		i, _ = slices.BinarySearchFunc(p.small, from, compareObjects)
	}
	for _, o := range p.small[i:] {
		if !fn(o) {
			return
		}
	}
}
