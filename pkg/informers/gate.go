package informers

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/fleetcache/fleetcache/pkg/health"
)

// listGate bounds how many lists run at once across a fleet (see
// Options.MaxConcurrentLists). A list holds its slot from its first request
// until the reflector has applied it to the index (runStore.Replace), so
// that the decoded responses of at most that many lists are in memory at
// once: starting 1,000 clusters costs about what running them does. Waiters
// are served in arrival order (a channel's senders queue).
type listGate struct {
	slots   chan struct{}
	why     string       // the reason a waiting type gives in health
	waiting atomic.Int64 // runs waiting for a slot
}

func newListGate(n int) *listGate {
	return &listGate{slots: make(chan struct{}, n),
		why: fmt.Sprintf("waiting for its turn to list (at most %d lists run at once in the fleet)", n)}
}

// takeSlot gives run a list slot, waiting for one if none is free (its type
// is reported waiting meanwhile). A run holds at most one: a run that holds
// one already (the next page of a list, a retried streaming list) goes on.
// The first slot a run gets starts its sync deadline: waiting for a turn is
// not slowness of the cluster's.
func (c *Ingester) takeSlot(ctx context.Context, run *typeRun) error {
	run.mu.Lock()
	held := run.slotHeld
	run.mu.Unlock()
	if held || c.gate == nil {
		c.startDeadline(run)
		return nil
	}
	select {
	case c.gate.slots <- struct{}{}:
	default:
		c.health.ResourceQueued(c.name, run.t.Resource, c.gate.why)
		c.gate.waiting.Add(1)
		select {
		case c.gate.slots <- struct{}{}:
			c.gate.waiting.Add(-1)
			c.health.ResourceListing(c.name, run.t.Resource)
		case <-ctx.Done():
			c.gate.waiting.Add(-1)
			return ctx.Err()
		}
	}
	run.mu.Lock()
	if err := run.ctx.Err(); err != nil {
		// client-go's list goroutine outlives its reflector: a run that
		// stopped gives back what it got (see startDeadline).
		run.mu.Unlock()
		<-c.gate.slots
		return err
	}
	run.slotHeld = true
	run.mu.Unlock()
	c.startDeadline(run)
	return nil
}

// releaseSlot gives back run's slot, if it holds one.
func (c *Ingester) releaseSlot(run *typeRun) {
	run.mu.Lock()
	held := run.slotHeld
	run.slotHeld = false
	run.mu.Unlock()
	if held {
		<-c.gate.slots
	}
}

// startDeadline starts run's sync deadline, once: when it passes before the
// run synced, the type is reported DEGRADED (it keeps trying) and its slot
// goes to the next list, so that a server that never ends a list (a
// streaming list without its final bookmark) holds no slot for good.
func (c *Ingester) startDeadline(run *typeRun) {
	run.mu.Lock()
	defer run.mu.Unlock()
	// A stopped run starts none: client-go's reflector returns when its
	// context ends while its list goroutine may still be here, and the
	// run's goroutines may be awaited already (run.wg). Its context ends
	// before the run's goroutine takes mu to stop the deadline, so an Add
	// under mu that sees the context alive happens while that goroutine
	// still counts.
	if run.deadline != nil || run.isSynced || run.ctx.Err() != nil {
		return
	}
	t := run.t
	// The callback is the run's, awaited with its goroutines (run.wg):
	// it counts from now until it returns, or until a Stop keeps it from
	// running (stopDeadlineLocked).
	run.wg.Add(1)
	run.deadline = time.AfterFunc(c.opts.SyncTimeout, func() {
		defer run.wg.Done()
		// Queued under run.mu, as markSynced queues its report: the error
		// never reaches health after the sync that makes it wrong.
		run.mu.Lock()
		if run.isSynced || run.ctx.Err() != nil {
			run.mu.Unlock()
			return
		}
		run.reports = append(run.reports, func() {
			c.health.ResourceError(c.name, t.Resource, t.KindName(),
				fmt.Errorf("%w: not synced %s after its list began", health.ErrSyncDeadline, c.opts.SyncTimeout))
		})
		run.mu.Unlock()
		run.runReports()
		c.releaseSlot(run)
	})
}

// gatedListWatch takes a list slot before each list, plain or streaming,
// and gives it back when the request fails; runStore.Replace gives it back
// once the list is applied.
type gatedListWatch struct {
	c   *Ingester
	run *typeRun
	lw  *listWatch
}

func (g *gatedListWatch) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	if list, ok, err := g.resumeList(ctx); ok {
		return list, err // no slot: nothing is listed
	}
	// Who the member is, for the snapshot: a failure leaves it unknown,
	// which only costs the next start a list.
	_, _ = g.c.memberID(ctx)
	if g.run.isInterrupted() {
		return g.lw.ListWithContext(ctx, opts) // parked until the run stops: no slot
	}
	if err := g.c.takeSlot(ctx, g.run); err != nil {
		return nil, err
	}
	list, err := g.lw.ListWithContext(ctx, opts)
	if err != nil {
		g.c.releaseSlot(g.run)
	}
	return list, err
}

func (g *gatedListWatch) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	streaming := opts.SendInitialEvents != nil && *opts.SendInitialEvents && !g.run.isInterrupted()
	if streaming {
		if err := g.c.takeSlot(ctx, g.run); err != nil {
			return nil, err
		}
	}
	w, err := g.lw.WatchWithContext(ctx, opts)
	if err != nil && streaming {
		g.c.releaseSlot(g.run)
	}
	return w, err
}
