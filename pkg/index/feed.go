package index

import (
	"context"
	"errors"
	"fmt"
	"strconv"
)

// EventType is the kind of change an Event records.
type EventType int

// The event types.
const (
	// Added means the object was not in the index before.
	Added EventType = iota + 1
	// Modified means the object replaced an older version with the same key
	// and UID.
	Modified
	// Deleted means the object left the index.
	Deleted
)

// String returns "ADDED", "MODIFIED" or "DELETED", as Kubernetes watch
// events name them.
func (t EventType) String() string {
	switch t {
	case Added:
		return "ADDED"
	case Modified:
		return "MODIFIED"
	case Deleted:
		return "DELETED"
	default:
		return "EventType(" + strconv.Itoa(int(t)) + ")"
	}
}

// Event is one applied change, in the feed at its revision.
type Event struct {
	// Revision is the index revision the change produced.
	Revision uint64
	// Type says what happened to the object.
	Type EventType
	// Object is the new state; for Deleted, the last known state.
	Object *Object
	// Old is the previous state for Modified, nil otherwise.
	Old *Object
}

// ErrExpired means events after the requested revision are no longer
// retained: the follower must list again.
var ErrExpired = errors.New("events no longer retained")

// ErrFutureRevision means the requested revision is ahead of the index,
// typically a cursor from another index instance.
var ErrFutureRevision = errors.New("revision is ahead of the index")

// Events returns the events with Revision > after, in order, at most limit
// of them (limit <= 0: all). It returns no events and no error when nothing
// happened after after, an error wrapping ErrFutureRevision when after is
// ahead of Revision(), and one wrapping ErrExpired when some event after
// after was already dropped from the retention window.
func (ix *Index) Events(after uint64, limit int) ([]Event, error) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	rev := ix.rev.Load()
	if after > rev {
		return nil, fmt.Errorf("events after revision %d: index is at revision %d: %w", after, rev, ErrFutureRevision)
	}
	if after == rev {
		return nil, nil
	}
	oldest := rev - uint64(len(ix.feed.buf)) + 1
	if after+1 < oldest {
		return nil, fmt.Errorf("events after revision %d: oldest retained revision is %d: %w", after, oldest, ErrExpired)
	}
	n := rev - after
	if limit > 0 && n > uint64(limit) {
		n = uint64(limit)
	}
	out := make([]Event, n)
	first := int(after + 1 - oldest)
	for i := range out {
		out[i] = ix.feed.at(first + i)
	}
	return out, nil
}

// Wait returns nil as soon as Revision() > after, or ctx.Err() if ctx ends
// first.
func (ix *Index) Wait(ctx context.Context, after uint64) error {
	for {
		if ix.rev.Load() > after {
			return nil
		}
		ix.mu.Lock()
		if ix.rev.Load() > after {
			ix.mu.Unlock()
			return nil
		}
		if ix.waitCh == nil {
			ix.waitCh = make(chan struct{})
		}
		ch := ix.waitCh
		ix.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			if ix.rev.Load() > after {
				return nil
			}
			return ctx.Err()
		}
	}
}

// emitLocked advances the revision and records the change in the feed.
func (ix *Index) emitLocked(t EventType, o, old *Object) {
	rev := ix.rev.Load() + 1
	ix.feed.push(Event{Revision: rev, Type: t, Object: o, Old: old})
	ix.rev.Store(rev)
}

// unlockAndWake releases the write lock taken for a change, then wakes the
// goroutines waiting in Wait, if any.
func (ix *Index) unlockAndWake() {
	ch := ix.waitCh
	ix.waitCh = nil
	ix.mu.Unlock()
	if ch != nil {
		close(ch)
	}
}

// ring keeps the newest max events.
type ring struct {
	buf   []Event
	start int // index in buf of the oldest event
	max   int
}

func (r *ring) push(e Event) {
	if len(r.buf) < r.max {
		if len(r.buf) == cap(r.buf) {
			// Grow as append would, but never past max.
			grown := make([]Event, len(r.buf), min(max(2*cap(r.buf), 64), r.max))
			copy(grown, r.buf)
			r.buf = grown
		}
		r.buf = append(r.buf, e)
		return
	}
	r.buf[r.start] = e
	if r.start++; r.start == len(r.buf) {
		r.start = 0
	}
}

// at returns the i-th oldest retained event.
func (r *ring) at(i int) Event {
	i += r.start
	if i >= len(r.buf) {
		i -= len(r.buf)
	}
	return r.buf[i]
}
