package index

import (
	"github.com/google/btree"

	"github.com/fleetcache/fleetcache/pkg/index/postings"
)

const (
	// treeDegree is the B-tree degree of the ordered indexes of sort
	// values (sort.go), as postings uses for its trees.
	treeDegree = 32
	// freeListSize is how many B-tree nodes an Index keeps for reuse.
	freeListSize = 256
)

// PositionOrder orders the objects of every posting by Position.
type PositionOrder struct{}

func (PositionOrder) Compare(a, b *Object) int { return CompareObjects(a, b) }

// posting is an ordered set of objects in Position order (package
// postings). It holds at most one object per Position, and so at most one
// per Key.
type Posting = postings.Set[*Object, PositionOrder]

// newTreePosting returns an empty posting that starts as a B-tree; the
// primary set of an Index uses it.
func newTreePosting(fl *btree.FreeListG[*Object]) *Posting {
	return postings.NewTree[*Object, PositionOrder](fl)
}
