package informers

import (
	"container/heap"
	"context"
	"errors"
	"sync"
	"time"
)

// maxProbes bounds the probes in flight at once. A probe that is answered
// takes a few milliseconds; one that times out holds its place for
// ProbeTimeout, so many silent servers slow the probing of the others down
// to maxProbes per ProbeTimeout, never the other way round.
const maxProbes = 128

// prober probes the API servers of every cluster of a fleet from one
// goroutine, Start's, which keeps the clusters in a heap by the time of
// their next probe. Each probe runs in a goroutine of its own while it is in
// flight (at most maxProbes at once), so an idle cluster holds no goroutine
// for its probes. Clusters may be added before Start runs: they wait in the
// heap, and are probed once it does.
type prober struct {
	mu      sync.Mutex
	targets probeHeap
	started bool
	wake    chan struct{}
}

func newProber() *prober { return &prober{wake: make(chan struct{}, 1)} }

// probeTarget is one cluster's place in the prober.
type probeTarget struct {
	c   *Ingester
	ctx context.Context // the cluster's: it ends a probe in flight
	// Guarded by prober.mu:
	next    time.Time
	index   int  // in the heap; -1 while the probe runs or once removed
	now     bool // probe again as soon as the running probe ends
	removed bool
	// inflight counts the target's running probe (0 or 1); remove waits for it.
	inflight sync.WaitGroup
}

// add registers c, whose context is ctx, and probes it at once (once Start
// runs).
func (p *prober) add(ctx context.Context, c *Ingester) *probeTarget {
	t := &probeTarget{c: c, ctx: ctx, next: time.Now()}
	p.mu.Lock()
	heap.Push(&p.targets, t)
	p.mu.Unlock()
	signal(p.wake)
	return t
}

// remove unregisters t and waits for its probe in flight, so that nothing
// reports for the cluster afterwards.
func (p *prober) remove(t *probeTarget) {
	p.mu.Lock()
	t.removed = true
	if t.index >= 0 {
		heap.Remove(&p.targets, t.index)
	}
	p.mu.Unlock()
	t.inflight.Wait()
}

// probeNow asks for a probe of t as soon as possible.
func (p *prober) probeNow(t *probeTarget) {
	p.mu.Lock()
	switch {
	case t.removed:
	case t.index < 0:
		t.now = true // running
	default:
		t.next = time.Now()
		heap.Fix(&p.targets, t.index)
	}
	p.mu.Unlock()
	signal(p.wake)
}

// Start probes the registered clusters, each when due, until ctx ends;
// then it waits for the probes in flight and returns nil. It may be called
// once.
func (p *prober) Start(ctx context.Context) error {
	p.mu.Lock()
	started := p.started
	p.started = true
	p.mu.Unlock()
	if started {
		return errors.New("prober started twice")
	}
	var probes sync.WaitGroup
	defer probes.Wait()
	sem := make(chan struct{}, maxProbes)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		case <-p.wake:
		}
		for {
			t, wait := p.due()
			if t == nil {
				timer.Reset(wait)
				break
			}
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				p.finished(t, 0)
				return nil
			}
			probes.Go(func() {
				defer func() { <-sem }()
				p.finished(t, t.c.probe(t.ctx))
			})
		}
	}
}

// due takes the next target whose probe is due out of the heap, marked
// running, or returns nil and how long until the next one is due.
func (p *prober) due() (*probeTarget, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.targets) == 0 {
		return nil, time.Hour
	}
	if wait := time.Until(p.targets[0].next); wait > 0 {
		return nil, wait
	}
	t := heap.Pop(&p.targets).(*probeTarget)
	t.inflight.Add(1)
	return t, 0
}

// finished puts t back in the heap, due after interval, unless it was
// removed meanwhile.
func (p *prober) finished(t *probeTarget, interval time.Duration) {
	p.mu.Lock()
	if !t.removed {
		t.next = time.Now().Add(interval)
		if t.now {
			t.next, t.now = time.Now(), false
		}
		heap.Push(&p.targets, t)
	}
	p.mu.Unlock()
	t.inflight.Done()
	signal(p.wake)
}

// probeHeap orders targets by their next probe.
type probeHeap []*probeTarget

func (h probeHeap) Len() int           { return len(h) }
func (h probeHeap) Less(i, j int) bool { return h[i].next.Before(h[j].next) }
func (h probeHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *probeHeap) Push(x any) {
	t := x.(*probeTarget)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *probeHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	t.index = -1
	return t
}
