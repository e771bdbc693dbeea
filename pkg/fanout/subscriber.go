package fanout

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
)

// Subscriber is one subscription in the hub. Next must not be called
// concurrently with itself or Ready; Close may be called at any time.
type Subscriber[G, P any] struct {
	h       *Hub[G, P]
	g       *group[G, P]
	value   G
	visible func(context.Context, *Change) bool
	// after is the revision the subscriber starts after: the hub gives it
	// the changes with a greater revision.
	after uint64
	// at is its index in g.members, -1 once removed; Hub.mu guards it.
	at int
	// signal wakes Next; it is never closed.
	signal chan struct{}
	// notified marks a subscriber already in Hub.notify; run's own.
	notified bool
	// lastSent is when Next last returned a delivery, in nanoseconds since
	// Hub.epoch; beat asks Next for a heartbeat.
	lastSent atomic.Int64
	beat     atomic.Bool

	// replayFrom and replayTo bound the changes Next replays from the feed
	// before it takes the queue: (replayFrom, replayTo]. Next's own.
	replayFrom, replayTo uint64
	replay               []*Delivery[P] // read from the feed, not yet returned

	mu    sync.Mutex
	queue []*Delivery[P]
	head  int // queue[head:] are waiting
	// err, once set, ends the subscriber.
	err error
}

// Value returns the value its group shares: the first member's.
func (s *Subscriber[G, P]) Value() G { return s.value }

// Next blocks until the next delivery (a change, or a heartbeat) or the
// end:
//
//	(d, nil)                a delivery
//	(nil, io.EOF)           the subscriber was closed
//	(nil, *ExpiredError)    the changes to replay, or to hand out, were dropped
//	(nil, ErrSlowConsumer)  its queue overflowed
//	(nil, ErrStopped)       the hub stopped
//	(nil, ctx.Err())        ctx ended; Next may be called again
func (s *Subscriber[G, P]) Next(ctx context.Context) (*Delivery[P], error) {
	h := s.h
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		pos := h.pos.Load()
		d, again, err := s.take()
		switch {
		case err != nil:
			return nil, err
		case d != nil:
			if s.visible != nil && !s.visible(ctx, &d.Change) {
				continue
			}
			s.lastSent.Store(h.now())
			return d, nil
		case again:
			continue
		}
		// Idle: every change up to pos that concerns the subscriber has
		// been returned. The hub's heartbeats goroutine wakes Next (and
		// sets beat) when a heartbeat is due.
		s.beat.Store(false)
		if h.now()-s.lastSent.Load() >= int64(h.opts.HeartbeatInterval) {
			s.lastSent.Store(h.now())
			return &Delivery[P]{Change: Change{Revision: max(pos, s.after)}, Heartbeat: true}, nil
		}
		select {
		case <-s.signal:
		case <-ctx.Done():
		}
	}
}

// replaying reports whether changes before the hub's position are left to
// replay.
func (s *Subscriber[G, P]) replaying() bool {
	return len(s.replay) > 0 || s.replayFrom < s.replayTo
}

// take returns the next delivery, replayed or queued, if there is one;
// again when it read the feed to replay and found none yet.
func (s *Subscriber[G, P]) take() (d *Delivery[P], again bool, err error) {
	if !s.replaying() {
		d, err := s.pop()
		return d, false, err
	}
	if err := s.ended(); err != nil {
		return nil, false, err
	}
	if len(s.replay) == 0 {
		if err := s.readReplay(); err != nil {
			s.finish(&ExpiredError{Err: fmt.Errorf("since: %w", err)})
			s.h.remove(s)
		}
		return nil, true, nil
	}
	d = s.replay[0]
	s.replay[0] = nil
	s.replay = s.replay[1:]
	return d, false, nil
}

// readReplay reads the next changes to replay from the feed.
func (s *Subscriber[G, P]) readReplay() error {
	evs, err := s.h.feed.Events(s.replayFrom, batch)
	if err != nil {
		return err
	}
	match := s.g.fg.match
	for i := range evs {
		ev := &evs[i]
		if ev.Revision > s.replayTo {
			break
		}
		s.replayFrom = ev.Revision
		if typ, obj := Classify(match, ev); typ != 0 {
			s.replay = append(s.replay, &Delivery[P]{Change: Change{Type: typ, Object: obj, Revision: ev.Revision, Time: ev.Time}})
		}
	}
	if len(evs) == 0 {
		// Cannot happen: replayTo is at most the feed's revision.
		s.replayFrom = s.replayTo
	}
	return nil
}

// Ready reports whether Next would return at once; false when unsure.
func (s *Subscriber[G, P]) Ready() bool {
	if s.replaying() {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err != nil || s.head < len(s.queue)
}

// Close takes the subscriber out of the hub; a Next waiting returns
// io.EOF. It is safe to call twice.
func (s *Subscriber[G, P]) Close() {
	s.h.remove(s)
	s.finish(io.EOF)
	s.wake()
}

// wake signals Next without blocking.
func (s *Subscriber[G, P]) wake() {
	select {
	case s.signal <- struct{}{}:
	default:
	}
}

// finish ends s with err unless it has ended, and drops its queue.
func (s *Subscriber[G, P]) finish(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.queue, s.head = nil, 0
	s.mu.Unlock()
}

// pop returns the next queued delivery, or the error that ended s.
func (s *Subscriber[G, P]) pop() (*Delivery[P], error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return nil, s.err
	}
	if s.head == len(s.queue) {
		return nil, nil
	}
	d := s.queue[s.head]
	s.queue[s.head] = nil
	s.head++
	if s.head == len(s.queue) {
		// Drained: an idle subscriber keeps no buffer beyond a small one.
		if cap(s.queue) > 64 {
			s.queue = nil
		} else {
			s.queue = s.queue[:0]
		}
		s.head = 0
	}
	return d, nil
}

// ended returns the error that ended s, if any.
func (s *Subscriber[G, P]) ended() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// queued returns how many deliveries wait for s.
func (s *Subscriber[G, P]) queued() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue) - s.head
}
