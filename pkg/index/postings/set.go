package postings

import (
	"slices"

	"github.com/google/btree"
)

const (
	// treeDegree is the B-tree degree of large sets: nodes hold up to 63
	// values (about 500 bytes of pointers), few levels even at millions of
	// values, and little slack per value.
	treeDegree = 32
	// SmallMax is the size up to which a Set is a plain sorted slice.
	SmallMax = 64
)

// Order orders the values of a Set. Implementations are zero-size types,
// so that a Set carries no comparison of its own.
type Order[T any] interface {
	Compare(a, b T) int
}

// Set is an ordered set of values: a sorted slice while small, a B-tree
// once it grows past SmallMax. It holds at most one value per place in the
// order. The zero value is an empty set. A Set is not safe for concurrent
// use.
type Set[T comparable, O Order[T]] struct {
	small []T
	tree  *btree.BTreeG[T]
}

// NewTree returns an empty set that starts as a B-tree, for sets known to
// grow large; its nodes come from fl.
func NewTree[T comparable, O Order[T]](fl *btree.FreeListG[T]) *Set[T, O] {
	return &Set[T, O]{tree: btree.NewWithFreeListG(treeDegree, less[T, O], fl)}
}

func less[T any, O Order[T]](a, b T) bool {
	var o O
	return o.Compare(a, b) < 0
}

func compare[T any, O Order[T]](a, b T) int {
	var o O
	return o.Compare(a, b)
}

// Len returns how many values the set holds.
func (s *Set[T, O]) Len() int {
	if s.tree != nil {
		return s.tree.Len()
	}
	return len(s.small)
}

// Has reports whether the set holds a value at x's place.
func (s *Set[T, O]) Has(x T) bool {
	if s.tree != nil {
		return s.tree.Has(x)
	}
	_, found := slices.BinarySearchFunc(s.small, x, compare[T, O])
	return found
}

// Put adds x, replacing the value at the same place if there is one. A set
// that grows past SmallMax becomes a B-tree whose nodes come from fl.
func (s *Set[T, O]) Put(x T, fl *btree.FreeListG[T]) {
	if s.tree != nil {
		s.tree.ReplaceOrInsert(x)
		return
	}
	i, found := slices.BinarySearchFunc(s.small, x, compare[T, O])
	if found {
		s.small[i] = x
		return
	}
	if len(s.small) < SmallMax {
		s.small = slices.Insert(s.small, i, x)
		return
	}
	t := btree.NewWithFreeListG(treeDegree, less[T, O], fl)
	for _, y := range s.small {
		t.ReplaceOrInsert(y)
	}
	t.ReplaceOrInsert(x)
	s.tree, s.small = t, nil
}

// Remove deletes the value at x's place, if any. A B-tree that shrinks to
// half of SmallMax becomes a slice again.
func (s *Set[T, O]) Remove(x T) {
	if s.tree == nil {
		if i, found := slices.BinarySearchFunc(s.small, x, compare[T, O]); found {
			s.small = slices.Delete(s.small, i, i+1)
		}
		return
	}
	s.tree.Delete(x)
	if n := s.tree.Len(); n <= SmallMax/2 {
		small := make([]T, 0, n)
		s.tree.Ascend(func(y T) bool {
			small = append(small, y)
			return true
		})
		s.tree.Clear(true)
		s.tree, s.small = nil, small
	}
}

// Ascend calls fn for each value at or after from (the zero value: from
// the start) in order, until fn returns false.
func (s *Set[T, O]) Ascend(from T, fn func(T) bool) {
	var zero T
	if s.tree != nil {
		if from == zero {
			s.tree.Ascend(fn)
		} else {
			s.tree.AscendGreaterOrEqual(from, fn)
		}
		return
	}
	i := 0
	if from != zero {
		i, _ = slices.BinarySearchFunc(s.small, from, compare[T, O])
	}
	for _, x := range s.small[i:] {
		if !fn(x) {
			return
		}
	}
}

// Sorted returns the values xs, in order and without repeats, as a Set that
// takes xs as it is: for a set that is only read, such as a merge of
// several postings made for one query, whatever its size.
func Sorted[T comparable, O Order[T]](xs []T) *Set[T, O] {
	return &Set[T, O]{small: xs}
}
