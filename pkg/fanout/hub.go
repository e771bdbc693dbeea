package fanout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fleetcache/fleetcache/pkg/index/feed"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
)

// Positions: the hub has handed every change up to pos to its subscribers,
// and none after. A subscriber registers, under the write lock, at the
// hub's pos H with a start revision S (its since, or the index revision):
// the hub gives it the changes after max(S, H), and Next first replays
// (S, H] from the feed itself, so the handoff has neither gap nor
// duplicate.

// batch is how many changes the hub (and a replay) reads from the feed at
// a time.
const batch = 256

// Option defaults.
const (
	defaultBuffer            = 1024
	defaultHeartbeatInterval = 30 * time.Second
	// After a dispatch, the hub lingers before it reads the feed again,
	// unless a full batch waits there: LingerPerDelivery for each delivery
	// a change of the dispatch made on average (its fan-out), at most
	// MaxLinger. Waking a subscriber and writing to its connection cost
	// far more than one change more in the same wake-up: at 1,000
	// changes/s to 1,000 subscribers that each take every change, handing
	// each change out as it comes is a million wake-ups and socket writes
	// a second, more than 2 cores do; lingering 15 ms makes it about
	// 67,000, with 15 changes each. A change that wakes few is not worth
	// waiting for (fan-out 10: 150 µs), and one after a quiet spell goes
	// out at once. The fan-out, not the number of subscribers woken, sets
	// the linger: with filters that split the changes among the
	// subscribers, a longer linger wakes more per dispatch without waking
	// any of them less often. See docs/design.md, "Fan-out".
	defaultLingerPerDelivery = 15 * time.Microsecond
	defaultMaxLinger         = 15 * time.Millisecond
)

// Options configure a Hub. Each field's comment states its default, used
// when the field is zero.
type Options struct {
	// Buffer is how many deliveries may wait for one subscriber before it
	// is ended with ErrSlowConsumer. The queue grows as deliveries arrive,
	// not up front. Default 1024.
	Buffer int
	// HeartbeatInterval is how long a subscriber may get nothing before
	// Next returns a heartbeat. Default 30s.
	HeartbeatInterval time.Duration
	// LingerPerDelivery and MaxLinger set how long the hub waits after a
	// dispatch (see the package's design notes above). Defaults 15µs and
	// 15ms.
	LingerPerDelivery, MaxLinger time.Duration
	// Overflows counts the subscribers ended as slow consumers. Default
	// nil: not counted.
	Overflows prometheus.Counter
}

// WithDefaults returns o with the defaults of its unset fields filled in.
func (o Options) WithDefaults() Options {
	if o.Buffer <= 0 {
		o.Buffer = defaultBuffer
	}
	if o.HeartbeatInterval <= 0 {
		o.HeartbeatInterval = defaultHeartbeatInterval
	}
	if o.LingerPerDelivery <= 0 {
		o.LingerPerDelivery = defaultLingerPerDelivery
	}
	if o.MaxLinger <= 0 {
		o.MaxLinger = defaultMaxLinger
	}
	return o
}

// DefaultOptions returns the Options with every default filled in.
func DefaultOptions() Options { return Options{}.WithDefaults() }

// Feed is the change feed the hub follows; *index.Index implements it.
type Feed interface {
	Revision() uint64
	Events(after uint64, limit int) ([]feed.Event[*object.Object], error)
	Wait(ctx context.Context, after uint64) error
}

// The errors that end a subscriber, besides io.EOF (closed), the context's
// and *ExpiredError.
var (
	// ErrStopped: the hub's Start returned.
	ErrStopped = errors.New("the server is shutting down")
	// ErrSlowConsumer: more than Options.Buffer deliveries waited for the
	// subscriber.
	ErrSlowConsumer = errors.New("subscription ended: the client does not keep up with its events")
)

// ExpiredError ends a subscriber whose changes the feed no longer holds:
// the hub fell behind the retained changes, or a replay's start was
// dropped. The subscriber lists again and follows from the new revision.
type ExpiredError struct{ Err error }

func (e *ExpiredError) Error() string { return e.Err.Error() }
func (e *ExpiredError) Unwrap() error { return e.Err }

// Change is one change of the feed as a subscriber sees it.
type Change struct {
	// Type is what the change is to the subscriber's filter: a modified
	// object that starts matching is Added, one that stops is Deleted,
	// with its new state.
	Type     feed.EventType
	Object   *object.Object
	Revision uint64
	// Time is when the index recorded the change; zero for the ADDED and
	// DELETED of a cluster joining or leaving a cluster selector.
	Time time.Time
	// Resumed marks a change of the catch-up of a resume from a cursor
	// of another index (Request.CatchUp): until the catch-up ends, the
	// subscriber's position is still that cursor.
	Resumed bool
}

// Delivery is a change for a subscriber, or a heartbeat. The members of a
// group share one Delivery per change.
type Delivery[P any] struct {
	Change
	// Heartbeat marks a delivery without a change: the subscriber got
	// nothing for Options.HeartbeatInterval. Its Revision is the one the
	// subscriber has caught up with.
	Heartbeat bool
	once      sync.Once
	payload   P
}

// Payload returns the delivery's payload, made by build the first time a
// member asks for it.
func (d *Delivery[P]) Payload(build func(*Change) P) P {
	d.once.Do(func() { d.payload = build(&d.Change) })
	return d.payload
}

// Hub hands the feed's changes to its subscribers. G is what the members
// of a group share (the first member's); P is the payload of a delivery.
type Hub[G, P any] struct {
	feed Feed
	opts Options
	// epoch is when the hub was made: subscriber times count from it.
	epoch time.Time
	// started is set by the first Start.
	started atomic.Bool
	// delivered counts the deliveries of the dispatch in progress; run's
	// own.
	delivered int

	// pos is the revision of the last change handed to the subscribers.
	// Only run writes it, with mu held for reading; Subscribe reads it with
	// mu held for writing, Next without lock.
	pos atomic.Uint64

	mu      sync.RWMutex
	filters map[string]*filterGroup[G, P]
	list    []*filterGroup[G, P] // the filters' groups, to iterate
	stopped bool

	// notify and overflowed are run's scratch: subscribers to wake after a
	// batch, and subscribers ended as slow consumers during it.
	notify, overflowed []*Subscriber[G, P]
}

// filterGroup is the subscribers with one filter.
type filterGroup[G, P any] struct {
	key    string
	match  *planner.Matcher
	groups map[string]*group[G, P]
	list   []*group[G, P]
	at     int // index in Hub.list
}

// group is the subscribers of a filterGroup whose payloads are the same
// for the same change.
type group[G, P any] struct {
	key     string
	fg      *filterGroup[G, P]
	value   G
	members []*Subscriber[G, P]
	at      int // index in filterGroup.list
}

// New returns a hub that follows feed from its current revision.
func New[G, P any](feed Feed, opts Options) *Hub[G, P] {
	h := &Hub[G, P]{feed: feed, opts: opts.WithDefaults(), epoch: time.Now(), filters: map[string]*filterGroup[G, P]{}}
	h.pos.Store(feed.Revision())
	return h
}

// now returns the time in nanoseconds since h.epoch.
func (h *Hub[G, P]) now() int64 { return int64(time.Since(h.epoch)) }

// Start hands out the changes and heartbeats until ctx ends, then ends every
// subscriber with ErrStopped, refuses new ones and returns nil. Subscribe
// works before Start (changes wait in the feed). It may be called once.
func (h *Hub[G, P]) Start(ctx context.Context) error {
	if !h.started.CompareAndSwap(false, true) {
		return errors.New("fanout hub started twice")
	}
	hctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { h.heartbeats(hctx) })
	h.dispatchUntil(ctx)
	cancel()
	wg.Wait()
	h.endAll(ErrStopped, true)
	return nil
}

// heartbeats wakes, until ctx ends, the subscribers that got nothing for
// HeartbeatInterval, so that their Next returns a heartbeat. One ticker
// for all keeps timers out of Next; a heartbeat comes at most a quarter
// interval late.
func (h *Hub[G, P]) heartbeats(ctx context.Context) {
	interval := h.opts.HeartbeatInterval
	t := time.NewTicker(max(interval/4, time.Millisecond))
	defer t.Stop()
	var due []*Subscriber[G, P]
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := h.now()
		h.mu.RLock()
		for _, fg := range h.list {
			for _, g := range fg.list {
				for _, s := range g.members {
					if now-s.lastSent.Load() >= int64(interval) && !s.beat.Load() {
						s.beat.Store(true)
						due = append(due, s)
					}
				}
			}
		}
		h.mu.RUnlock()
		for i, s := range due {
			s.wake()
			due[i] = nil
		}
		due = due[:0]
	}
}

// Classify returns what a change is to the filter's subscribers: its type
// and object, or 0 if it does not concern them.
func Classify(m *planner.Matcher, ev *feed.Event[*object.Object]) (feed.EventType, *object.Object) {
	switch ev.Type {
	case feed.Added, feed.Deleted:
		if m.Matches(ev.Object) {
			return ev.Type, ev.Object
		}
	case feed.Modified:
		now := m.Matches(ev.Object)
		before := ev.Old != nil && m.Matches(ev.Old)
		switch {
		case now && before:
			return feed.Modified, ev.Object
		case now:
			return feed.Added, ev.Object
		case before:
			return feed.Deleted, ev.Object
		}
	}
	return 0, nil
}

// Request is what a subscriber asks of the hub.
type Request[G any] struct {
	// Filter selects the changes.
	Filter planner.Filter
	// Group and Value: subscribers of one filter with the same Group share
	// each change's Delivery, and the first one's Value.
	Group string
	Value G
	// Start is the revision the subscriber follows from: it gets the
	// changes after it (a since cursor's, or the feed's revision).
	Start uint64
	// CatchUp are changes delivered before those after Start: what a
	// resume from another index's cursor needs (index.Index.Since).
	CatchUp []Change
	// Visible, when set, hides the changes it returns false for: Next
	// skips them and they do not count as sent for heartbeats. It gets
	// Next's context.
	Visible func(context.Context, *Change) bool
}

// Subscribe adds a subscriber for the changes after r.Start. On a stopped
// hub it returns one that has ended with ErrStopped.
func (h *Hub[G, P]) Subscribe(r Request[G]) *Subscriber[G, P] {
	s := &Subscriber[G, P]{h: h, visible: r.Visible, value: r.Value, signal: make(chan struct{}, 1), at: -1, replayFrom: r.Start}
	for _, c := range r.CatchUp {
		c.Resumed = true
		s.replay = append(s.replay, &Delivery[P]{Change: c})
	}
	s.lastSent.Store(h.now())
	fkey := filterKey(r.Filter)
	h.mu.Lock()
	defer h.mu.Unlock()
	pos := h.pos.Load()
	s.after, s.replayTo = max(r.Start, pos), pos
	if h.stopped {
		s.err = ErrStopped
		return s
	}
	fg := h.filters[fkey]
	if fg == nil {
		fg = &filterGroup[G, P]{key: fkey, match: planner.NewMatcher(r.Filter), groups: map[string]*group[G, P]{}, at: len(h.list)}
		h.filters[fkey] = fg
		h.list = append(h.list, fg)
	}
	g := fg.groups[r.Group]
	if g == nil {
		g = &group[G, P]{key: r.Group, fg: fg, value: r.Value, at: len(fg.list)}
		fg.groups[r.Group] = g
		fg.list = append(fg.list, g)
	}
	s.g, s.at, s.value = g, len(g.members), g.value
	g.members = append(g.members, s)
	return s
}

// filterKey returns a string that is the same for equal filters.
func filterKey(f planner.Filter) string {
	sel := ""
	if f.Selector != nil {
		sel = f.Selector.String()
	}
	b, _ := json.Marshal([]any{sortedCopy(f.Clusters), sortedCopy(f.Kinds), sortedCopy(f.Resources), sortedCopy(f.Namespaces),
		sel, f.NameContains, f.OwnerUID, f.Fields.String(), f.Search.String()})
	return string(b)
}

func sortedCopy(vs []string) []string {
	return slices.Compact(slices.Sorted(slices.Values(vs)))
}

// removeLocked takes s out of its groups, dropping groups that become
// empty. It does nothing if s is not in them.
func (h *Hub[G, P]) removeLocked(s *Subscriber[G, P]) {
	if s.at < 0 {
		return
	}
	g := s.g
	g.members = swapRemove(g.members, s.at, func(m *Subscriber[G, P], i int) { m.at = i })
	s.at = -1
	if len(g.members) > 0 {
		return
	}
	fg := g.fg
	delete(fg.groups, g.key)
	fg.list = swapRemove(fg.list, g.at, func(g *group[G, P], i int) { g.at = i })
	if len(fg.list) > 0 {
		return
	}
	delete(h.filters, fg.key)
	h.list = swapRemove(h.list, fg.at, func(fg *filterGroup[G, P], i int) { fg.at = i })
}

// swapRemove removes list[i] by moving the last element there, telling it
// its new index with setAt.
func swapRemove[T any](list []T, i int, setAt func(T, int)) []T {
	last := len(list) - 1
	list[i] = list[last]
	setAt(list[i], i)
	var zero T
	list[last] = zero
	return list[:last]
}

// remove takes s out of the hub: it gets no more changes.
func (h *Hub[G, P]) remove(s *Subscriber[G, P]) {
	h.mu.Lock()
	h.removeLocked(s)
	h.mu.Unlock()
}

// dispatchUntil hands out the changes until ctx ends.
func (h *Hub[G, P]) dispatchUntil(ctx context.Context) {
	var next time.Time // of the next dispatch
	lingering := time.NewTimer(0)
	defer lingering.Stop()
	for ctx.Err() == nil {
		h.mu.RLock()
		if len(h.list) == 0 {
			// Nobody to hand changes to: skip them. A subscriber that
			// registers later replays what it needs from the feed.
			h.pos.Store(h.feed.Revision())
		}
		h.mu.RUnlock()
		pos := h.pos.Load()
		evs, err := h.feed.Events(pos, batch)
		if err != nil {
			// The feed dropped changes the hub had not handed out yet
			// (ErrExpired), or does not know pos (ErrFutureRevision,
			// which a real index never returns): the subscribers have
			// lost changes, and must list again.
			h.endAll(&ExpiredError{Err: fmt.Errorf("the server fell behind the retained changes: %w", err)}, false)
			continue
		}
		if len(evs) == 0 {
			if err := h.feed.Wait(ctx, pos); err != nil {
				return
			}
			continue
		}
		if wait := time.Until(next); wait > 0 && len(evs) < batch {
			lingering.Reset(wait)
			select {
			case <-ctx.Done():
				return
			case <-lingering.C:
			}
			continue // read again what came meanwhile
		}
		next = time.Now().Add(h.linger(h.dispatch(evs), len(evs)))
	}
}

// dispatch hands a batch of changes to the subscribers, then wakes those
// that got some and drops those that overflowed. It returns how many
// deliveries it made.
func (h *Hub[G, P]) dispatch(evs []feed.Event[*object.Object]) int {
	h.delivered = 0
	h.mu.RLock()
	for i := range evs {
		ev := &evs[i]
		for _, fg := range h.list {
			typ, obj := Classify(fg.match, ev)
			if typ == 0 {
				continue
			}
			for _, g := range fg.list {
				var d *Delivery[P]
				for _, s := range g.members {
					if ev.Revision <= s.after {
						continue
					}
					if d == nil {
						d = &Delivery[P]{Change: Change{Type: typ, Object: obj, Revision: ev.Revision, Time: ev.Time}}
					}
					h.pushLocked(s, d)
				}
			}
		}
		h.pos.Store(ev.Revision)
	}
	h.mu.RUnlock()
	h.wake()
	return h.delivered
}

// pushLocked queues d for s, or ends s as a slow consumer if its queue is
// full. It is called with h.mu held for reading, by run only.
func (h *Hub[G, P]) pushLocked(s *Subscriber[G, P], d *Delivery[P]) {
	s.mu.Lock()
	overflow := false
	switch {
	case s.err != nil:
		s.mu.Unlock()
		return
	case len(s.queue)-s.head >= h.opts.Buffer:
		s.err, s.queue, s.head = ErrSlowConsumer, nil, 0
		overflow = true
	default:
		if s.head > 0 && len(s.queue) == cap(s.queue) {
			// Reuse the drained front before growing.
			n := copy(s.queue, s.queue[s.head:])
			clear(s.queue[n:])
			s.queue, s.head = s.queue[:n], 0
		}
		s.queue = append(s.queue, d)
		h.delivered++
	}
	s.mu.Unlock()
	if overflow {
		h.overflowed = append(h.overflowed, s)
	}
	if !s.notified {
		s.notified = true
		h.notify = append(h.notify, s)
	}
}

// linger returns how long the hub waits after a dispatch of changes
// changes that made deliveries deliveries.
func (h *Hub[G, P]) linger(deliveries, changes int) time.Duration {
	return min(time.Duration(deliveries)*h.opts.LingerPerDelivery/time.Duration(max(changes, 1)), h.opts.MaxLinger)
}

// wake signals the subscribers that got changes, and removes the slow
// consumers.
func (h *Hub[G, P]) wake() {
	for i, s := range h.notify {
		s.notified = false
		s.wake()
		h.notify[i] = nil
	}
	h.notify = h.notify[:0]
	if len(h.overflowed) == 0 {
		return
	}
	if h.opts.Overflows != nil {
		h.opts.Overflows.Add(float64(len(h.overflowed)))
	}
	h.mu.Lock()
	for _, s := range h.overflowed {
		h.removeLocked(s)
	}
	h.mu.Unlock()
	clear(h.overflowed)
	h.overflowed = h.overflowed[:0]
	if cap(h.overflowed) > 1024 {
		h.overflowed = nil
	}
}

// endAll ends every subscriber with err and moves the hub to the feed's
// revision; stop also refuses new subscribers.
func (h *Hub[G, P]) endAll(err error, stop bool) {
	var ended []*Subscriber[G, P]
	h.mu.Lock()
	for _, fg := range h.list {
		for _, g := range fg.list {
			for _, s := range g.members {
				s.at = -1
				ended = append(ended, s)
			}
		}
	}
	clear(h.filters)
	clear(h.list)
	h.list = h.list[:0]
	h.pos.Store(h.feed.Revision())
	h.stopped = h.stopped || stop
	h.mu.Unlock()
	for _, s := range ended {
		s.finish(err)
		s.wake()
	}
}

// Subscribers returns how many subscribers the hub has.
func (h *Hub[G, P]) Subscribers() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	n := 0
	for _, fg := range h.list {
		for _, g := range fg.list {
			n += len(g.members)
		}
	}
	return n
}

// Groups returns how many filters and groups the hub has.
func (h *Hub[G, P]) Groups() (filters, groups int) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for _, fg := range h.list {
		groups += len(fg.list)
	}
	return len(h.list), groups
}

// Queued returns how many deliveries wait for the subscribers.
func (h *Hub[G, P]) Queued() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	n := 0
	for _, fg := range h.list {
		for _, g := range fg.list {
			for _, s := range g.members {
				n += s.queued()
			}
		}
	}
	return n
}
