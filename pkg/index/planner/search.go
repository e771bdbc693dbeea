package planner

import (
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/postings"
	"github.com/fleetcache/fleetcache/pkg/index/search"
	"slices"
)

// searchMatches reports whether o matches the search q.
func searchMatches(q search.Query, o *object.Object, r *object.BodyReader) bool {
	return q.Matches(func(fn func(string) bool) { index.EachSearchToken(o, r, fn) })
}

// maxSearchSources is how many tokens' postings a word's plan visits side
// by side; a word that begins more tokens has their postings merged into
// one first.
const maxSearchSources = 8

// searchPostings returns the postings of the tokens that word
// begins, for the planner: several that may overlap (one object can have
// several of those tokens), or one merged posting. ok is false when no
// token begins word: nothing matches. ps is nil when the postings hold
// more than limit objects: the planner would not visit them.
func (ix snapshot) searchPostings(word string, limit int) (ps []*index.Posting, overlap, ok bool) {
	size := 0
	ix.EachToken(word, func(p *index.Posting) bool {
		ok = true
		ps = append(ps, p)
		size += p.Len()
		return size <= limit
	})
	switch {
	case !ok:
		return nil, false, false
	case size > limit:
		return nil, false, true
	case len(ps) <= maxSearchSources:
		return ps, len(ps) > 1, true
	}
	merged := make([]*object.Object, 0, size)
	for _, p := range ps {
		p.Ascend(nil, func(o *object.Object) bool {
			merged = append(merged, o)
			return true
		})
	}
	slices.SortFunc(merged, object.CompareObjects)
	return []*index.Posting{postings.Sorted[*object.Object, index.PositionOrder](slices.Compact(merged))}, false, true
}
