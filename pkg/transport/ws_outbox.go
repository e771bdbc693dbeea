package transport

import (
	"context"
	"sync"
)

// outbox holds a connection's encoded messages for its writer. It is a
// bounded queue like a buffered channel, but the writer takes everything
// that waits at once, and a sender wakes the writer only when the outbox
// was empty: at a million messages a second, a channel's select per
// message and a wake-up per message were most of the cost of a message.
type outbox struct {
	// ready has a value when messages wait; only the writer receives.
	ready chan struct{}

	mu   sync.Mutex
	msgs []wsEncoded
	// space is closed when the writer takes the messages, for senders
	// that found the outbox full; nil when none did.
	space chan struct{}
}

func newOutbox() *outbox {
	return &outbox{ready: make(chan struct{}, 1)}
}

// put queues m, waiting while wsOutboxSize messages wait; false if ctx
// ended first.
func (o *outbox) put(ctx context.Context, m wsEncoded) bool {
	for {
		if ctx.Err() != nil {
			return false
		}
		o.mu.Lock()
		if len(o.msgs) < wsOutboxSize {
			o.msgs = append(o.msgs, m)
			first := len(o.msgs) == 1
			o.mu.Unlock()
			if first {
				select {
				case o.ready <- struct{}{}:
				default:
				}
			}
			return true
		}
		if o.space == nil {
			o.space = make(chan struct{})
		}
		space := o.space
		o.mu.Unlock()
		select {
		case <-space:
		case <-ctx.Done():
			return false
		}
	}
}

// take returns the messages that wait, in batch (emptied first), and
// makes room for senders.
func (o *outbox) take(batch []wsEncoded) []wsEncoded {
	o.mu.Lock()
	batch, o.msgs = o.msgs, batch[:0]
	if o.space != nil {
		close(o.space)
		o.space = nil
	}
	o.mu.Unlock()
	return batch
}
