package graphql

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fleetcache/fleetcache/pkg/index"
)

// The hub hands the index's changes to the resourceEvents subscriptions.
//
// One goroutine (Server.Start) follows the index feed. Subscriptions are
// grouped twice: by filter (a filterGroup, whose matcher runs once per
// change for all its subscriptions) and, inside it, by what their payloads
// depend on (an execGroup: same document, operation and variables), whose
// members share one delivery per change, executed once by whichever member
// reads it first. Each member has a bounded queue of deliveries, grown as
// changes arrive and dropped when drained; a member whose queue is full is
// ended as a slow consumer, so that neither the hub nor the index waits for
// anyone. A member costs no goroutine: Next runs in the caller's.
//
// Positions: the hub has handed every change up to pos to its members, and
// none after. A member registers, under the write lock, at the hub's pos H
// with a start revision S (its since, or the index revision): the hub gives
// it the changes after max(S, H), and Next first replays (S, H] from the
// index feed itself, so the handoff has neither gap nor duplicate.

// hubBatch is how many changes the hub reads from the feed at a time.
const hubBatch = 256

// After a dispatch, the hub lingers before it reads the feed again, unless
// a full batch waits there: lingerPerDelivery for each delivery a change of
// the dispatch made on average (its fan-out), at most maxLinger. Waking a
// member and writing to its connection cost far more than one change more
// in the same wake-up: at 1,000 changes/s to 1,000 subscribers that each
// take every change, handing each change out as it comes is a million
// wake-ups and socket writes a second, more than 2 cores do; lingering 15
// ms makes it about 67,000, with 15 changes each. A change that wakes few
// is not worth waiting for (fan-out 10: 150 µs), and one after a quiet
// spell goes out at once. The fan-out, not the number of members woken,
// sets the linger: with filters that split the changes among the members,
// a longer linger wakes more members per dispatch without waking any of
// them less often. See docs/design.md, "Fan-out".
const (
	lingerPerDelivery = 15 * time.Microsecond
	maxLinger         = 15 * time.Millisecond
)

// ErrServerStopped ends the subscriptions of a Server whose Start returned:
// the server is shutting down. Clients should reconnect (to another
// replica) and resume from their last cursor.
var ErrServerStopped = errors.New("the server is shutting down")

// errClosed ends a member whose subscription was closed.
var errClosed = errors.New("subscription closed")

type hub struct {
	ix       Index
	limit    int           // Options.SubscriptionBuffer
	interval time.Duration // Options.HeartbeatInterval
	// epoch is when the hub was made: member times count from it.
	epoch time.Time
	// overflows counts the members ended as slow consumers.
	overflows prometheus.Counter
	// perDelivery and maxLinger set the linger after a dispatch:
	// lingerPerDelivery and maxLinger, but for tests.
	perDelivery, maxLinger time.Duration
	// delivered counts the deliveries of the dispatch in progress; run's
	// own.
	delivered int

	// pos is the revision of the last change handed to the members. Only
	// run writes it, with mu held for reading; register reads it with mu
	// held for writing, Next without lock.
	pos atomic.Uint64

	mu      sync.RWMutex
	filters map[string]*filterGroup
	list    []*filterGroup // the filters' groups, to iterate
	stopped bool

	// notify and overflowed are run's scratch: members to wake after a
	// batch, and members ended as slow consumers during it.
	notify, overflowed []*member
}

// filterGroup is the members with one filter.
type filterGroup struct {
	key   string
	match *index.Matcher
	execs map[string]*execGroup
	list  []*execGroup
	at    int // index in hub.list
}

// execGroup is the members of a filterGroup whose payloads are the same for
// the same change.
type execGroup struct {
	key     string
	fg      *filterGroup
	op      *operation
	members []*member
	at      int // index in filterGroup.list
}

// member is one subscription in the hub.
type member struct {
	eg *execGroup
	// after is the revision the member starts after: it gets the changes
	// with a greater revision.
	after uint64
	// at is its index in eg.members, -1 once removed; hub.mu guards it.
	at int
	// signal wakes Next; it is never closed.
	signal chan struct{}
	// notified marks a member already in hub.notify; run's own.
	notified bool
	// lastSent is when Next last returned a payload, in nanoseconds since
	// hub.epoch; beat asks Next for a heartbeat.
	lastSent atomic.Int64
	beat     atomic.Bool

	mu    sync.Mutex
	queue []*delivery
	head  int // queue[head:] are waiting
	// err, once set, ends the member: ErrSlowConsumer, ErrServerStopped,
	// errClosed, or ErrEnded with end.
	err error
	end *Result
}

// delivery is one change for the members of an execGroup; its payload is
// executed once.
type delivery struct {
	ev   resourceEvent
	once sync.Once
	res  *Result
}

// resourceEvent is the root value of the execution of one change: the
// ResourceEvent a resourceEvents subscription delivers.
type resourceEvent struct {
	typ      index.EventType
	obj      *index.Object
	revision uint64
}

func newHub(ix Index, limit int, interval time.Duration, overflows prometheus.Counter) *hub {
	h := &hub{ix: ix, limit: limit, interval: interval, epoch: time.Now(), overflows: overflows,
		perDelivery: lingerPerDelivery, maxLinger: maxLinger, filters: map[string]*filterGroup{}}
	h.pos.Store(ix.Revision())
	return h
}

// now returns the time in nanoseconds since h.epoch.
func (h *hub) now() int64 { return int64(time.Since(h.epoch)) }

// heartbeats wakes, until ctx ends, the members that sent nothing for
// HeartbeatInterval, so that their Next sends a heartbeat. One ticker for
// all members keeps timers out of Next; a heartbeat comes at most a
// quarter interval late.
func (h *hub) heartbeats(ctx context.Context) {
	t := time.NewTicker(max(h.interval/4, time.Millisecond))
	defer t.Stop()
	var due []*member
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := h.now()
		h.mu.RLock()
		for _, fg := range h.list {
			for _, eg := range fg.list {
				for _, m := range eg.members {
					if now-m.lastSent.Load() >= int64(h.interval) && !m.beat.Load() {
						m.beat.Store(true)
						due = append(due, m)
					}
				}
			}
		}
		h.mu.RUnlock()
		for i, m := range due {
			wakeup(m)
			due[i] = nil
		}
		due = due[:0]
	}
}

// classify returns what a change is to the filter's subscribers: its type
// and object, or 0 if it does not concern them. A modified object that
// starts matching is ADDED, one that stops is DELETED, with its new state.
func classify(m *index.Matcher, ev *index.Event) (index.EventType, *index.Object) {
	switch ev.Type {
	case index.Added, index.Deleted:
		if m.Matches(ev.Object) {
			return ev.Type, ev.Object
		}
	case index.Modified:
		now := m.Matches(ev.Object)
		before := ev.Old != nil && m.Matches(ev.Old)
		switch {
		case now && before:
			return index.Modified, ev.Object
		case now:
			return index.Added, ev.Object
		case before:
			return index.Deleted, ev.Object
		}
	}
	return 0, nil
}

// register adds a member for the changes after start; it returns the
// member and the hub's position, up to which the member must replay the
// feed itself. A stopped hub returns a member that has ended.
func (h *hub) register(fkey string, f index.Filter, ekey string, op *operation, start uint64) (*member, uint64) {
	m := &member{signal: make(chan struct{}, 1), at: -1}
	m.lastSent.Store(h.now())
	h.mu.Lock()
	defer h.mu.Unlock()
	pos := h.pos.Load()
	m.after = max(start, pos)
	if h.stopped {
		m.err = ErrServerStopped
		return m, pos
	}
	fg := h.filters[fkey]
	if fg == nil {
		fg = &filterGroup{key: fkey, match: index.NewMatcher(f), execs: map[string]*execGroup{}, at: len(h.list)}
		h.filters[fkey] = fg
		h.list = append(h.list, fg)
	}
	eg := fg.execs[ekey]
	if eg == nil {
		eg = &execGroup{key: ekey, fg: fg, op: op, at: len(fg.list)}
		fg.execs[ekey] = eg
		fg.list = append(fg.list, eg)
	}
	m.eg, m.at = eg, len(eg.members)
	eg.members = append(eg.members, m)
	return m, pos
}

// removeLocked takes m out of its groups, dropping groups that become
// empty. It does nothing if m is not in them.
func (h *hub) removeLocked(m *member) {
	if m.at < 0 {
		return
	}
	eg := m.eg
	last := len(eg.members) - 1
	eg.members[m.at] = eg.members[last]
	eg.members[m.at].at = m.at
	eg.members[last] = nil
	eg.members = eg.members[:last]
	m.at = -1
	if len(eg.members) > 0 {
		return
	}
	fg := eg.fg
	delete(fg.execs, eg.key)
	last = len(fg.list) - 1
	fg.list[eg.at] = fg.list[last]
	fg.list[eg.at].at = eg.at
	fg.list[last] = nil
	fg.list = fg.list[:last]
	if len(fg.list) > 0 {
		return
	}
	delete(h.filters, fg.key)
	last = len(h.list) - 1
	h.list[fg.at] = h.list[last]
	h.list[fg.at].at = fg.at
	h.list[last] = nil
	h.list = h.list[:last]
}

// remove takes m out of the hub: it gets no more changes.
func (h *hub) remove(m *member) {
	h.mu.Lock()
	h.removeLocked(m)
	h.mu.Unlock()
}

// run hands out the changes until ctx ends, then ends every member with
// ErrServerStopped.
func (h *hub) run(ctx context.Context) {
	defer h.stop()
	var next time.Time // of the next dispatch
	lingering := time.NewTimer(0)
	defer lingering.Stop()
	for ctx.Err() == nil {
		h.mu.RLock()
		if len(h.list) == 0 {
			// Nobody to hand changes to: skip them. A member that
			// registers later replays what it needs from the feed.
			h.pos.Store(h.ix.Revision())
		}
		h.mu.RUnlock()
		pos := h.pos.Load()
		evs, err := h.ix.Events(pos, hubBatch)
		if err != nil {
			// The feed dropped changes the hub had not handed out yet
			// (ErrExpired), or does not know pos (ErrFutureRevision,
			// which a real index never returns): the members have lost
			// changes, and must list again.
			h.expire(err)
			continue
		}
		if len(evs) == 0 {
			if err := h.ix.Wait(ctx, pos); err != nil {
				return
			}
			continue
		}
		if wait := time.Until(next); wait > 0 && len(evs) < hubBatch {
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

// dispatch hands a batch of changes to the members, then wakes those that
// got some and drops those that overflowed. It returns how many deliveries
// it made.
func (h *hub) dispatch(evs []index.Event) int {
	h.delivered = 0
	h.mu.RLock()
	for i := range evs {
		ev := &evs[i]
		for _, fg := range h.list {
			typ, obj := classify(fg.match, ev)
			if typ == 0 {
				continue
			}
			for _, eg := range fg.list {
				var d *delivery
				for _, m := range eg.members {
					if ev.Revision <= m.after {
						continue
					}
					if d == nil {
						d = &delivery{ev: resourceEvent{typ: typ, obj: obj, revision: ev.Revision}}
					}
					h.pushLocked(m, d)
				}
			}
		}
		h.pos.Store(ev.Revision)
	}
	h.mu.RUnlock()
	h.wake()
	return h.delivered
}

// pushLocked queues d for m, or ends m as a slow consumer if its queue is
// full. It is called with h.mu held for reading, by run only.
func (h *hub) pushLocked(m *member, d *delivery) {
	m.mu.Lock()
	overflow := false
	switch {
	case m.err != nil:
		m.mu.Unlock()
		return
	case len(m.queue)-m.head >= h.limit:
		m.err, m.queue, m.head = ErrSlowConsumer, nil, 0
		overflow = true
	default:
		if m.head > 0 && len(m.queue) == cap(m.queue) {
			// Reuse the drained front before growing.
			n := copy(m.queue, m.queue[m.head:])
			clear(m.queue[n:])
			m.queue, m.head = m.queue[:n], 0
		}
		m.queue = append(m.queue, d)
		h.delivered++
	}
	m.mu.Unlock()
	if overflow {
		h.overflowed = append(h.overflowed, m)
	}
	if !m.notified {
		m.notified = true
		h.notify = append(h.notify, m)
	}
}

// linger returns how long the hub waits after a dispatch of changes
// changes that made deliveries deliveries.
func (h *hub) linger(deliveries, changes int) time.Duration {
	return min(time.Duration(deliveries)*h.perDelivery/time.Duration(max(changes, 1)), h.maxLinger)
}

// wake signals the members that got changes, and removes the slow
// consumers.
func (h *hub) wake() {
	for i, m := range h.notify {
		m.notified = false
		wakeup(m)
		h.notify[i] = nil
	}
	h.notify = h.notify[:0]
	if len(h.overflowed) == 0 {
		return
	}
	h.overflows.Add(float64(len(h.overflowed)))
	h.mu.Lock()
	for _, m := range h.overflowed {
		h.removeLocked(m)
	}
	h.mu.Unlock()
	clear(h.overflowed)
	h.overflowed = h.overflowed[:0]
	if cap(h.overflowed) > 1024 {
		h.overflowed = nil
	}
}

// wakeup signals m's Next without blocking.
func wakeup(m *member) {
	select {
	case m.signal <- struct{}{}:
	default:
	}
}

// expire ends every member with CURSOR_EXPIRED and moves the hub to the
// current revision.
func (h *hub) expire(cause error) {
	res := cursorExpired(fmt.Errorf("the server fell behind the retained changes: %w", cause))
	h.endAll(ErrEnded, res, false)
}

// stop ends every member with ErrServerStopped and refuses new ones.
func (h *hub) stop() { h.endAll(ErrServerStopped, nil, true) }

func (h *hub) endAll(err error, res *Result, stop bool) {
	var ended []*member
	h.mu.Lock()
	for _, fg := range h.list {
		for _, eg := range fg.list {
			for _, m := range eg.members {
				m.at = -1
				ended = append(ended, m)
			}
		}
	}
	clear(h.filters)
	clear(h.list)
	h.list = h.list[:0]
	h.pos.Store(h.ix.Revision())
	h.stopped = h.stopped || stop
	h.mu.Unlock()
	for _, m := range ended {
		m.finish(err, res)
		wakeup(m)
	}
}

// finish ends m with err (and res, for ErrEnded) unless it has ended, and
// drops its queue.
func (m *member) finish(err error, res *Result) {
	m.mu.Lock()
	if m.err == nil {
		m.err, m.end = err, res
	}
	m.queue, m.head = nil, 0
	m.mu.Unlock()
}

// pop returns the next queued delivery, or the error that ended m.
func (m *member) pop() (*delivery, *Result, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return nil, m.end, m.err
	}
	if m.head == len(m.queue) {
		return nil, nil, nil
	}
	d := m.queue[m.head]
	m.queue[m.head] = nil
	m.head++
	if m.head == len(m.queue) {
		// Drained: an idle member keeps no buffer beyond a small one.
		if cap(m.queue) > 64 {
			m.queue = nil
		} else {
			m.queue = m.queue[:0]
		}
		m.head = 0
	}
	return d, nil, nil
}

// ready reports whether m has a delivery queued, or has ended.
func (m *member) ready() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.err != nil || m.head < len(m.queue)
}

// ended returns the error that ended m, if any, and its result.
func (m *member) ended() (*Result, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.end, m.err
}

// queued returns how many deliveries wait for m; for tests.
func (m *member) queued() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.queue) - m.head
}

// members returns how many members the hub has; for tests.
func (h *hub) members() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	n := 0
	for _, fg := range h.list {
		for _, eg := range fg.list {
			n += len(eg.members)
		}
	}
	return n
}

// groups returns how many filter and exec groups the hub has; for tests.
func (h *hub) groups() (filters, execs int) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for _, fg := range h.list {
		execs += len(fg.list)
	}
	return len(h.list), execs
}
