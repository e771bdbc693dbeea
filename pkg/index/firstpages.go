package index

import (
	lru "github.com/hashicorp/golang-lru/v2"
)

// A portal asks for the same first page again and again (a dashboard's
// list of failed Pods), and a posting of ids has no order: each such
// page ranked every id of the posting it could not skip, where a B-tree
// posting in Position order read its first few. firstPages keeps, by
// posting version (postings.Set.Version), the ids of a posting's first
// objects in Position order, as a page read them. A posting that changes
// takes a version no entry has, so an entry is never stale; entries of
// versions gone age out of the LRU.
type firstPages = lru.Cache[uint64, firstPage]

// firstPage is what firstPages keeps of a posting: its first ids by rank,
// at most need of them (fewer: all the posting holds).
type firstPage struct {
	need int
	ids  []uint32
}

const (
	// firstPagesSize is how many postings' first pages an Index keeps.
	firstPagesSize = 4096
	// maxFirstPage is the largest page kept: 256 ids, 1 KB, so that the
	// whole cache stays within 4 MB.
	maxFirstPage = 256
)

func newFirstPages() *firstPages {
	c, err := lru.New[uint64, firstPage](firstPagesSize)
	if err != nil {
		panic(err) // only for a size below 1
	}
	return c
}

// FirstByRank returns the first need ids of p in Position order (fewer:
// all of them), as KeepFirstByRank kept them, if p has not changed since;
// they are to be read, not modified.
func (r Reader) FirstByRank(p *Posting, need int) ([]uint32, bool) {
	if need > maxFirstPage {
		return nil, false
	}
	v, ok := p.Version()
	if !ok {
		return nil, false
	}
	e, ok := r.ix.firstPages.Get(v)
	if !ok || e.need < need {
		return nil, false
	}
	return e.ids[:min(need, len(e.ids)):min(need, len(e.ids))], true
}

// KeepFirstByRank keeps ids, the first need ids of p in Position order
// (fewer: all of them), for FirstByRank; the caller gives them up. It
// keeps nothing for a small posting, which is read again at no cost, or a
// page larger than maxFirstPage.
func (r Reader) KeepFirstByRank(p *Posting, need int, ids []uint32) {
	if need > maxFirstPage {
		return
	}
	if v, ok := p.Version(); ok {
		r.ix.firstPages.Add(v, firstPage{need: need, ids: ids})
	}
}
