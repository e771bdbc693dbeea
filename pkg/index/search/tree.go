package search

import (
	"strings"

	"github.com/google/btree"
)

// Tree maps tokens to postings P, in token order, so that the tokens a
// word begins are found as one range. It is not safe for concurrent use:
// its owner locks.
type Tree[P any] struct {
	t *btree.BTreeG[entry[P]]
}

type entry[P any] struct {
	token    string
	postings P
}

// treeDegree is the B-tree degree: nodes of up to 63 entries.
const treeDegree = 32

// NewTree returns an empty Tree.
func NewTree[P any]() *Tree[P] {
	return &Tree[P]{t: btree.NewG(treeDegree, func(a, b entry[P]) bool { return a.token < b.token })}
}

// Len returns how many tokens the tree holds.
func (t *Tree[P]) Len() int { return t.t.Len() }

// Get returns the postings of tok.
func (t *Tree[P]) Get(tok string) (P, bool) {
	e, ok := t.t.Get(entry[P]{token: tok})
	return e.postings, ok
}

// Put sets the postings of tok. The tree keeps a copy of tok, so that a
// token read from an object's bytes does not keep them alive.
func (t *Tree[P]) Put(tok string, p P) {
	t.t.ReplaceOrInsert(entry[P]{token: strings.Clone(tok), postings: p})
}

// Delete removes tok.
func (t *Tree[P]) Delete(tok string) { t.t.Delete(entry[P]{token: tok}) }

// Prefix calls fn, in token order, with each token that begins with
// prefix and its postings, until fn returns false.
func (t *Tree[P]) Prefix(prefix string, fn func(tok string, p P) bool) {
	t.t.AscendGreaterOrEqual(entry[P]{token: prefix}, func(e entry[P]) bool {
		return strings.HasPrefix(e.token, prefix) && fn(e.token, e.postings)
	})
}
