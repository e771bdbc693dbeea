package index

import (
	"math"
	"slices"
	"sync"

	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/search"
)

// batch is what UpsertAll knows of the objects it inserts under one hold
// of the lock, so that a list's objects cost less than one at a time
// (docs/benchmarks.md, "Batches that group their tokens and know a list's
// order"):
//
//   - Their search tokens, grouped by token before the lock is taken:
//     under it, each token's posting is looked up once for the batch, not
//     once for each of its objects. A lookup in recentTokens or the token
//     tree misses the CPU's caches, and most of a batch's tokens are
//     shared by its objects.
//   - The neighbours, in the primary order, of the object it inserted
//     last: a list comes in key order, so the next object most often goes
//     right after it, and is then known to be new, and its neighbours'
//     ranks known, without a lookup in the primary order.
type batch struct {
	objs []*object.Object
	// ids holds, by place in the batch, the id of the object inserted
	// there; noID until it is, and again once its tokens are indexed.
	ids []uint32
	// groups are the batch's tokens in the order first met; byToken
	// finds a token's group. A group's places are a list through links.
	groups  []tokenGroup
	byToken map[string]int32
	links   []tokenLink
	// prev is the entry the batch inserted last, nil when unknown, and
	// next the entry after it then (nil: none).
	prev, next entry
	// left is how many objects of the list come after the one being
	// inserted; last is the object ranked last, across batches, and run
	// how many were ranked right after one another up to it (ranked).
	left int
	last *object.Object
	run  int
}

type tokenGroup struct {
	tok         string
	first, last int32 // links; -1 for none
}

// tokenLink is a place in the batch that has a group's token: the
// object's place times two, plus one for a token of its body, which the
// object does not have if the budget dropped its body.
type tokenLink struct{ at, next int32 }

// noID is no object's id: ids are dense, far below it.
const noID = math.MaxUint32

var batches = sync.Pool{New: func() any { return &batch{byToken: map[string]int32{}} }}

// stage starts a batch of ps, without the lock: it groups their tokens.
func (b *batch) stage(ps []Prepared) {
	b.objs, b.ids = b.objs[:0], b.ids[:0]
	b.groups, b.links = b.groups[:0], b.links[:0]
	clear(b.byToken)
	b.forget()
	for i, p := range ps {
		b.objs = append(b.objs, p.Object)
		b.ids = append(b.ids, noID)
		at := int32(2 * i)
		search.EachMetaToken(p.Object, func(tok string) bool {
			b.addToken(tok, at)
			return true
		})
		if p.Object.MetadataOnly() {
			continue
		}
		for _, tok := range p.Text {
			b.addToken(tok, at+1)
		}
	}
}

// release drops what the batch holds of its objects, before it goes
// back to the pool: it would keep their objects and tokens alive.
func (b *batch) release() {
	b.last, b.run = nil, 0
	clear(b.objs[:cap(b.objs)])
	clear(b.groups[:cap(b.groups)])
	clear(b.byToken)
	b.forget()
}

// addToken adds the place at to the group of tok.
func (b *batch) addToken(tok string, at int32) {
	g, ok := b.byToken[tok]
	if !ok {
		g = int32(len(b.groups))
		b.groups = append(b.groups, tokenGroup{tok: tok, first: -1, last: -1})
		b.byToken[tok] = g
	}
	grp := &b.groups[g]
	if grp.last >= 0 && b.links[grp.last].at>>1 == at>>1 {
		return // the object has it already: a token repeated
	}
	l := int32(len(b.links))
	b.links = append(b.links, tokenLink{at: at, next: -1})
	if grp.last >= 0 {
		b.links[grp.last].next = l
	} else {
		grp.first = l
	}
	grp.last = l
}

// holds reports whether the batch inserted the object of id and has not
// indexed its tokens yet.
func (b *batch) holds(id uint32) bool { return slices.Contains(b.ids, id) }

// indexTokensLocked adds the objects the batch inserted to the postings
// of their tokens.
func (b *batch) indexTokensLocked(ix *Index) {
	for _, g := range b.groups {
		var p *Posting
		for l := g.first; l >= 0; l = b.links[l].next {
			at := b.links[l].at
			id := b.ids[at>>1]
			if id == noID || at&1 == 1 && b.objs[at>>1].MetadataOnly() {
				continue
			}
			if p == nil {
				p = ix.tokenPostingLocked(g.tok)
			}
			p.Add(id)
		}
	}
	for i := range b.ids {
		b.ids[i] = noID
	}
}

// follows reports whether o goes right after the entry the batch inserted
// last, before the one after it, and has a name neither has: then the
// index holds no object with o's key (the objects sharing a cluster,
// namespace and name are adjacent), and those two are o's neighbours.
func (b *batch) follows(o *object.Object) bool {
	prev, next := b.prev.o, b.next.o
	if prev == nil || sameName(prev, o) || object.CompareObjects(prev, o) >= 0 {
		return false
	}
	return next == nil || !sameName(o, next) && object.CompareObjects(o, next) < 0
}

// ranked records that e was ranked between lo and hi, and returns how
// many of the list's objects to leave room for right after e: as many
// as have been ranked right after one another up to e, at most those
// left.
func (b *batch) ranked(e, lo, hi entry) int {
	if lo.o == nil || lo.o != b.last {
		b.run = 0
	}
	b.prev, b.next, b.last = e, hi, e.o
	b.run++
	return min(b.run-1, b.left)
}

// forget drops what the batch knew of the primary order: it was changed
// other than by an insert it saw, or the lock was released.
func (b *batch) forget() { b.prev, b.next = entry{}, entry{} }

func sameName(a, b *object.Object) bool {
	return a.Name == b.Name && a.Namespace == b.Namespace && a.Cluster == b.Cluster
}
