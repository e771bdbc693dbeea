package postings

import (
	"slices"
	"sync/atomic"

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
	bm    *bitmap
}

// bitmap is the roaring bitmap of a Set that outgrew SmallMax, with how
// many ids it holds (a roaring bitmap's cardinality is a walk over its
// containers, and the planner sizes postings at every read) and the
// version of its ids (Set.Version).
type bitmap struct {
	roaring.Bitmap
	n int
	// version is 0 until Set.Version gives the ids one, and again from
	// their next change: most postings are never asked, and a change
	// then costs a load, not an atomic write.
	version atomic.Uint64
}

// versions hands out the versions of every bitmap of the process, so that
// none is ever given twice, whatever set or index it is in.
var versions atomic.Uint64

// newBitmap returns a bitmap of ids.
func newBitmap(ids []uint32) *bitmap {
	b := &bitmap{n: len(ids)}
	b.AddMany(ids)
	return b
}

// add adds id, and reports whether the bitmap did not hold it.
func (b *bitmap) add(id uint32) bool {
	if !b.CheckedAdd(id) {
		return false
	}
	b.n++
	b.changed()
	return true
}

// remove removes id, and reports whether the bitmap held it.
func (b *bitmap) remove(id uint32) bool {
	if !b.CheckedRemove(id) {
		return false
	}
	b.n--
	b.changed()
	return true
}

// changed drops the version of ids that are no more.
func (b *bitmap) changed() {
	if b.version.Load() != 0 {
		b.version.Store(0)
	}
}

// Version returns a number that names the set's ids as they are: the same
// until they change, and never given to other ids, of this set or any
// other in any index; so what was read from the set can be kept under it.
// ok is false for a set small enough to be read again at no cost, which
// has none. Readers may call it together, with the index's read lock held.
func (s *Set) Version() (v uint64, ok bool) {
	if s.bm == nil {
		return 0, false
	}
	if v = s.bm.version.Load(); v != 0 {
		return v, true
	}
	if v = versions.Add(1); s.bm.version.CompareAndSwap(0, v) {
		return v, true
	}
	return s.bm.version.Load(), true // another reader's, given meanwhile
}

// Len returns how many ids the set holds.
func (s *Set) Len() int {
	if s.bm != nil {
		return s.bm.n
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
		s.bm.add(id)
		return
	}
	i, found := slices.BinarySearch(s.small, id)
	switch {
	case found:
	case len(s.small) < SmallMax:
		s.small = slices.Insert(s.small, i, id)
	default:
		s.bm = newBitmap(s.small)
		s.bm.add(id)
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
	if s.bm.remove(id) && s.bm.n <= SmallMax/2 {
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
		return &s.bm.Bitmap
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
			bms = append(bms, &s.bm.Bitmap)
		} else {
			out.AddMany(s.small)
		}
	}
	if len(bms) == 0 {
		return out
	}
	return roaring.FastOr(append(bms, out)...)
}
