package postings

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
	gocmp "github.com/google/go-cmp/cmp"
)

func ids(s *Set) []uint32 {
	var out []uint32
	s.Each(func(id uint32) bool {
		out = append(out, id)
		return true
	})
	return out
}

// TestSetAgreesWithModel adds and removes random ids, across the change
// from slice to bitmap and back, and checks every read of the set against
// a sorted model.
func TestSetAgreesWithModel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 20 {
		var s Set
		model := map[uint32]bool{}
		// Ids from a small range, so that adds and removes collide, and
		// sometimes far apart, so that the bitmap has several containers.
		span := uint32(2 + r.IntN(200))
		for step := range 2000 {
			id := r.Uint32N(span)
			if r.IntN(3) == 0 {
				id += 1 << 16 * r.Uint32N(4)
			}
			if r.IntN(2) == 0 || step > 1500 {
				s.Remove(id)
				delete(model, id)
			} else {
				s.Add(id)
				model[id] = true
			}
			if s.Len() != len(model) || int(s.Bitmap().GetCardinality()) != len(model) {
				t.Fatalf("round %d step %d: Len %d, bitmap of %d, want %d", round, step, s.Len(), s.Bitmap().GetCardinality(), len(model))
			}
			if s.Has(id) != model[id] {
				t.Fatalf("round %d step %d: Has(%d) = %v", round, step, id, s.Has(id))
			}
			if len(model) <= SmallMax/2 && s.bm != nil {
				t.Fatalf("round %d step %d: a bitmap of %d ids", round, step, len(model))
			}
		}
		want := make([]uint32, 0, len(model))
		for id := range model {
			want = append(want, id)
		}
		slices.Sort(want)
		if diff := gocmp.Diff(want, ids(&s), gocmp.Comparer(func(a, b []uint32) bool { return slices.Equal(a, b) })); diff != "" {
			t.Fatalf("round %d: Each (-want +got):\n%s", round, diff)
		}
		if got := s.Bitmap().ToArray(); !slices.Equal(got, want) {
			t.Fatalf("round %d: Bitmap %v, want %v", round, got, want)
		}
		other := roaring.New()
		for i := range span {
			if r.IntN(2) == 0 {
				other.Add(i)
			}
		}
		n := 0
		for _, id := range want {
			if other.Contains(id) {
				n++
			}
		}
		if got := s.AndLen(other); got != n {
			t.Fatalf("round %d: AndLen %d, want %d", round, got, n)
		}
	}
}

func TestUnion(t *testing.T) {
	var small, large, empty Set
	for _, id := range []uint32{5, 1, 70000} {
		small.Add(id)
	}
	for id := range uint32(100) {
		large.Add(id * 3)
	}
	got := Union([]*Set{&small, &large, &empty}).ToArray()
	want := []uint32{1, 5, 70000}
	for id := range uint32(100) {
		want = append(want, id*3)
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("Union = %v, want %v", got, want)
	}
	if !Union(nil).IsEmpty() {
		t.Fatal("the union of no sets holds ids")
	}
}

// TestVersion checks that a set's version changes exactly when its ids
// do, that a small set has none, and that no two sets share one, even one
// that grew again after it shrank.
func TestVersion(t *testing.T) {
	var a, b Set
	for id := range uint32(SmallMax) {
		a.Add(id)
		b.Add(id)
	}
	if _, ok := a.Version(); ok {
		t.Fatal("a set of SmallMax ids has a version")
	}
	a.Add(1000)
	b.Add(1000)
	va, ok := a.Version()
	vb, _ := b.Version()
	if !ok || va == vb {
		t.Fatalf("versions of two bitmaps: %d and %d (ok %v), want two", va, vb, ok)
	}
	seen := map[uint64]bool{va: true, vb: true}
	same := func(what string) {
		t.Helper()
		if v, _ := a.Version(); v != va {
			t.Errorf("%s changed the version from %d to %d", what, va, v)
		}
	}
	changed := func(what string) {
		t.Helper()
		v, ok := a.Version()
		if !ok || seen[v] {
			t.Errorf("%s: version %d (ok %v), want a new one", what, v, ok)
		}
		seen[v], va = true, v
	}
	a.Add(1000)
	same("adding an id the set holds")
	a.Remove(5000)
	same("removing an id it does not hold")
	a.Add(2000)
	changed("adding an id")
	a.Remove(2000)
	changed("removing an id")
	// Down to a slice, and up to a bitmap again.
	for id := range uint32(SmallMax) {
		a.Remove(id)
	}
	if _, ok := a.Version(); ok {
		t.Fatal("a set shrunk to a slice has a version")
	}
	for id := range uint32(SmallMax) {
		a.Add(id)
	}
	changed("growing into a bitmap again")
}
