package postings

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/btree"
	gocmp "github.com/google/go-cmp/cmp"
)

// byValue orders *int by the int they point at, as the index orders
// objects by Position: equal places may hold different pointers.
type byValue struct{}

func (byValue) Compare(a, b *int) int { return cmp.Compare(*a, *b) }

func values(s *Set[*int, byValue], from *int) []int {
	var out []int
	s.Ascend(from, func(x *int) bool {
		out = append(out, *x)
		return true
	})
	return out
}

// TestSetAgreesWithModel puts and removes random values, across the change
// from slice to tree and back, and checks the set against a sorted model.
func TestSetAgreesWithModel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	fl := btree.NewFreeListG[*int](16)
	for _, start := range []struct {
		name string
		set  *Set[*int, byValue]
	}{{"slice", new(Set[*int, byValue])}, {"tree", NewTree[*int, byValue](fl)}} {
		t.Run(start.name, func(t *testing.T) {
			s, model := start.set, map[int]bool{}
			for round := range 3000 {
				v := r.IntN(200)
				if r.IntN(3) > 0 || round < 150 {
					s.Put(&v, fl)
					model[v] = true
				} else {
					s.Remove(&v)
					delete(model, v)
				}
				if round%50 != 0 {
					continue
				}
				want := make([]int, 0, len(model))
				for k := range model {
					want = append(want, k)
				}
				slices.Sort(want)
				if diff := gocmp.Diff(want, values(s, nil)); diff != "" {
					t.Fatalf("round %d (-model +set):\n%s", round, diff)
				}
				if s.Len() != len(want) {
					t.Fatalf("Len = %d, want %d", s.Len(), len(want))
				}
				from := r.IntN(200)
				i, _ := slices.BinarySearch(want, from)
				if got := values(s, &from); !slices.Equal(got, want[i:]) {
					t.Fatalf("from %d: %v, want %v", from, got, want[i:])
				}
				if s.Has(&from) != model[from] {
					t.Fatalf("Has(%d) = %t", from, !model[from])
				}
			}
		})
	}
}

func TestSorted(t *testing.T) {
	xs := []*int{new(int), new(int), new(int)}
	for i, x := range xs {
		*x = i
	}
	s := Sorted[*int, byValue](xs)
	if got := values(s, nil); !slices.Equal(got, []int{0, 1, 2}) || s.Len() != 3 || !s.Has(xs[1]) {
		t.Errorf("Sorted: %v", got)
	}
}
