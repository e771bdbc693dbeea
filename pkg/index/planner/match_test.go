package planner_test

import (
	"fmt"
	"github.com/fleetcache/fleetcache/internal/indextest"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
	"math/rand/v2"
	"testing"
)

// TestMatcherAgainstReference checks Matcher with the brute-force reading
// of the Filter documentation over random filters and objects.
func TestMatcherAgainstReference(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	fleet := indextest.RandomFleet(r, 500)
	for i := range indextest.Scale(300, 60) {
		f := indextest.RandomFilter(t, r)
		m := planner.NewMatcher(f)
		for _, o := range fleet {
			if got, want := m.Matches(o), indextest.RefMatches(f, o); got != want {
				t.Fatalf("%d/%+v: Matches(%s) = %v, want %v", i, f, fmt.Sprint(o.Key()), got, want)
			}
		}
	}
}
