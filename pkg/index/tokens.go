package index

import (
	"slices"

	"github.com/fleetcache/fleetcache/pkg/index/postings"
	"github.com/fleetcache/fleetcache/pkg/index/search"
)

// maxObjectTokens bounds the tokens one object contributes to search
// (counting repeats), so that a huge annotation cannot fill the token
// index: its name, namespace and labels come first, then its annotation
// values and images (search.StoredText), until the bound.
const maxObjectTokens = 1024

// eachSearchToken calls fn with each token of o's searched text, the
// same tokens for the token index and for matching, until fn returns
// false.
func eachSearchToken(o *Object, r *bodyReader, fn func(tok string) bool) {
	n := 0
	bounded := func(tok string) bool {
		if n++; n > maxObjectTokens {
			return false
		}
		return fn(tok)
	}
	if !search.Tokens(o.Name, bounded) || !search.Tokens(o.Namespace, bounded) {
		return
	}
	for _, l := range o.Labels {
		if !search.Tokens(l.Key, bounded) || !search.Tokens(l.Value, bounded) {
			return
		}
	}
	search.StoredText(r.raw(o), bounded)
}

// searchMatches reports whether o matches the search q.
func searchMatches(q search.Query, o *Object, r *bodyReader) bool {
	return q.Matches(func(fn func(string) bool) { eachSearchToken(o, r, fn) })
}

// searchTokens returns o's tokens, sorted and without repeats. They may
// point into r's buffers.
func searchTokens(o *Object, r *bodyReader) []string {
	var out []string
	eachSearchToken(o, r, func(tok string) bool {
		out = append(out, tok)
		return true
	})
	slices.Sort(out)
	return slices.Compact(out)
}

// indexTokensLocked adds o to the postings of its tokens.
func (ix *Index) indexTokensLocked(o *Object) {
	eachSearchToken(o, &ix.bodies, func(tok string) bool {
		p, ok := ix.tokens.Get(tok)
		if !ok {
			p = new(posting)
			ix.tokens.Put(tok, p)
		}
		p.Put(o, ix.freelist)
		return true
	})
}

// unindexTokensLocked removes o from the postings of its tokens, except
// those in keep (sorted), and drops postings that become empty.
func (ix *Index) unindexTokensLocked(o *Object, keep []string) {
	eachSearchToken(o, &ix.bodies, func(tok string) bool {
		if _, kept := slices.BinarySearch(keep, tok); kept {
			return true
		}
		if p, ok := ix.tokens.Get(tok); ok {
			if p.Remove(o); p.Len() == 0 {
				ix.tokens.Delete(tok)
			}
		}
		return true
	})
}

// maxSearchSources is how many tokens' postings a word's plan visits side
// by side; a word that begins more tokens has their postings merged into
// one first.
const maxSearchSources = 8

// searchPostingsLocked returns the postings of the tokens that word
// begins, for the planner: several that may overlap (one object can have
// several of those tokens), or one merged posting. ok is false when no
// token begins word: nothing matches. ps is nil when the postings hold
// more than limit objects: the planner would not visit them.
func (ix *Index) searchPostingsLocked(word string, limit int) (ps []*posting, overlap, ok bool) {
	size := 0
	ix.tokens.Prefix(word, func(_ string, p *posting) bool {
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
	merged := make([]*Object, 0, size)
	for _, p := range ps {
		p.Ascend(nil, func(o *Object) bool {
			merged = append(merged, o)
			return true
		})
	}
	slices.SortFunc(merged, compareObjects)
	return []*posting{postings.Sorted[*Object, positionOrder](slices.Compact(merged))}, false, true
}
