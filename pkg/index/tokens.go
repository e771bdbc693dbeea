package index

import (
	"slices"

	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/search"
)

// maxObjectTokens bounds the tokens one object contributes to search
// (counting repeats), so that a huge annotation cannot fill the token
// index: its name, namespace and labels come first, then its annotation
// values and images (search.StoredText), until the bound.
const maxObjectTokens = 1024

// EachSearchToken calls fn with each token of o's searched text, the
// same tokens for the token index and for matching, until fn returns
// false.
func EachSearchToken(o *object.Object, r *object.BodyReader, fn func(tok string) bool) {
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
	search.StoredText(r.Raw(o), bounded)
}

// searchTokens returns o's tokens, sorted and without repeats. They may
// point into r's buffers.
func searchTokens(o *object.Object, r *object.BodyReader) []string {
	var out []string
	EachSearchToken(o, r, func(tok string) bool {
		out = append(out, tok)
		return true
	})
	slices.Sort(out)
	return slices.Compact(out)
}

// indexTokensLocked adds id, o's, to the postings of o's tokens.
func (ix *Index) indexTokensLocked(o *object.Object, id uint32) {
	EachSearchToken(o, &ix.bodies, func(tok string) bool {
		p, ok := ix.tokens.Get(tok)
		if !ok {
			p = new(Posting)
			ix.tokens.Put(tok, p)
		}
		p.Add(id)
		return true
	})
}

// unindexTokensLocked removes id, o's, from the postings of o's tokens,
// except those in keep (sorted), and drops postings that become empty.
func (ix *Index) unindexTokensLocked(o *object.Object, id uint32, keep []string) {
	EachSearchToken(o, &ix.bodies, func(tok string) bool {
		if _, kept := slices.BinarySearch(keep, tok); kept {
			return true
		}
		if p, ok := ix.tokens.Get(tok); ok {
			if p.Remove(id); p.Len() == 0 {
				ix.tokens.Delete(tok)
			}
		}
		return true
	})
}
