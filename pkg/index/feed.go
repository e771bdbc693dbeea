package index

import (
	"context"
	"fmt"
	"strconv"

	"github.com/fleetcache/fleetcache/internal/changelog"
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
var ErrExpired = changelog.ErrExpired

// ErrFutureRevision means the requested revision is ahead of the index,
// typically a cursor from another index instance.
var ErrFutureRevision = changelog.ErrFuture

// Events returns the events with Revision > after, in order, at most limit
// of them (limit <= 0: all). It returns no events and no error when nothing
// happened after after, an error wrapping ErrFutureRevision when after is
// ahead of Revision(), and one wrapping ErrExpired when some event after
// after was already dropped from the retention window.
func (ix *Index) Events(after uint64, limit int) ([]Event, error) {
	events, err := ix.log.Since(after, limit)
	if err != nil {
		return nil, fmt.Errorf("index events: %w", err)
	}
	return events, nil
}

// Wait returns nil as soon as Revision() > after, or ctx.Err() if ctx ends
// first.
func (ix *Index) Wait(ctx context.Context, after uint64) error { return ix.log.Wait(ctx, after) }

// emitLocked advances the revision and records the change in the feed.
func (ix *Index) emitLocked(t EventType, o, old *Object) {
	ix.log.Append(Event{Revision: ix.log.Version() + 1, Type: t, Object: o, Old: old})
}
