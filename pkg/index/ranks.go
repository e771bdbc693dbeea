package index

import "math"

// ranks gives every id a number that grows with the Position order of its
// object (ranks[a] < ranks[b] exactly when a's object sorts before b's),
// so that the planner orders the candidates of an intersection, and
// compares them with a cursor, from their ids alone, without reading the
// objects (firstOf in package planner). It is the classic answer to
// order maintenance: a new object takes a number between its neighbors';
// when there is none left, a window of neighbors around it is spread out
// again, a window twice as large at each try until its numbers can be
// spaced minGap apart. Guarded by Index.mu.
type ranks struct {
	r []uint64 // by id; a free id's is meaningless
	// lo and hi bound the ranks given to the ids of each block of
	// 1<<rankBlockBits ids, ever: they only widen, so they hold every
	// rank of the block, and a read that wants ranks outside them skips
	// the block (see Reader.RankBlock). Ids handed out as objects arrive
	// (a cluster's list, in Position order) share blocks with their
	// neighbours in the order, and a freed id goes to the next object,
	// often a replacement beside it: blocks' bounds stay narrow.
	lo, hi []uint64
	// rlo and rhi are lo and hi of each region of 1<<rankRegionBits ids
	// (the ids of one container of a bitmap), so that a read skips a
	// region at once rather than each of its blocks.
	rlo, rhi []uint64
	// respread counts the ranks spreads gave again (the tests read it).
	respread int
}

// rankBlockBits and rankRegionBits are the sizes of a block and of a
// region of ids, as powers of two.
const (
	rankBlockBits  = 10
	rankRegionBits = 16
)

const (
	// rankStride is the step between an object and a neighbor far
	// away: objects that arrive in order (a list) take numbers a stride
	// apart, 2^40 of them before the space runs out.
	rankStride = 1 << 24
	// minGap is the least gap that spreading a window leaves between
	// neighbors: room for 16 objects more between any two.
	minGap = 1 << 16
)

// of returns the rank of id.
func (rk *ranks) of(id uint32) uint64 { return rk.r[id] }

func (rk *ranks) set(id uint32, r uint64) {
	if int(id) >= len(rk.r) {
		rk.r = append(rk.r, make([]uint64, int(id)+1-len(rk.r))...)
	}
	rk.r[id] = r
	b := int(id >> rankBlockBits)
	for len(rk.lo) <= b {
		rk.lo, rk.hi = append(rk.lo, math.MaxUint64), append(rk.hi, 0)
	}
	rk.lo[b], rk.hi[b] = min(rk.lo[b], r), max(rk.hi[b], r)
	g := int(id >> rankRegionBits)
	for len(rk.rlo) <= g {
		rk.rlo, rk.rhi = append(rk.rlo, math.MaxUint64), append(rk.rhi, 0)
	}
	rk.rlo[g], rk.rhi[g] = min(rk.rlo[g], r), max(rk.rhi[g], r)
}

// spread returns about what share of the ranks in use the bounds of a
// block, and of a region, span, from up to rankSamples of each: near 0
// when ids were handed out in Position order, so that a read skips
// nearly every block; near 1 when each block holds ids from all over
// the order.
func (rk *ranks) spread() (block, region float64) {
	return boundsSpread(rk.lo, rk.hi), boundsSpread(rk.rlo, rk.rhi)
}

// rankSamples is how many bounds spread reads.
const rankSamples = 32

func boundsSpread(lo, hi []uint64) float64 {
	if len(lo) == 0 {
		return 1
	}
	step := max(len(lo)/rankSamples, 1)
	least, most := uint64(math.MaxUint64), uint64(0)
	var spans float64
	n := 0
	for i := 0; i < len(lo); i += step {
		if lo[i] > hi[i] {
			continue // a block whose ids never had a rank
		}
		least, most = min(least, lo[i]), max(most, hi[i])
		spans += float64(hi[i] - lo[i])
		n++
	}
	if n == 0 || most == least {
		return 1
	}
	return min(spans/float64(n)/float64(most-least), 1)
}

// rankLocked gives e, just put in the primary order, a rank between its
// neighbors'. With a batch b, it takes them from b when e follows the
// object b ranked last (as upsertLocked found), and tells b e's.
//
// A list's objects come in order, and most go into one gap, one after
// the other (a cluster listed after the next one in the order was): each
// taking half of what is left, as a single insert does, would use up a
// gap of 2^24 in 24 objects and spread a window again every few objects
// after that. An object that follows the one its batch ranked last takes
// instead a share that leaves room, evenly, for as many of the list's
// objects after it as have come in that run so far (room).
func (ix *Index) rankLocked(e entry, b *batch, follows bool) {
	var lo, hi entry
	if follows {
		lo, hi = b.prev, b.next
	} else {
		lo, hi = ix.neighborsLocked(e)
	}
	room := 0
	if b != nil {
		room = b.ranked(e, lo, hi)
	}
	loRank, hiRank := uint64(0), uint64(math.MaxUint64)
	if lo.o != nil {
		loRank = ix.ranks.of(lo.id)
	}
	if hi.o != nil {
		hiRank = ix.ranks.of(hi.id)
	}
	if gap := hiRank - loRank; gap >= uint64(room)+2 {
		step := min(gap/uint64(room+2), rankStride)
		if room == 0 || step >= minGap {
			r := loRank + step
			if lo.o == nil && hi.o != nil {
				r = hiRank - step
			}
			ix.ranks.set(e.id, r)
			return
		}
	}
	ix.spreadLocked(e, room)
}

// neighborsLocked returns the entries before and after e in the primary
// order, with nil objects where there is none.
func (ix *Index) neighborsLocked(e entry) (lo, hi entry) {
	ix.all.DescendLessOrEqual(e, func(x entry) bool {
		if x.id == e.id {
			return true
		}
		lo = x
		return false
	})
	ix.all.AscendGreaterOrEqual(e, func(x entry) bool {
		if x.id == e.id {
			return true
		}
		hi = x
		return false
	})
	return lo, hi
}

// spreadLocked gives new ranks, evenly spaced, to a window of objects
// around e (e among them), the smallest window whose neighbors' ranks
// leave minGap between its objects and room for 2*room objects more
// right after e: a run that needed room goes on for about as long again
// before it needs a spread, so that a run of n objects costs O(log n)
// spreads, not one every few objects.
func (ix *Index) spreadLocked(e entry, room int) {
	for k := 8; ; k *= 2 {
		var before, after []uint32
		lo, hi := uint64(0), uint64(math.MaxUint64)
		ix.all.DescendLessOrEqual(e, func(x entry) bool {
			if x.id == e.id {
				return true
			}
			if len(before) == k {
				lo = ix.ranks.of(x.id)
				return false
			}
			before = append(before, x.id)
			return true
		})
		ix.all.AscendGreaterOrEqual(e, func(x entry) bool {
			if x.id == e.id {
				return true
			}
			if len(after) == k {
				hi = ix.ranks.of(x.id)
				return false
			}
			after = append(after, x.id)
			return true
		})
		n := uint64(len(before) + 1 + 2*room + len(after))
		gap := (hi - lo) / (n + 1)
		whole := len(before) < k && len(after) < k
		if gap < minGap && !whole {
			continue
		}
		next := lo
		for i := len(before) - 1; i >= 0; i-- {
			next += gap
			ix.ranks.set(before[i], next)
		}
		next += gap
		ix.ranks.set(e.id, next)
		ix.ranks.respread += len(before) + 1 + len(after)
		next += gap * uint64(2*room)
		for _, id := range after {
			next += gap
			ix.ranks.set(id, next)
		}
		return
	}
}
