package wsconn

import (
	"context"
	"sync"
)

// outbox holds a connection's encoded messages for its writer, and the
// pongs that answer the client's pings. For messages it is a bounded queue
// like a buffered channel, but the writer takes everything that waits at
// once, and a sender wakes the writer only when the outbox was empty: at a
// million messages a second, a channel's select per message and a wake-up
// per message were most of the cost of a message. Pongs never wait for
// room, so that the reader never blocks on the writer.
type outbox struct {
	// ready has a value when messages or pongs wait; only the writer
	// receives.
	ready chan struct{}

	// size bounds msgs (Options.OutboxSize).
	size int

	mu   sync.Mutex
	msgs []Message
	// space is closed when the writer takes the messages, for senders
	// that found the outbox full; nil when none did.
	space chan struct{}
	// pongs are the payloads of the pongs to send, at most
	// maxPendingPongs.
	pongs [][]byte
}

// maxPendingPongs bounds the pongs that wait for the writer. Beyond it, a
// ping's pong replaces the last one that waits: RFC 6455 (section 5.5.3)
// lets a server answer only the latest of the pings it has not answered
// yet, and a client that floods pings cannot make the server hold more.
const maxPendingPongs = 8

func newOutbox(size int) *outbox {
	return &outbox{ready: make(chan struct{}, 1), size: size}
}

// put queues m, waiting while size messages wait; false if ctx ended, or
// stop was closed, first.
func (o *outbox) put(ctx context.Context, stop <-chan struct{}, m Message) bool {
	for {
		if ctx.Err() != nil {
			return false
		}
		select {
		case <-stop:
			return false
		default:
		}
		o.mu.Lock()
		if len(o.msgs) < o.size {
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
		case <-stop:
			return false
		}
	}
}

// putPong queues a pong with a copy of payload, and wakes the writer.
func (o *outbox) putPong(payload []byte) {
	pong := append([]byte(nil), payload...)
	o.mu.Lock()
	if len(o.pongs) < maxPendingPongs {
		o.pongs = append(o.pongs, pong)
	} else {
		o.pongs[len(o.pongs)-1] = pong
	}
	o.mu.Unlock()
	select {
	case o.ready <- struct{}{}:
	default:
	}
}

// take returns the pongs and the messages that wait, in pongs and batch
// (emptied first), and makes room for senders.
func (o *outbox) take(pongs [][]byte, batch []Message) ([][]byte, []Message) {
	o.mu.Lock()
	batch, o.msgs = o.msgs, batch[:0]
	if len(o.pongs) > 0 {
		pongs, o.pongs = o.pongs, pongs[:0]
	}
	if o.space != nil {
		close(o.space)
		o.space = nil
	}
	o.mu.Unlock()
	return pongs, batch
}
