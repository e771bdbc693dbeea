package index

import (
	"slices"
	"strings"
	"sync"

	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/search"
)

// maxRecentTokens bounds the tokens kept at hand (Index.recentTokens):
// a few MB.
const maxRecentTokens = 1 << 16

// EachSearchToken calls fn with each token of o's searched text, the
// same tokens for the token index and for matching, until fn returns
// false.
func EachSearchToken(o *object.Object, r *object.BodyReader, fn func(tok string) bool) {
	n := 0
	bounded := func(tok string) bool {
		if n++; n > search.MaxObjectTokens {
			return false
		}
		return fn(tok)
	}
	if search.EachMetaToken(o, bounded) {
		search.StoredText(r.Doc(o), bounded)
	}
}

// TextTokens returns the tokens o's body adds to its searched text, those
// EachSearchToken gives after the name's, namespace's and labels', sorted
// and without repeats: a Prepared object's Text, which Upsert reads before
// it takes the lock and a snapshot keeps beside o. They may point into r's
// buffers.
func TextTokens(o *object.Object, r *object.BodyReader) []string {
	return search.AppendBodyTokens(nil, o, r.Doc(o))
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

// Prepared is an object with the tokens its body adds to its searched
// text (TextTokens), read beforehand: inserting it then reads no body
// under the index's lock. Upsert prepares objects before it takes the
// lock; a snapshot keeps them prepared (package warmstart).
type Prepared struct {
	Object *object.Object
	Text   []string
}

// tokens returns all the prepared object's tokens, sorted and without
// repeats: its name's, namespace's and labels', and Text.
func (p Prepared) tokens() []string {
	var out []string
	search.EachMetaToken(p.Object, func(tok string) bool {
		out = append(out, tok)
		return true
	})
	if !p.Object.MetadataOnly() {
		out = append(out, p.Text...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// bodyReaders decode the bodies Upsert prepares, outside the index's
// lock.
var bodyReaders = sync.Pool{New: func() any { return new(object.BodyReader) }}

// indexTokensLocked adds id, o's, to the postings of o's tokens: its
// name's, namespace's and labels', and text, those its body adds
// (TextTokens), unless the budget dropped the body.
func (ix *Index) indexTokensLocked(o *object.Object, id uint32, text []string) {
	add := func(tok string) bool {
		ix.tokenPostingLocked(tok).Add(id)
		return true
	}
	search.EachMetaToken(o, add)
	if o.MetadataOnly() {
		return
	}
	for _, tok := range text {
		add(tok)
	}
}

// tokenPostingLocked returns the posting of tok, creating it if needed.
// Most of an object's tokens are shared with others (namespaces, labels,
// images): the postings of those met lately are kept in a map
// (recentTokens), which finds them faster than the token tree. A token is
// kept there when it is met again, not when it is new: many are never met
// again (the random suffix of a Pod's name), and keeping them filled the
// map and emptied it of the shared ones.
func (ix *Index) tokenPostingLocked(tok string) *Posting {
	if p := ix.recentTokens[tok]; p != nil {
		return p
	}
	p, ok := ix.tokens.Get(tok)
	if !ok {
		p = new(Posting)
		ix.tokens.Put(tok, p)
		return p
	}
	if len(ix.recentTokens) == maxRecentTokens {
		clear(ix.recentTokens)
	}
	ix.recentTokens[strings.Clone(tok)] = p
	return p
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
				delete(ix.recentTokens, tok)
			}
		}
		return true
	})
}
