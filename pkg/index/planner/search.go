package planner

import (
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/search"
)

// searchMatches reports whether o matches the search q.
func searchMatches(q search.Query, o *object.Object, r *object.BodyReader) bool {
	return q.Matches(func(fn func(string) bool) { index.EachSearchToken(o, r, fn) })
}

// searchPostings returns the postings of the tokens that word begins,
// for the planner: an object can be in several. ok is false when no
// token begins word: nothing matches. ps is nil when the postings hold
// more than limit ids: the word is tested on each candidate instead.
func (ix snapshot) searchPostings(word string, limit int) (ps []*index.Posting, ok bool) {
	size := 0
	ix.EachToken(word, func(p *index.Posting) bool {
		ok = true
		ps = append(ps, p)
		size += p.Len()
		return size <= limit
	})
	if size > limit {
		return nil, true
	}
	return ps, ok
}
