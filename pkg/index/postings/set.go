package postings

import (
	"slices"

	"github.com/RoaringBitmap/roaring/v2"
)

// SmallMax is the size up to which a Set is a sorted slice of ids: 128
// bytes, where a roaring bitmap of a few ids costs about as much in
// headers alone. Most postings of an index are that small (one owner's
// children, one pod-template-hash, a name's own search tokens).
const SmallMax = 32

// Set is a set of object ids: a sorted slice while small, a roaring
// bitmap once it grows past SmallMax. The zero value is an empty set. A
// Set is not safe for concurrent use: the index writes its sets with its
// lock held for writing, and the planner reads them with it held for
// reading.
type Set struct {
	small []uint32
	bm    *roaring.Bitmap
}

// Len returns how many ids the set holds.
func (s *Set) Len() int {
	if s.bm != nil {
		return int(s.bm.GetCardinality())
	}
	return len(s.small)
}

// Has reports whether the set holds id.
func (s *Set) Has(id uint32) bool {
	if s.bm != nil {
		return s.bm.Contains(id)
	}
	_, found := slices.BinarySearch(s.small, id)
	return found
}

// Add adds id. A set that grows past SmallMax becomes a bitmap.
func (s *Set) Add(id uint32) {
	if s.bm != nil {
		s.bm.Add(id)
		return
	}
	i, found := slices.BinarySearch(s.small, id)
	switch {
	case found:
	case len(s.small) < SmallMax:
		s.small = slices.Insert(s.small, i, id)
	default:
		s.bm = roaring.BitmapOf(s.small...)
		s.bm.Add(id)
		s.small = nil
	}
}

// Remove removes id, if the set holds it. A bitmap that shrinks to half
// of SmallMax becomes a slice again.
func (s *Set) Remove(id uint32) {
	if s.bm == nil {
		if i, found := slices.BinarySearch(s.small, id); found {
			s.small = slices.Delete(s.small, i, i+1)
		}
		return
	}
	s.bm.Remove(id)
	if s.bm.GetCardinality() <= SmallMax/2 {
		s.small, s.bm = s.bm.ToArray(), nil
	}
}

// Each calls fn with each id in increasing order, until fn returns false.
func (s *Set) Each(fn func(id uint32) bool) {
	if s.bm != nil {
		s.bm.Iterate(fn)
		return
	}
	for _, id := range s.small {
		if !fn(id) {
			return
		}
	}
}

// Bitmap returns the set as a bitmap, to be read and not modified: the
// set's own, or a new one for a small set.
func (s *Set) Bitmap() *roaring.Bitmap {
	if s.bm != nil {
		return s.bm
	}
	return roaring.BitmapOf(s.small...)
}

// AndLen returns how many of the ids of b the set holds.
func (s *Set) AndLen(b *roaring.Bitmap) int {
	if s.bm != nil {
		return int(s.bm.AndCardinality(b))
	}
	n := 0
	for _, id := range s.small {
		if b.Contains(id) {
			n++
		}
	}
	return n
}

// Union returns a new bitmap of the ids that any of sets holds.
func Union(sets []*Set) *roaring.Bitmap {
	var bms []*roaring.Bitmap
	out := roaring.New()
	for _, s := range sets {
		if s.bm != nil {
			bms = append(bms, s.bm)
		} else {
			out.AddMany(s.small)
		}
	}
	if len(bms) == 0 {
		return out
	}
	return roaring.FastOr(append(bms, out)...)
}
