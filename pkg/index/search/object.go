package search

import (
	"slices"

	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
	"github.com/fleetcache/fleetcache/pkg/index/object"
)

// MaxObjectTokens bounds the tokens one object contributes to search
// (counting repeats), so that a huge annotation cannot fill the token
// index: its name, namespace and labels come first, then its annotation
// values and images (StoredText), until the bound.
const MaxObjectTokens = 1024

// EachMetaToken calls fn with the tokens of o's name, namespace and
// labels, the first of its searched text, until fn returns false or it
// has given MaxObjectTokens of them; it returns false if it stopped. The
// bound is its own, so that what indexes an object's tokens and what
// removes them give the same ones.
func EachMetaToken(o *object.Object, fn func(tok string) bool) bool {
	n := 0
	bounded := func(tok string) bool {
		if n++; n > MaxObjectTokens {
			return false
		}
		return fn(tok)
	}
	if !Tokens(o.Name, bounded) || !Tokens(o.Namespace, bounded) {
		return false
	}
	for _, l := range o.Labels {
		if !Tokens(l.Key, bounded) || !Tokens(l.Value, bounded) {
			return false
		}
	}
	return true
}

// AppendBodyTokens appends to dst the tokens o's body adds to its
// searched text, read from d, o's JSON: those StoredText gives after the
// name's, namespace's and labels' (EachMetaToken) within MaxObjectTokens,
// sorted and without repeats. They may point into d.Raw.
func AppendBodyTokens(dst []string, o *object.Object, d fieldpath.Doc) []string {
	return appendBodyTokens(dst, o, func(fn func(string) bool) { StoredText(d, fn) })
}

// AppendFoundTokens is AppendBodyTokens for what a walk of o's JSON found:
// the values of SearchedPaths() are those of the walk's Set from path
// from on (StoredTextFound).
func AppendFoundTokens(dst []string, o *object.Object, f *fieldpath.Found, from int) []string {
	return appendBodyTokens(dst, o, func(fn func(string) bool) { StoredTextFound(f, from, fn) })
}

// appendBodyTokens is AppendBodyTokens for text, which calls fn with the
// tokens of o's body until fn returns false.
func appendBodyTokens(dst []string, o *object.Object, text func(fn func(string) bool)) []string {
	// Counting the metadata's tokens takes a third of the time of reading
	// a Pod's body: they are counted only when the body's come near the
	// bound, as few objects' do.
	meta := metaTokensAtMost(o)
	counted := false
	start := len(dst)
	text(func(tok string) bool {
		n := meta + len(dst) - start + 1 // with tok
		if !counted && n > MaxObjectTokens {
			meta, counted = 0, true
			EachMetaToken(o, func(string) bool { meta++; return true })
			n = meta + len(dst) - start + 1
		}
		if n > MaxObjectTokens {
			return false
		}
		dst = append(dst, tok)
		return true
	})
	body := dst[start:]
	slices.Sort(body)
	return dst[:start+len(slices.Compact(body))]
}

// metaTokensAtMost returns at least as many as the tokens EachMetaToken
// gives for o, without reading them: a token is a byte or more, and
// tokens of one string are a byte apart.
func metaTokensAtMost(o *object.Object) int {
	n := (len(o.Name)+1)/2 + (len(o.Namespace)+1)/2
	for _, l := range o.Labels {
		n += (len(l.Key)+1)/2 + (len(l.Value)+1)/2
	}
	return min(n, MaxObjectTokens)
}
