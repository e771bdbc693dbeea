package transport

import (
	"context"
	"errors"
	"fmt"
	"io"

	"k8s.io/klog/v2"

	"github.com/fleetcache/fleetcache/pkg/graphql"
)

// streamEvent is one outcome of a subscription's Next: a payload, or the
// error that ends it. more says that another payload is ready, so a
// transport may write this one without flushing.
type streamEvent struct {
	res  *graphql.Result
	err  error
	more bool
}

// nextEvent calls sub.Next once.
func nextEvent(ctx context.Context, sub *graphql.Subscription) streamEvent {
	res, err := sub.Next(ctx)
	return streamEvent{res: res, err: err, more: err == nil && sub.Ready()}
}

// streamSink is how a streaming transport writes what a subscription
// produces; each method but next ends the subscription's stream.
type streamSink interface {
	// next writes a payload; an error stops the stream.
	next(res *graphql.Result, more bool) error
	// complete: the subscription completed, or the client closed it.
	complete()
	// endWith: the subscription ended with res's GraphQL errors
	// (CURSOR_EXPIRED).
	endWith(res *graphql.Result)
	// slowConsumer: the client did not keep up; err says by how much.
	slowConsumer(err error)
	// stopped: the server is shutting down.
	stopped()
	// failed: a bug; the server logged it.
	failed()
}

// deliver hands one outcome of Next to sink. It returns whether the
// stream goes on: false once the subscription ended, ctx ended, or sink
// could not write. This is the one place that decides how a subscription
// ends, for every streaming transport.
func deliver(ctx context.Context, log klog.Logger, ev streamEvent, sink streamSink) bool {
	switch {
	case ev.err == nil:
		if err := sink.next(ev.res, ev.more); err != nil {
			log.V(4).Info("Stream write failed", "err", err)
			return false
		}
		return true
	case errors.Is(ev.err, io.EOF):
		sink.complete()
	case errors.Is(ev.err, graphql.ErrEnded):
		res := ev.res
		if res == nil || len(res.Errors) == 0 {
			res = graphql.ErrorResult(graphql.CodeInternal, errors.New("the subscription ended"))
		}
		sink.endWith(res)
	case errors.Is(ev.err, graphql.ErrSlowConsumer):
		log.V(2).Info("Ending a slow consumer's subscription")
		sink.slowConsumer(fmt.Errorf("%w; resubscribe with since = the last cursor received", ev.err))
	case errors.Is(ev.err, graphql.ErrServerStopped):
		sink.stopped()
	case ctx.Err() != nil:
	default:
		log.Error(ev.err, "Subscription failed")
		sink.failed()
	}
	return false
}
