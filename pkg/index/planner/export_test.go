package planner

import (
	"math"

	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/object"
)

// TopShared returns every object of ix matching f in the order of keys,
// as top reads them with three goroutines.
func TopShared(ix *index.Index, f Filter, keys []SortKey) []*object.Object {
	qs := compileAll([]Filter{f})
	var out []*object.Object
	ix.Read(func(r index.Reader) {
		s := snapshot{r}
		out = s.top(qs, []plan{s.planFor(&qs[0])}, &sorter{keys: keys, need: math.MaxInt, workers: 3})
	})
	return out
}

// SortedReads reads the first need objects of ix matching f in the order
// of keys, after after, both ways ListSorted can: by top with one
// goroutine and with three, and by walking the ordered index oi. It
// returns the ordered index ListSorted would walk (nil: none) and what
// each read returned; ok is false when the walk gave up. none says the
// plan found that nothing can match: then walks means nothing.
func SortedReads(ix *index.Index, f Filter, keys []SortKey, after *SortedPosition, need int, oi index.OrderedIndex) (walks index.OrderedIndex, none bool, top, shared, walked []*object.Object, ok bool) {
	s := &sorter{keys: keys, after: after, need: need}
	if after != nil {
		s.pivot = after.Position.Placeholder()
	}
	qs := compileAll([]Filter{f})
	ix.Read(func(r index.Reader) {
		ix := snapshot{r}
		plans := []plan{ix.planFor(&qs[0])}
		none = plans[0].none
		walks = ix.ordered(qs, plans, keys[0].Path)
		top = ix.top(qs, plans, s)
		s.workers = 3
		shared = ix.top(qs, plans, s)
		if oi != nil {
			walked, ok = ix.walkSorted(oi, qs, plans, s, ix.Len()+1)
		}
	})
	return walks, none, top, shared, walked, ok
}

// CompareSorted is compareSorted: how ListSorted orders two objects with
// their sort values.
var CompareSorted = compareSorted
