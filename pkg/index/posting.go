package index

import (
	"github.com/google/btree"

	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/postings"
)

const (
	// treeDegree is the B-tree degree of the ordered indexes of sort
	// values (sort.go), as postings uses for its trees.
	treeDegree = 32
	// freeListSize is how many B-tree nodes an Index keeps for reuse.
	freeListSize = 256
)

// PositionOrder orders the objects of every posting by object.Position.
type PositionOrder struct{}

func (PositionOrder) Compare(a, b *object.Object) int { return object.CompareObjects(a, b) }

// posting is an ordered set of objects in Position order (package
// postings). It holds at most one object per Position, and so at most one
// per object.Key.
type Posting = postings.Set[*object.Object, PositionOrder]

// newTreePosting returns an empty posting that starts as a B-tree; the
// primary set of an Index uses it.
func newTreePosting(fl *btree.FreeListG[*object.Object]) *Posting {
	return postings.NewTree[*object.Object, PositionOrder](fl)
}
