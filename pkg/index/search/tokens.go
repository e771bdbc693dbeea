package search

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
)

// MaxTokenLen is the longest token, in bytes: longer runs of letters and
// digits (hashes, base64) are cut there, at a character boundary, and so
// are a query's words, so that a word still begins the token it begins.
const MaxTokenLen = 64

// MaxWords is how many words a Query may have.
const MaxWords = 16

// Tokens calls fn with each token of s in order, until fn returns false;
// it returns false if fn did. A token is a run of letters and digits
// (Unicode), lowercased, cut to MaxTokenLen bytes. Tokens allocate only
// where s has upper-case letters.
func Tokens(s string, fn func(tok string) bool) bool {
	start := -1
	for i := 0; i < len(s); {
		c, size := rune(s[i]), 1
		if c >= utf8.RuneSelf {
			c, size = utf8.DecodeRuneInString(s[i:])
		}
		word := c < utf8.RuneSelf && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') ||
			c >= utf8.RuneSelf && (unicode.IsLetter(c) || unicode.IsDigit(c))
		switch {
		case word && start < 0:
			start = i
		case !word && start >= 0:
			if !fn(token(s[start:i])) {
				return false
			}
			start = -1
		}
		i += size
	}
	if start >= 0 {
		return fn(token(s[start:]))
	}
	return true
}

// token lowercases a run of letters and digits and cuts it to
// MaxTokenLen bytes.
func token(run string) string {
	t := strings.ToLower(run)
	if len(t) <= MaxTokenLen {
		return t
	}
	cut := MaxTokenLen
	for cut > 0 && !utf8.RuneStart(t[cut]) {
		cut--
	}
	return t[:cut]
}

// Query is a parsed search: words, each of which must begin a token. The
// zero Query is empty and matches everything. A Query is immutable and
// safe for concurrent use.
type Query struct {
	words []string
	text  string
}

// ErrTooManyWords is returned by Parse for more than MaxWords words.
var ErrTooManyWords = fmt.Errorf("more than %d words", MaxWords)

// Parse parses what a client searches for: its tokens (see Tokens) are the
// words, so "Redis prod", "redis,PROD" and "prod redis" are the same Query.
// A word that begins another word is dropped (what "redis" matches, "re"
// matches too). Text without letters or digits is the empty Query.
func Parse(text string) (Query, error) {
	var words []string
	Tokens(text, func(tok string) bool {
		words = append(words, strings.Clone(tok))
		return true
	})
	if len(words) == 0 {
		return Query{}, nil
	}
	// Sorted, a word that begins others comes right before one of them.
	slices.Sort(words)
	kept := words[:0]
	for i, w := range words {
		if i+1 < len(words) && strings.HasPrefix(words[i+1], w) {
			continue
		}
		kept = append(kept, w)
	}
	if len(kept) > MaxWords {
		return Query{}, fmt.Errorf("invalid search %q: %w", text, ErrTooManyWords)
	}
	return Query{words: kept, text: strings.Join(kept, " ")}, nil
}

// Empty reports whether q has no words.
func (q Query) Empty() bool { return len(q.words) == 0 }

// Words returns q's words, sorted; the caller must not modify them.
func (q Query) Words() []string { return q.words }

// String returns q's words, sorted and separated by spaces: equal queries
// have equal Strings, and Parse(q.String()) is q.
func (q Query) String() string { return q.text }

// Equal reports whether q and o are the same search: their canonical
// forms are equal. go-cmp uses it, so that filters holding queries compare.
func (q Query) Equal(o Query) bool { return q.text == o.text }

// Matches reports whether each word of q begins some token that text
// yields; text calls its argument with each token (see Tokens) and stops
// when it returns false.
func (q Query) Matches(text func(fn func(tok string) bool)) bool {
	if len(q.words) == 0 {
		return true
	}
	var found uint32 // bit i: word i begins a token; MaxWords <= 32
	all := uint32(1)<<len(q.words) - 1
	text(func(tok string) bool {
		for i, w := range q.words {
			if found&(1<<i) == 0 && strings.HasPrefix(tok, w) {
				found |= 1 << i
			}
		}
		return found != all
	})
	return found == all
}

// Paths are the fields, besides the annotations, whose string values are
// searched: the container images of Pods and of workload templates
// (Deployments, ReplicaSets, StatefulSets, DaemonSets, Jobs; CronJobs one
// level deeper).
var Paths = []fieldpath.Path{
	fieldpath.MustParse("spec.containers[].image"),
	fieldpath.MustParse("spec.initContainers[].image"),
	fieldpath.MustParse("spec.template.spec.containers[].image"),
	fieldpath.MustParse("spec.template.spec.initContainers[].image"),
	fieldpath.MustParse("spec.jobTemplate.spec.template.spec.containers[].image"),
}

// searched reads the annotations and Paths in one walk of an object.
var searched = fieldpath.NewSet(append([]fieldpath.Path{fieldpath.MustParse("metadata.annotations")}, Paths...))

// SearchedPaths returns the paths StoredText reads, for a caller that
// reads them with paths of its own in one walk (StoredTextFound).
func SearchedPaths() []fieldpath.Path { return slices.Clone(searched.Paths()) }

// StoredText calls fn with each token of the searched parts of an object
// as paths read it (its stored JSON, and where spec begins when known),
// until fn returns false: the values of its metadata.annotations, then the
// strings at Paths, read in one walk. It never decodes the object.
func StoredText(d fieldpath.Doc, fn func(tok string) bool) bool {
	if len(d.Raw) == 0 {
		return true
	}
	f := searched.Read(d)
	defer f.Release()
	return StoredTextFound(f, 0, fn)
}

// StoredTextFound is StoredText for what a walk found: the values of
// SearchedPaths() are those of the walk's Set from path from on.
func StoredTextFound(f *fieldpath.Found, from int, fn func(tok string) bool) bool {
	more := true
	f.Each(from, func(ann fieldpath.Value) bool {
		ann.EachMember(func(_ string, v fieldpath.Value) bool {
			if v.Kind == fieldpath.String {
				more = Tokens(v.Str, fn)
			}
			return more
		})
		return false // the first: the path crosses no array
	})
	for i := range Paths {
		if !more {
			return false
		}
		more = f.Each(from+1+i, func(v fieldpath.Value) bool {
			return v.Kind != fieldpath.String || Tokens(v.Str, fn)
		})
	}
	return more
}
