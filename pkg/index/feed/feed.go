package feed

import (
	"context"
	"fmt"
	"strconv"
	"time"

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

// Event is one applied change, in the feed at its revision. O is the
// object type: *object.Object in an Index's feed.
type Event[O any] struct {
	// Revision is the index revision the change produced.
	Revision uint64
	// Type says what happened to the object.
	Type EventType
	// Object is the new state; for Deleted, the last known state.
	Object O
	// Old is the previous state for Modified, the zero O otherwise.
	Old O
	// Time is when the change was recorded.
	Time time.Time
}

// ErrExpired means events after the requested revision are no longer
// retained: the follower must list again.
var ErrExpired = changelog.ErrExpired

// ErrFutureRevision means the requested revision is ahead of the feed,
// typically a cursor from another index instance.
var ErrFutureRevision = changelog.ErrFuture

// Feed keeps the newest events of an index, numbered by revision 1, 2,
// 3, … in the order they were recorded. The index records each change
// with its own write lock held, and reads Revision under its read lock,
// so that a reader sees the objects and their revision together. A Feed
// is safe for concurrent use.
type Feed[O any] struct {
	log *changelog.Log[Event[O]]
	// maxAge drops events older than it as new ones are recorded; 0
	// keeps them as long as retention allows.
	maxAge time.Duration
	// now is time.Now; tests set another clock.
	now func() time.Time
}

// New returns a Feed that keeps the newest retention events (at least 1).
func New[O any](retention int) *Feed[O] {
	return &Feed[O]{log: changelog.New[Event[O]](retention), now: time.Now}
}

// NewWithMaxAge returns a Feed that keeps the newest retention events (at
// least 1), and of those only the ones recorded within maxAge of the newest
// (0: no age limit). Old events are dropped as new ones are recorded: in a
// quiet fleet they stay until the next change.
func NewWithMaxAge[O any](retention int, maxAge time.Duration) *Feed[O] {
	return &Feed[O]{log: changelog.New[Event[O]](retention), maxAge: max(maxAge, 0), now: time.Now}
}

// Revision returns the revision of the last recorded event, 0 when none.
func (f *Feed[O]) Revision() uint64 { return f.log.Version() }

// Oldest returns the revision of the oldest retained event, Revision()+1
// when none is.
func (f *Feed[O]) Oldest() uint64 { return f.log.Oldest() }

// Record advances the revision and records the change at it. The index
// calls it with its write lock held.
func (f *Feed[O]) Record(t EventType, o, old O) {
	now := f.now()
	f.log.Append(Event[O]{Revision: f.log.Version() + 1, Type: t, Object: o, Old: old, Time: now})
	if f.maxAge > 0 {
		cutoff := now.Add(-f.maxAge)
		f.log.TrimWhile(func(e Event[O]) bool { return e.Time.Before(cutoff) })
	}
}

// RevisionBefore returns the revision of the last event recorded before t,
// as far as the retained events tell: Oldest()-1 when t is before them all.
// Events recorded at or after t are those after it.
func (f *Feed[O]) RevisionBefore(t time.Time) uint64 {
	return f.log.Search(func(e Event[O]) bool { return !e.Time.Before(t) }) - 1
}

// Events returns the events with Revision > after, in order, at most limit
// of them (limit <= 0: all). It returns no events and no error when nothing
// happened after after, an error wrapping ErrFutureRevision when after is
// ahead of Revision(), and one wrapping ErrExpired when some event after
// after was already dropped from the retention window.
func (f *Feed[O]) Events(after uint64, limit int) ([]Event[O], error) {
	events, err := f.log.Since(after, limit)
	if err != nil {
		return nil, fmt.Errorf("index events: %w", err)
	}
	return events, nil
}

// Wait returns nil as soon as Revision() > after, or ctx.Err() if ctx ends
// first.
func (f *Feed[O]) Wait(ctx context.Context, after uint64) error { return f.log.Wait(ctx, after) }
