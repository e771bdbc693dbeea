package index

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/fleetcache/fleetcache/pkg/index/feed"
	"github.com/fleetcache/fleetcache/pkg/index/object"
)

// Stream is one cluster's resource type: the unit whose changes a member
// API server orders by resourceVersion (KEP-5504 makes them comparable
// integers per resource type).
type Stream struct {
	Cluster  string
	Resource string
}

func (s Stream) String() string { return s.Cluster + "/" + s.Resource }

// Clock is a stream's position: every change of the stream up to
// resourceVersion RV is in the index.
type Clock struct {
	Stream Stream
	RV     uint64
}

// stream is what the index knows of one Stream's clock and deletions.
// Guarded by Index.mu.
type stream struct {
	// clock is the resourceVersion the stream's changes are applied up
	// to; since the first one (the first list's): deletions before it
	// are unknown.
	clock, since uint64
	// hist holds the clock after each feed revision that moved it, the
	// oldest dropped with the feed's, so that ClocksAt answers for every
	// retained revision.
	hist []clockAt
	// tombs are the stream's deleted objects, oldest first; those at the
	// end with rv 0 were deleted after the clock and take the next.
	tombs []tomb
	// pruned is the greatest rv of a dropped tomb: a resume from before
	// it would miss that deletion.
	pruned uint64
	// removed is set when the cluster or its resource left the index,
	// at feed revision removedAt; the stream stays while its tombs are
	// retained.
	removed   bool
	removedAt uint64
	// incomparable is set when a resourceVersion of the stream is not an
	// integer (an API server older than 1.35 may use any string): it
	// cannot be resumed from.
	incomparable bool
	// tombBase numbers tombs[0] among every tomb the stream ever had,
	// and tombGen counts the times the rvs of its kept tombs were all
	// rewritten: what a snapshot writer needs to copy only what is new
	// (persist.go). Only the rvs of the tombs at the end, those still
	// 0, change otherwise.
	tombBase, tombGen uint64
}

type clockAt struct {
	revision, rv uint64
}

// tomb is a deleted object: its last state and the resourceVersion of
// the stream's clock that covers the deletion.
type tomb struct {
	o  *object.Object
	rv uint64
	at time.Time
}

// removedRV is the rv of the tombs of a removed stream: later than every
// clock, so that each resume that names the stream delivers them.
const removedRV = math.MaxUint64

// ParseResourceVersion returns a member resourceVersion as the integer
// KEP-5504 says it is, and false when it is not one.
func ParseResourceVersion(rv string) (uint64, bool) {
	if rv == "" || rv == "0" || rv[0] == '0' {
		return 0, false
	}
	n, err := strconv.ParseUint(rv, 10, 64)
	return n, err == nil
}

// Progress records that the changes of cluster's resource are applied up
// to resourceVersion rv: after a watch event or bookmark, or once a list
// is applied. The deletions since the last Progress take rv.
func (ix *Index) Progress(cluster, resource, rv string) {
	n, ok := ParseResourceVersion(rv)
	ix.mu.Lock()
	defer ix.mu.Unlock()
	s := ix.streamLocked(Stream{cluster, resource})
	if !ok {
		s.incomparable = true
		return
	}
	if s.removed {
		// Back after a removal: a new history, from its first list,
		// whose cursors the old tombs concern no more (rv 1 is before
		// any since); they stay in ix.tombs' order and go as they age.
		for i := range s.tombs {
			s.tombs[i].rv = 1
		}
		*s = stream{tombs: s.tombs, tombBase: s.tombBase, tombGen: s.tombGen + 1}
	}
	if n <= s.clock {
		return // a relist of the same list, or an older bookmark
	}
	if s.since == 0 {
		s.since = n
	}
	s.clock = n
	for i := len(s.tombs) - 1; i >= 0 && s.tombs[i].rv == 0; i-- {
		s.tombs[i].rv = n
	}
	// The clock holds from the next revision on: what ClocksAt says of a
	// revision the feed has reached never changes, so every subscriber
	// gets the same cursor for the same event. A follower of the
	// revision of the change itself gets the clock before it, which a
	// resume elsewhere may repeat, never miss.
	rev := ix.feed.Revision() + 1
	if len(s.hist) == 0 {
		// The first clock (a first list): at once, so that a stream
		// that stays quiet is named by the cursors.
		rev--
	}
	if k := len(s.hist); k > 0 && s.hist[k-1].revision == rev {
		s.hist[k-1].rv = n
	} else {
		s.hist = append(s.hist, clockAt{rev, n})
	}
	ix.pruneHistLocked(s)
}

// streamLocked returns the stream of k, creating it if needed.
func (ix *Index) streamLocked(k Stream) *stream {
	s := ix.streams[k]
	if s == nil {
		s = &stream{}
		ix.streams[k] = s
	}
	return s
}

// tombLocked records the deletion of o, dropping the oldest tombs past
// Options.MaxTombstones.
func (ix *Index) tombLocked(o *object.Object, now time.Time) {
	s := ix.streamLocked(Stream{o.Cluster, o.Type.Resource})
	s.tombs = append(s.tombs, tomb{o: o, at: now})
	ix.tombs = append(ix.tombs, s)
	ix.pruneTombsLocked(now)
}

// pruneTombsLocked drops the oldest tombs, of every stream, while they
// are older than Options.TombstoneRetention or more than
// Options.MaxTombstones. ix.tombs holds the stream of each tomb in the
// order they were made, so its head is the oldest tomb of its stream.
func (ix *Index) pruneTombsLocked(now time.Time) {
	cut := now.Add(-ix.opts.TombstoneRetention)
	for ix.tombHead < len(ix.tombs) {
		s := ix.tombs[ix.tombHead]
		t := s.tombs[0]
		if len(ix.tombs)-ix.tombHead <= ix.opts.MaxTombstones && !t.at.Before(cut) {
			break
		}
		switch t.rv {
		case 0:
			// A deletion not yet covered by a clock: every cursor up to
			// the clock needed it.
			s.pruned = max(s.pruned, s.clock+1)
		default:
			s.pruned = max(s.pruned, t.rv)
		}
		s.tombs[0] = tomb{}
		s.tombs = s.tombs[1:]
		s.tombBase++
		ix.tombs[ix.tombHead] = nil
		ix.tombHead++
	}
	if ix.tombHead > 1024 && ix.tombHead > len(ix.tombs)/2 {
		ix.tombs = slices.Clone(ix.tombs[ix.tombHead:])
		ix.tombHead = 0
	}
}

// removeStreamsLocked marks the streams of cluster (of one resource, or
// all) removed: their objects are gone with no resourceVersion of the
// member to say when, so their tombs take removedRV.
func (ix *Index) removeStreamsLocked(cluster, resource string) {
	for k, s := range ix.streams {
		if k.Cluster != cluster || (resource != "" && k.Resource != resource) {
			continue
		}
		s.removed, s.removedAt = true, ix.feed.Revision()
		for i := len(s.tombs) - 1; i >= 0 && s.tombs[i].rv == 0; i-- {
			s.tombs[i].rv = removedRV
		}
	}
}

// pruneHistLocked drops s's clock history that the feed no longer
// retains, but the last clock before it.
func (ix *Index) pruneHistLocked(s *stream) {
	oldest := ix.feed.Oldest()
	i := 0
	for i+1 < len(s.hist) && s.hist[i+1].revision < oldest {
		i++
	}
	if i > 0 {
		s.hist = slices.Delete(s.hist, 0, i)
	}
}

// PruneTombstones drops the tombs older than Options.TombstoneRetention
// and the removed streams left with none; the application calls it now
// and then, as no deletion may come to prune them.
func (ix *Index) PruneTombstones(now time.Time) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.pruneTombsLocked(now)
	for k, s := range ix.streams {
		if s.removed && len(s.tombs) == 0 {
			delete(ix.streams, k)
		}
	}
}

// ClocksAt returns, in Stream order, the clock of each stream that
// selected accepts (nil: every stream) as it was when the feed's revision
// was rev, rev at most Revision(); streams without a clock are left out.
// A subscriber that has every event up to rev has every change up to
// these clocks: its cursor.
func (ix *Index) ClocksAt(rev uint64, selected func(Stream) bool) []Clock {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	var out []Clock
	named := map[Stream]bool{}
	for k, s := range ix.streams {
		if (s.removed && s.removedAt <= rev) || (selected != nil && !selected(k)) {
			continue
		}
		if s.incomparable {
			// Named at 0: only this index resumes it (from the
			// cursor's revision), any other expires it.
			out = append(out, Clock{Stream: k})
			named[k] = true
			continue
		}
		// The last clock recorded at or before rev.
		i, _ := slices.BinarySearchFunc(s.hist, rev+1, func(c clockAt, r uint64) int {
			return cmp.Compare(c.revision, r)
		})
		if i == 0 {
			continue
		}
		out = append(out, Clock{Stream: k, RV: s.hist[i-1].rv})
		named[k] = true
	}
	// A stream with objects but no clock yet is in its first list: the
	// follower may hold some of its objects, and a resume elsewhere can
	// only know what it must delete from a clock, so it gets 0, which
	// only an index in the same state resumes.
	for c, st := range ix.clusters {
		for r := range st.Resources {
			k := Stream{c, r}
			if !named[k] && (selected == nil || selected(k)) {
				out = append(out, Clock{Stream: k})
			}
		}
	}
	slices.SortFunc(out, func(a, b Clock) int { return CompareStreams(a.Stream, b.Stream) })
	return out
}

// CompareStreams orders streams by cluster, then resource: the order of
// ClocksAt and of a cursor's clocks.
func CompareStreams(a, b Stream) int {
	return cmp.Or(cmp.Compare(a.Cluster, b.Cluster), cmp.Compare(a.Resource, b.Resource))
}

// The errors of Since, wrapped with the stream's details.
var (
	// ErrBehind means the index has not yet applied a stream up to the
	// cursor's clock (a replica that is still listing or catching up):
	// wait for a Progress and ask again.
	ErrBehind = errors.New("the index is behind the cursor")
	// ErrHistoryGone means a deletion the resume would need is no longer
	// known: older than the retained tombstones, or before the index
	// first listed the stream, or its resourceVersions are not integers.
	ErrHistoryGone = errors.New("the history after the cursor is no longer retained")
)

// Since returns what changed after the clocks of a cursor in the streams
// that selected accepts (nil: all), as events that bring a follower that
// had every change up to those clocks to the index's state at the
// returned revision: a Deleted event for each object deleted since (its
// last state), then a Modified event for each object changed since, or
// Added for the objects of streams the clocks do not name (the follower
// has none of them). match selects the objects (nil: all). A follower
// then follows the feed from the revision.
//
// It returns ErrBehind when the index is behind a clock, and
// ErrHistoryGone when it cannot know every deletion since one.
func (ix *Index) Since(clocks []Clock, selected func(Stream) bool, match func(*object.Object) bool) ([]feed.Event[*object.Object], uint64, error) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	from := make(map[Stream]uint64, len(clocks))
	for _, c := range clocks {
		from[c.Stream] = c.RV
	}
	var deleted, changed []feed.Event[*object.Object]
	for k, s := range ix.streams {
		rv, named := from[k]
		if !named && (selected != nil && !selected(k) || s.removed) {
			continue
		}
		if named {
			switch {
			case s.incomparable:
				return nil, 0, fmt.Errorf("%w: %s has resourceVersions that are not integers", ErrHistoryGone, k)
			case s.removed:
			case s.clock < rv:
				return nil, 0, fmt.Errorf("%w: %s is at resourceVersion %d, the cursor at %d", ErrBehind, k, s.clock, rv)
			case rv < s.since:
				return nil, 0, fmt.Errorf("%w: %s is known from resourceVersion %d, the cursor is at %d", ErrHistoryGone, k, s.since, rv)
			case rv < s.pruned:
				return nil, 0, fmt.Errorf("%w: deletions in %s up to resourceVersion %d were dropped, the cursor is at %d", ErrHistoryGone, k, s.pruned, rv)
			}
			for _, t := range s.tombs {
				if (t.rv == 0 || t.rv > rv) && (match == nil || match(t.o)) {
					deleted = append(deleted, feed.Event[*object.Object]{Type: feed.Deleted, Object: t.o})
				}
			}
		}
		if s.removed {
			continue
		}
		typ := feed.Added
		if named {
			typ = feed.Modified
		}
		for _, e := range ix.entriesLocked(k.Cluster, k.Resource, new(object.Object)) {
			o := e.o
			if named {
				if n, ok := ParseResourceVersion(o.ResourceVersion); ok && n <= rv {
					continue
				}
			}
			if match == nil || match(o) {
				changed = append(changed, feed.Event[*object.Object]{Type: typ, Object: o})
			}
		}
	}
	for k := range from {
		if _, ok := ix.streams[k]; !ok && (selected == nil || selected(k)) {
			return nil, 0, fmt.Errorf("%w: %s is not in this index", ErrHistoryGone, k)
		}
	}
	byPosition := func(a, b feed.Event[*object.Object]) int { return object.CompareObjects(a.Object, b.Object) }
	slices.SortFunc(deleted, byPosition)
	slices.SortFunc(changed, byPosition)
	return append(deleted, changed...), ix.feed.Revision(), nil
}
