package index

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/fleetcache/fleetcache/pkg/index/feed"
	"github.com/fleetcache/fleetcache/pkg/index/object"
)

// What a snapshot of the index needs (pkg/warmstart writes it to a
// pkg/snapshot store and fills an index from it at start): the objects,
// and per stream its clocks and tombs, read together at one revision.

// Tomb is a deleted object the index keeps so that a resume from a
// cursor's clocks delivers the deletion (see Since): its last state, the
// resourceVersion of the clock that covers the deletion, and when it was
// deleted. RV 0 is a deletion after the stream's clock: the next clock
// covers it.
type Tomb struct {
	Object *object.Object
	RV     uint64
	At     time.Time
}

// StreamState is what the index holds of one stream besides its objects.
type StreamState struct {
	Stream
	// Clock, Since and Pruned are the stream's resourceVersions: its
	// changes are applied up to Clock, deletions before Since are
	// unknown, and those up to Pruned were dropped.
	Clock, Since, Pruned uint64
	// Removed: the cluster or its type left the index; the stream stays
	// while its tombs are retained.
	Removed bool
	// TombGen changes when the rvs of all the stream's tombs were
	// rewritten; TombBase numbers the oldest tomb the stream keeps among
	// all it ever had. Tombs are the kept tombs from number TombsFrom
	// on, oldest first.
	TombGen, TombBase, TombsFrom uint64
	Tombs                        []Tomb
}

// Checkpoint is the index read at one revision: the changes after a
// revision (ReadChanges), or every object (ReadAll); and the state of
// every stream whose resourceVersions are integers.
type Checkpoint struct {
	Epoch    string
	Revision uint64
	// Events are the changes after the revision asked, in order.
	Events []feed.Event[*object.Object]
	// Objects are every object, in Position order (ReadAll), or those of
	// the streams ReadChanges was asked for whole.
	Objects []*object.Object
	// Streams are sorted by CompareStreams.
	Streams []StreamState
}

// ReadChanges returns the changes after revision after and the state of
// every stream, read together. tombsFrom gives, for a stream and its
// TombGen, the number of the first tomb the caller wants (it holds those
// before); whole names the streams whose objects the caller wants whole,
// in Objects (those it does not hold yet). It wraps feed.ErrExpired when
// the changes after after are no longer retained.
func (ix *Index) ReadChanges(after uint64, tombsFrom func(s Stream, gen uint64) uint64, whole func(Stream) bool) (Checkpoint, error) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	events, err := ix.feed.Events(after, 0)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("read the changes after revision %d: %w", after, err)
	}
	cp := Checkpoint{Epoch: ix.epoch, Revision: ix.feed.Revision(), Events: events, Streams: ix.streamStatesLocked(tombsFrom)}
	pivot := new(object.Object)
	for _, st := range cp.Streams {
		if st.Removed || !whole(st.Stream) {
			continue
		}
		for _, e := range ix.entriesLocked(st.Cluster, st.Resource, pivot) {
			cp.Objects = append(cp.Objects, e.o)
		}
	}
	return cp, nil
}

// ReadAll returns every object and the state of every stream with all its
// kept tombs, read together.
func (ix *Index) ReadAll() Checkpoint {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	objects := make([]*object.Object, 0, ix.all.Len())
	ix.all.Ascend(func(e entry) bool {
		objects = append(objects, e.o)
		return true
	})
	return Checkpoint{Epoch: ix.epoch, Revision: ix.feed.Revision(), Objects: objects, Streams: ix.streamStatesLocked(nil)}
}

func (ix *Index) streamStatesLocked(tombsFrom func(Stream, uint64) uint64) []StreamState {
	out := make([]StreamState, 0, len(ix.streams))
	for k, s := range ix.streams {
		if s.incomparable {
			continue // it cannot be resumed from: not kept
		}
		st := StreamState{Stream: k, Clock: s.clock, Since: s.since, Pruned: s.pruned, Removed: s.removed,
			TombGen: s.tombGen, TombBase: s.tombBase, TombsFrom: s.tombBase}
		if tombsFrom != nil {
			st.TombsFrom = max(tombsFrom(k, s.tombGen), s.tombBase)
		}
		if i := st.TombsFrom - s.tombBase; i < uint64(len(s.tombs)) {
			st.Tombs = make([]Tomb, 0, uint64(len(s.tombs))-i)
			for _, t := range s.tombs[i:] {
				st.Tombs = append(st.Tombs, Tomb{Object: t.o, RV: t.rv, At: t.at})
			}
		}
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b StreamState) int { return CompareStreams(a.Stream, b.Stream) })
	return out
}

// ErrNotEmpty is returned by Restore for an index that holds objects or
// streams already.
var ErrNotEmpty = errors.New("the index is not empty")

// Restoring fills an empty index with what a snapshot kept: its streams
// (Stream), then their objects (Objects), in batches from any number of
// goroutines, so that decoding them is spread over the CPUs while one
// batch at a time is inserted; then Finish. It records no change in the
// feed: followers of the index start after it, and a cursor of another
// index resumes from its clocks (Since). An error leaves the index
// holding part of the snapshot: Abort empties it.
type Restoring struct {
	ix *Index
	// tombs are the restored tombs with their times, under ix.mu.
	tombs []heldTomb
}

type heldTomb struct {
	*object.Object
	at time.Time
}

// Restore returns a Restoring of ix, or ErrNotEmpty.
func (ix *Index) Restore() (*Restoring, error) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.all.Len() > 0 || len(ix.streams) > 0 || ix.feed.Revision() > 0 {
		return nil, ErrNotEmpty
	}
	return &Restoring{ix: ix}, nil
}

// Stream restores a stream with its clocks and tombs (TombGen, TombBase
// and TombsFrom are not read), before any of its objects.
func (r *Restoring) Stream(st StreamState) error {
	ix := r.ix
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if _, dup := ix.streams[st.Stream]; dup {
		return fmt.Errorf("restore: stream %s given twice", st.Stream)
	}
	s := &stream{clock: st.Clock, since: st.Since, pruned: st.Pruned, removed: st.Removed}
	if st.Clock != 0 {
		s.hist = []clockAt{{revision: 0, rv: st.Clock}}
	}
	for _, t := range st.Tombs {
		if t.Object == nil || t.Object.Cluster != st.Cluster || t.Object.Type == nil || t.Object.Type.Resource != st.Resource {
			return fmt.Errorf("restore: a tomb of stream %s is not of it", st.Stream)
		}
		s.tombs = append(s.tombs, tomb{o: t.Object, rv: t.RV, at: t.At})
		r.tombs = append(r.tombs, heldTomb{t.Object, t.At})
	}
	ix.streams[st.Stream] = s
	return nil
}

// Objects restores objects of streams given to Stream, which the index
// must not hold yet. The index must not be read before Finish, which
// ranks them.
func (r *Restoring) Objects(objs []Prepared) error {
	ix := r.ix
	ix.mu.Lock()
	defer ix.mu.Unlock()
	// Three goroutines share an insert's work, each on structures of its
	// own: the search tokens, the orders (B-trees), and the postings and
	// counts here. On one goroutine the decoding workers waited for them.
	type held struct {
		p  *Prepared
		id uint32
	}
	tokens, orders := make(chan held, len(objs)), make(chan held, len(objs))
	var wg sync.WaitGroup
	wg.Go(func() {
		for h := range tokens {
			ix.indexTokensLocked(h.p.Object, h.id, h.p.Text)
		}
	})
	var twice *object.Object
	wg.Go(func() {
		for h := range orders {
			if ix.orderLocked(h.p.Object, h.id) && twice == nil {
				twice = h.p.Object
			}
		}
	})
	var err error
	for i := range objs {
		o := objs[i].Object
		if s := ix.streams[Stream{o.Cluster, o.Type.Resource}]; s == nil || s.removed {
			err = fmt.Errorf("restore: object %s is of no stream given", o.Key())
			break
		}
		if !ix.admitLocked(o, nil) {
			continue
		}
		h := held{&objs[i], ix.ids.hold(o)}
		tokens <- h
		orders <- h
		ix.postLocked(o, h.id)
	}
	close(tokens)
	close(orders)
	wg.Wait()
	if err == nil && twice != nil {
		err = fmt.Errorf("restore: object %s given twice", twice.Key())
	}
	return err
}

// Abort ends a restore that failed: the index is left empty, as New made
// it, for the clusters to list.
func (r *Restoring) Abort() {
	ix := r.ix
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.emptyLocked()
	r.tombs = nil
}

// Finish ends the restore: the objects are ranked, the tombs of every
// stream are queued for pruning, oldest first, and those past
// TombstoneRetention go at once.
func (r *Restoring) Finish() {
	ix := r.ix
	ix.mu.Lock()
	defer ix.mu.Unlock()
	// Ranked once, in order, a stride apart: batches come in any order,
	// and ranking each object as it comes spread its neighbours' ranks
	// again and again (half a load's time at 1,000,000 objects).
	rank := uint64(0)
	ix.all.Ascend(func(e entry) bool {
		rank += rankStride
		ix.ranks.set(e.id, rank)
		return true
	})
	// As tombLocked queues them: pruning drops the oldest of the fleet
	// first.
	slices.SortStableFunc(r.tombs, func(a, b heldTomb) int { return a.at.Compare(b.at) })
	for _, t := range r.tombs {
		ix.tombs = append(ix.tombs, ix.streams[Stream{t.Cluster, t.Type.Resource}])
	}
	r.tombs = nil
	ix.pruneTombsLocked(time.Now())
}
