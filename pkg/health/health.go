package health

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fleetcache/fleetcache/internal/changelog"
)

// Status is the sync status of a cluster or of one of its resource types.
type Status string

// The statuses, in the order a healthy cluster passes them.
const (
	Pending      Status = "PENDING"
	Syncing      Status = "SYNCING"
	Synced       Status = "SYNCED"
	Degraded     Status = "DEGRADED"
	Disconnected Status = "DISCONNECTED"
)

// ResourceStatus is the state of one resource type of one cluster.
type ResourceStatus struct {
	Resource      string // kubectl name: "deployments.apps"
	Kind          string
	Status        Status
	ObjectCount   int
	LastError     string
	LastErrorTime time.Time
	LastSyncTime  time.Time // when the last list was applied to the index
	LastEventTime time.Time // when the last object change arrived
	WatchRestarts int       // watches resumed from a resourceVersion
	Relists       int       // full lists after the initial one (410 Gone, restarts)
	WatchExpired  int       // watches refused with 410 Gone: their resourceVersion was compacted
	// CurrentAsOf is the last moment the type's data was known current:
	// the time of reading while it is (Status SYNCED), frozen when its
	// watch broke; zero if it never was (docs/operations.md, "Freshness").
	CurrentAsOf time.Time
	// Reason says why a type that has synced before is not current now
	// ("watch interrupted", "410 Gone", ...); empty when it is current.
	Reason string
	// SyncStartTime is when the informer of the type last started listing.
	SyncStartTime time.Time
	// InitialSyncDuration is how long the last initial list took, from
	// SyncStartTime to LastSyncTime; zero until the type has synced.
	InitialSyncDuration time.Duration
	// Events counts the object changes the informer delivered to the
	// index, by type; the objects of every (re)list count too.
	Events EventCounts
	// MetadataOnly counts the objects the index holds without their body
	// and Refused those it did not store, under its memory budget
	// (index.Options.MemoryBudget); read, as ObjectCount, from the index
	// when it implements Degrader.
	MetadataOnly int
	Refused      uint64
}

// EventType is the type of an object change an informer delivered.
type EventType uint8

// The event types, as Kubernetes watches name them.
const (
	EventAdded EventType = iota
	EventModified
	EventDeleted
)

// String returns the watch event name: ADDED, MODIFIED or DELETED.
func (e EventType) String() string {
	switch e {
	case EventAdded:
		return "ADDED"
	case EventModified:
		return "MODIFIED"
	case EventDeleted:
		return "DELETED"
	}
	return fmt.Sprintf("EventType(%d)", uint8(e))
}

// EventCounts counts object changes by EventType.
type EventCounts struct {
	Added, Modified, Deleted uint64
}

// ClusterStatus is the state of one cluster.
type ClusterStatus struct {
	Name         string
	Status       Status
	Message      string // why the cluster is not SYNCED; empty when it is
	Stale        bool   // the cluster is unreachable and its objects are the last known state
	Unconfigured bool   // its source gives no usable configuration: it does not run (see ConfigError)
	// Server is the URL of its API server and Version the Kubernetes
	// version it reported (its /version's gitVersion), empty until known
	// (see Identify).
	Server, Version string
	// MemberID identifies the member cluster itself, whatever its name or
	// URL: the UID of its kube-system namespace, empty until read or where
	// it cannot be (see SetMemberID). A cluster rebuilt under the same name
	// has another.
	MemberID      string
	LastSyncTime  time.Time
	LastEventTime time.Time
	ObjectCount   int
	// CurrentAsOf is the earliest CurrentAsOf of its types: the last moment
	// all of the cluster's data was known current. Zero while a type has
	// never been current; types that fail with an API error (forbidden, not
	// served) hold no data and do not count.
	CurrentAsOf time.Time
	Resources   []ResourceStatus // sorted by Resource
	// ChangeRate is the object events per second that reached the cache
	// from the cluster in each of the last Options.ChangeRateIntervals
	// complete intervals of Options.ChangeRateInterval, oldest first (the
	// interval in progress is left out). The objects of a (re)list count, as
	// in ResourceStatus.Events.
	ChangeRate []float64
}

// Change is one recorded change of a cluster's status.
type Change struct {
	Version uint64
	Cluster ClusterStatus // ObjectCount fields hold the counts at read time
	Removed bool          // the cluster was removed; Cluster holds its last status
}

// Counter gives the number of cached objects; the global index implements it.
type Counter interface {
	ObjectCount(cluster, resource string) int
}

// Degrader tells how many objects of a type the index degraded under its
// memory budget; a Counter that implements it fills
// ResourceStatus.MetadataOnly and Refused.
type Degrader interface {
	Degraded(cluster, resource string) (metadataOnly int, refused uint64)
}

// ErrExpired means the changes after the requested version are no longer retained.
var ErrExpired = changelog.ErrExpired

// Options configure a Tracker. Each field's comment states its default,
// used when the field is zero; DefaultOptions returns them all.
type Options struct {
	// Retention is how many status changes are kept for followers. Default 1024.
	Retention int
	// Now returns the current time. Default time.Now.
	Now func() time.Time
	// ChangeRateInterval is the length of the intervals of
	// ClusterStatus.ChangeRate. Default 10s.
	ChangeRateInterval time.Duration
	// ChangeRateIntervals is how many intervals ClusterStatus.ChangeRate
	// holds. Default 30 (five minutes of 10 s).
	ChangeRateIntervals int
	// HistoryWindow is how far back History keeps each cluster's statuses:
	// a period that ended before it is dropped. Default 24h.
	HistoryWindow time.Duration
	// HistoryPeriods bounds the periods History keeps per cluster, the
	// oldest dropped first, so that a flapping cluster costs little.
	// Default 200.
	HistoryPeriods int
}

// Tracker derives and records the sync health of every cluster. It is safe
// for concurrent use.
//
// Its locks are sharded per cluster, so that the reports of hundreds of
// clusters do not wait for each other: a report of one cluster holds mu for
// reading and that cluster's own mutex. Adding or removing a cluster and
// reading every cluster at once (Clusters) hold mu for writing. Object
// events take no lock at all (EventCounter).
type Tracker struct {
	counts Counter
	opts   Options

	mu       sync.RWMutex
	clusters map[string]*clusterState
	// recordMu numbers and appends changes one at a time; it is taken
	// with a cluster's mutex held, so each cluster's changes are recorded
	// in the order they happened, and Clusters, which holds mu for
	// writing, reads every state and the version together.
	recordMu sync.Mutex
	changes  *changelog.Log[Change]
}

type clusterState struct {
	mu        sync.Mutex // guards the fields below and the resources' states
	name      string
	added     bool // AddCluster was called: the cluster runs
	started   bool
	probeErr  error
	probeOK   time.Time // the last successful probe
	configErr error     // its source's configuration cannot be used (see ConfigError)
	resources map[string]*resourceState
	changes   *rateWindow // object events, for ClusterStatus.ChangeRate
	// history is the cluster's statuses, oldest first; the last one is
	// the current, with no End (see History).
	history []StatusPeriod
	// server and version identify the cluster's API server (see Identify),
	// memberID the cluster (SetMemberID).
	server, version, memberID string
}

// StatusPeriod is a span of time a cluster spent in one status.
type StatusPeriod struct {
	Status Status
	// Start is when the status began; End when it ended, zero while it
	// lasts.
	Start, End time.Time
	// Message is why the cluster entered it: its message then (empty for
	// SYNCED).
	Message string
}

type resourceState struct {
	ResourceStatus
	started bool
	synced  bool // a list has been applied once: the index holds the type's data
	// current: the data is known current. Only ResourceSynced sets it (a
	// list applied to the index); ResourceInterrupted and ResourceStarting
	// clear it. No probe or successful request does.
	current bool
	asOf    time.Time // while !current: when the data was last known current
	err     error     // API error: forbidden, not found, not served, sync deadline
	connErr error     // the last request could not reach the server
	listed  bool      // a list happened since the last watch request
	// restored: the data was restored from a snapshot and has not been
	// current since (ResourceRestored).
	restored bool
	queued   string // why the type waits to list (a fleet-wide list slot); empty when it does not
	slow     error  // the server answered too slowly or shed the request (timeout, 429): it is busy, not gone
	events   *EventCounter
}

// EventCounter counts the object changes of one resource type of one
// cluster. The informers record every object event in it without taking a
// lock; the Tracker reads it when asked for a status.
type EventCounter struct {
	added, modified, deleted atomic.Uint64
	last                     atomic.Int64 // Unix nanoseconds of the last event; 0 before the first
	window                   *rateWindow  // the cluster's; nil for a type the Tracker does not know
}

// Record counts one object change of type typ that arrived at time at.
func (e *EventCounter) Record(typ EventType, at time.Time) {
	switch typ {
	case EventAdded:
		e.added.Add(1)
	case EventModified:
		e.modified.Add(1)
	case EventDeleted:
		e.deleted.Add(1)
	}
	e.last.Store(at.UnixNano())
	if e.window != nil {
		e.window.add(at)
	}
}

func (e *EventCounter) counts() (EventCounts, time.Time) {
	var at time.Time
	if ns := e.last.Load(); ns != 0 {
		at = time.Unix(0, ns)
	}
	return EventCounts{Added: e.added.Load(), Modified: e.modified.Load(), Deleted: e.deleted.Load()}, at
}

// DefaultOptions returns the Options with every default filled in: what a
// zero Options means.
func DefaultOptions() Options { return Options{}.withDefaults() }

// withDefaults fills in the defaults of unset fields.
func (o Options) withDefaults() Options {
	if o.Retention <= 0 {
		o.Retention = 1024
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.ChangeRateInterval <= 0 {
		o.ChangeRateInterval = 10 * time.Second
	}
	if o.ChangeRateIntervals <= 0 {
		o.ChangeRateIntervals = 30
	}
	if o.HistoryWindow <= 0 {
		o.HistoryWindow = 24 * time.Hour
	}
	if o.HistoryPeriods <= 0 {
		o.HistoryPeriods = 200
	}
	return o
}

// NewTracker returns a Tracker that reads object counts from counts (may be nil).
func NewTracker(counts Counter, opts Options) *Tracker {
	opts = opts.withDefaults()
	return &Tracker{counts: counts, opts: opts, clusters: map[string]*clusterState{}, changes: changelog.New[Change](opts.Retention)}
}

// lockCluster returns the state of cluster, creating it if create, locked
// (its mutex, and mu for reading, or for writing when it was created), and
// the function that unlocks it; nil if it does not exist and !create.
func (t *Tracker) lockCluster(cluster string, create bool) (c *clusterState, created bool, unlock func()) {
	t.mu.RLock()
	if c, ok := t.clusters[cluster]; ok {
		c.mu.Lock()
		return c, false, func() { c.mu.Unlock(); t.mu.RUnlock() }
	}
	t.mu.RUnlock()
	if !create {
		return nil, false, nil
	}
	t.mu.Lock()
	c, ok := t.clusters[cluster]
	if !ok {
		c = &clusterState{name: cluster, resources: map[string]*resourceState{},
			changes: newRateWindow(t.opts.ChangeRateInterval, t.opts.ChangeRateIntervals)}
		t.clusters[cluster] = c
	}
	c.mu.Lock()
	return c, !ok, func() { c.mu.Unlock(); t.mu.Unlock() }
}

// AddCluster registers a cluster as PENDING. Adding a known cluster keeps its state.
func (t *Tracker) AddCluster(name string) {
	t.update(name, func(c *clusterState) { c.added = true })
}

// ConfigError records that the configuration a source gives for a cluster
// cannot be used (a Secret with a malformed kubeconfig, say); a nil err
// clears it. A running cluster goes on with its last good configuration and
// shows as DEGRADED; one that never had a good configuration shows as
// DISCONNECTED, and is forgotten when its error is cleared.
func (t *Tracker) ConfigError(name string, err error) {
	t.mu.Lock()
	if c, ok := t.clusters[name]; ok && err == nil && !c.added {
		delete(t.clusters, name)
		c.mu.Lock()
		t.recordLocked(Change{Cluster: c.statusLocked(t.opts.Now()), Removed: true})
		c.mu.Unlock()
		t.mu.Unlock()
		return
	}
	t.mu.Unlock()
	if err == nil {
		if _, ok := t.Cluster(name); !ok {
			return
		}
	}
	t.update(name, func(c *clusterState) { c.configErr = err })
}

// RemoveCluster forgets a cluster and records its removal.
func (t *Tracker) RemoveCluster(name string) {
	t.mu.Lock()
	c, ok := t.clusters[name]
	if ok {
		delete(t.clusters, name)
		c.mu.Lock()
		t.recordLocked(Change{Cluster: c.statusLocked(t.opts.Now()), Removed: true})
		c.mu.Unlock()
	}
	t.mu.Unlock()
}

// ResourceStarting reports that an informer of a type has started listing:
// the first one, or one that replaces an informer whose data stopped being
// current. The type is not current until ResourceSynced.
func (t *Tracker) ResourceStarting(cluster, resource, kind string) {
	now := t.opts.Now()
	t.updateResource(cluster, resource, func(r *resourceState) {
		r.Kind = kind
		r.SyncStartTime = now
		r.loseLocked(now, r.Reason)
		r.started, r.err, r.connErr, r.queued, r.slow = true, nil, nil, "", nil
	})
}

// ResourceQueued reports that a type waits for its turn to list (the
// fleet bounds how many lists run at once): why says so. A type that never
// synced is PENDING meanwhile, one that has is SYNCING; neither is an error.
// ResourceListing ends the wait.
func (t *Tracker) ResourceQueued(cluster, resource, why string) {
	t.updateResource(cluster, resource, func(r *resourceState) { r.queued = why })
}

// ResourceListing reports that a type's list has its turn and runs.
func (t *Tracker) ResourceListing(cluster, resource string) {
	t.updateResource(cluster, resource, func(r *resourceState) { r.queued = "" })
}

// ResourceSlow reports that a request for a type was answered too late or
// shed by a busy server (a timeout, 429 Too Many Requests): the server is
// there, so the type is SYNCING with that reason rather than DISCONNECTED
// or DEGRADED, until a request succeeds or the sync deadline passes.
func (t *Tracker) ResourceSlow(cluster, resource string, err error) {
	now := t.opts.Now()
	t.updateResource(cluster, resource, func(r *resourceState) {
		r.slow = err
		r.LastErrorTime = now
	})
}

// ResourceSynced reports that a list of a type has been applied to the
// index: every listed object reached it and objects the list lacks were
// removed. It is the only report that makes a type current.
func (t *Tracker) ResourceSynced(cluster, resource string) {
	now := t.opts.Now()
	t.updateResource(cluster, resource, func(r *resourceState) {
		r.synced, r.current, r.err, r.connErr, r.queued, r.slow = true, true, nil, nil, "", nil
		r.Reason, r.asOf, r.restored = "", time.Time{}, false
		r.LastSyncTime = now
		if !r.SyncStartTime.IsZero() {
			r.InitialSyncDuration = now.Sub(r.SyncStartTime)
		}
	})
}

// ResourceRestored reports that a type's objects were restored from a
// snapshot at start (pkg/warmstart): the index holds them as they were
// when last known current, at asOf (zero: never). The type is SYNCING, and
// its cluster says it resumes from the snapshot, until ResourceSynced.
func (t *Tracker) ResourceRestored(cluster, resource, kind string, asOf time.Time) {
	t.updateResource(cluster, resource, func(r *resourceState) {
		r.Kind = kind
		r.started, r.synced, r.current, r.restored, r.asOf = true, true, false, true, asOf
		r.LastSyncTime = asOf
		r.Reason = "restored from a snapshot; its watch resumes from there"
	})
}

// ResourceInterrupted reports that a type's data may no longer be current
// (its watch broke, was refused with 410 Gone, or the API server stopped
// answering): why says which. asOf is the last moment the data was known
// current. The type stays not current until the next ResourceSynced.
func (t *Tracker) ResourceInterrupted(cluster, resource, why string, asOf time.Time) {
	t.updateResource(cluster, resource, func(r *resourceState) { r.loseLocked(asOf, why) })
}

// ResourceExpired counts a watch refused with 410 Gone.
func (t *Tracker) ResourceExpired(cluster, resource string) {
	t.updateResource(cluster, resource, func(r *resourceState) { r.WatchExpired++ })
}

// loseLocked marks r not current as of asOf, keeping an earlier loss.
func (r *resourceState) loseLocked(asOf time.Time, why string) {
	if r.current {
		r.current, r.asOf = false, asOf
	}
	if r.synced && why != "" && r.Reason == "" {
		r.Reason = why
	}
}

// ResourceError reports an API error of a type (forbidden, not served, sync
// deadline passed). It holds until the type syncs or a request for it succeeds.
func (t *Tracker) ResourceError(cluster, resource, kind string, err error) {
	now := t.opts.Now()
	t.updateResource(cluster, resource, func(r *resourceState) {
		if kind != "" {
			r.Kind = kind
		}
		r.err = err
		r.LastErrorTime = now
		r.loseLocked(now, err.Error())
	})
}

// ResourceUnreachable reports that a request for a type could not reach the server.
func (t *Tracker) ResourceUnreachable(cluster, resource string, err error) {
	now := t.opts.Now()
	t.updateResource(cluster, resource, func(r *resourceState) {
		r.connErr = err
		r.LastErrorTime = now
		r.loseLocked(now, "API server unreachable")
	})
}

// ResourceRequestOK reports that a list or watch request for a type succeeded:
// the server is reachable and no longer refuses it. It does not make the
// type current: only ResourceSynced does.
func (t *Tracker) ResourceRequestOK(cluster, resource string) {
	t.updateResource(cluster, resource, func(r *resourceState) {
		r.connErr, r.slow = nil, nil
		if r.err != nil && !errors.Is(r.err, ErrSyncDeadline) {
			r.err = nil
		}
	})
}

// ErrSyncDeadline marks a type whose initial list did not complete in time.
var ErrSyncDeadline = errors.New("initial sync deadline passed")

// ResourceList counts a list request; lists after the first sync are relists.
func (t *Tracker) ResourceList(cluster, resource string) {
	t.updateResource(cluster, resource, func(r *resourceState) {
		if r.synced {
			r.Relists++
		}
		r.listed = true
	})
}

// ResourceWatch counts a watch request; one that does not directly follow a
// list resumes an interrupted watch.
func (t *Tracker) ResourceWatch(cluster, resource string) {
	t.updateResource(cluster, resource, func(r *resourceState) {
		if !r.listed {
			r.WatchRestarts++
		}
		r.listed = false
	})
}

// EventCounter returns the counter in which the informers record the object
// events of a type (call it after ResourceStarting). Counting takes no lock:
// hundreds of clusters' events never wait for each other or for a reader.
// For a type the Tracker does not know it returns a counter that nothing
// reads; a type removed and added again gets a new counter.
func (t *Tracker) EventCounter(cluster, resource string) *EventCounter {
	c, _, unlock := t.lockCluster(cluster, false)
	if c == nil {
		return &EventCounter{}
	}
	defer unlock()
	if r, ok := c.resources[resource]; ok {
		return r.events
	}
	return &EventCounter{}
}

// RemoveResource forgets a type of a cluster (no longer configured).
func (t *Tracker) RemoveResource(cluster, resource string) {
	t.update(cluster, func(c *clusterState) { delete(c.resources, resource) })
}

// Probe records the result of a reachability probe of the cluster's API
// server. A failed probe means no type's data is known current any more:
// each stays not current, as of the last sign that it was (a successful
// probe, its last list or object change), until it is listed again.
func (t *Tracker) Probe(cluster string, err error) {
	now := t.opts.Now()
	t.update(cluster, func(c *clusterState) {
		c.probeErr = err
		if err == nil {
			c.probeOK = now
			return
		}
		for _, r := range c.resources {
			_, eventsAt := r.events.counts()
			r.loseLocked(latest(c.probeOK, r.LastSyncTime, eventsAt), "API server does not answer")
		}
	})
}

func latest(ts ...time.Time) time.Time {
	var out time.Time
	for _, t := range ts {
		if t.After(out) {
			out = t
		}
	}
	return out
}

func (t *Tracker) updateResource(cluster, resource string, fn func(*resourceState)) {
	t.update(cluster, func(c *clusterState) {
		r, ok := c.resources[resource]
		if !ok {
			r = &resourceState{ResourceStatus: ResourceStatus{Resource: resource}, events: &EventCounter{window: c.changes}}
			c.resources[resource] = r
		}
		c.started = true
		fn(r)
	})
}

// update applies fn to the cluster's state, creating it if needed, and
// records a Change when the derived status of the cluster or a type changed.
func (t *Tracker) update(cluster string, fn func(*clusterState)) {
	c, created, unlock := t.lockCluster(cluster, true)
	defer unlock()
	now := t.opts.Now()
	before := c.statusLocked(now)
	fn(c)
	after := c.statusLocked(now)
	if created || before.Status != after.Status {
		t.historyLocked(c, after, now)
	}
	if created || !sameStatus(before, after) {
		t.recordLocked(Change{Cluster: t.withRatesLocked(c, after, now)})
	}
}

// historyLocked ends the cluster's current period and begins one of
// status st at now, dropping the periods that ended before the window and
// those over the bound. The caller holds the cluster's mutex.
func (t *Tracker) historyLocked(c *clusterState, st ClusterStatus, now time.Time) {
	if n := len(c.history); n > 0 {
		c.history[n-1].End = now
	}
	c.history = append(c.history, StatusPeriod{Status: st.Status, Start: now, Message: st.Message})
	cutoff := now.Add(-t.opts.HistoryWindow)
	drop := 0
	for drop < len(c.history)-1 && (c.history[drop].End.Before(cutoff) || len(c.history)-drop > t.opts.HistoryPeriods) {
		drop++
	}
	if drop > 0 {
		c.history = slices.Delete(c.history, 0, drop)
	}
}

// History returns the cluster's statuses over Options.HistoryWindow,
// oldest first: when each began and ended (the current one has no End),
// and why. It is empty for a cluster the Tracker does not know. A period
// that began before the window is returned whole.
func (t *Tracker) History(cluster string) []StatusPeriod {
	c, _, unlock := t.lockCluster(cluster, false)
	if c == nil {
		return nil
	}
	defer unlock()
	cutoff := t.opts.Now().Add(-t.opts.HistoryWindow)
	out := make([]StatusPeriod, 0, len(c.history))
	for _, p := range c.history {
		if p.End.IsZero() || !p.End.Before(cutoff) {
			out = append(out, p)
		}
	}
	return out
}

// Identify records what fleetcache knows of a cluster's API server: its
// URL and, once a probe read it, its Kubernetes version ("" leaves the
// known one). It records no change of status, and does nothing for a
// cluster the Tracker does not know.
func (t *Tracker) Identify(cluster, server, version string) {
	c, _, unlock := t.lockCluster(cluster, false)
	if c == nil {
		return
	}
	defer unlock()
	if server != "" {
		c.server = server
	}
	if version != "" {
		c.version = version
	}
}

// SetMemberID records the identity of a cluster's member (the UID of its
// kube-system namespace): a snapshot written with it is resumed only on the
// same member. It records no change of status, and does nothing for a
// cluster the Tracker does not know.
func (t *Tracker) SetMemberID(cluster, id string) {
	c, _, unlock := t.lockCluster(cluster, false)
	if c == nil {
		return
	}
	defer unlock()
	c.memberID = id
}

// recordLocked records ch; the caller holds the mutex of ch's cluster.
func (t *Tracker) recordLocked(ch Change) {
	t.recordMu.Lock()
	defer t.recordMu.Unlock()
	ch.Version = t.changes.Version() + 1
	t.changes.Append(ch)
}

// sameStatus reports whether a and b are the same status change-wise: the
// cluster's status and message and each type's status and error.
func sameStatus(a, b ClusterStatus) bool {
	if a.Status != b.Status || a.Message != b.Message || len(a.Resources) != len(b.Resources) {
		return false
	}
	for i := range a.Resources {
		ra, rb := &a.Resources[i], &b.Resources[i]
		if ra.Resource != rb.Resource || ra.Status != rb.Status || ra.LastError != rb.LastError {
			return false
		}
	}
	return true
}

func (r *resourceState) statusLocked(reachable bool, now time.Time) ResourceStatus {
	s := r.ResourceStatus
	s.Events, s.LastEventTime = r.events.counts()
	switch {
	case r.err != nil:
		s.Status, s.LastError = Degraded, r.err.Error()
	case r.connErr != nil || !reachable:
		s.Status = Disconnected
		if r.connErr != nil {
			s.LastError = r.connErr.Error()
		}
	case !r.started || (r.queued != "" && !r.synced):
		s.Status = Pending
	case !r.current:
		s.Status = Syncing
		if r.slow != nil {
			s.LastError = r.slow.Error()
		}
	default:
		s.Status = Synced
	}
	if s.Status == Synced {
		s.CurrentAsOf, s.Reason = now, ""
	} else {
		s.CurrentAsOf = r.asOf
	}
	return s
}

func (c *clusterState) statusLocked(now time.Time) ClusterStatus {
	s := ClusterStatus{Name: c.name, Status: Pending, Resources: make([]ResourceStatus, 0, len(c.resources)), Server: c.server, Version: c.version, MemberID: c.memberID}
	reachable := c.probeErr == nil
	var unreachable, syncing, resyncing, resuming, degraded, queued, slow []string
	var queuedWhy string
	waitingOnly := true // every type that is not failing waits for its first turn to list
	var connErr error = c.probeErr
	neverCurrent := false
	for _, name := range slices.Sorted(maps.Keys(c.resources)) {
		r := c.resources[name]
		rs := r.statusLocked(reachable, now)
		s.Resources = append(s.Resources, rs)
		switch {
		case !r.synced:
			neverCurrent = neverCurrent || r.err == nil
		case s.CurrentAsOf.IsZero() || rs.CurrentAsOf.Before(s.CurrentAsOf):
			s.CurrentAsOf = rs.CurrentAsOf
		}
		if rs.LastSyncTime.After(s.LastSyncTime) {
			s.LastSyncTime = rs.LastSyncTime
		}
		if rs.LastEventTime.After(s.LastEventTime) {
			s.LastEventTime = rs.LastEventTime
		}
		switch {
		case r.connErr != nil:
			unreachable = append(unreachable, name)
			if connErr == nil {
				connErr = r.connErr
			}
		case rs.Status == Degraded:
			degraded = append(degraded, name+": "+rs.LastError)
		case r.queued != "":
			queued, queuedWhy = append(queued, name), r.queued
			waitingOnly = waitingOnly && !r.synced
		case rs.Status == Syncing && r.restored:
			resuming = append(resuming, name)
			waitingOnly = false
		case rs.Status == Syncing && r.synced:
			resyncing = append(resyncing, name+": "+rs.Reason)
			waitingOnly = false
		case rs.Status == Pending || rs.Status == Syncing:
			syncing = append(syncing, name)
			waitingOnly = false
		default:
			waitingOnly = false
		}
		if r.slow != nil && rs.Status == Syncing {
			slow = append(slow, name+": "+r.slow.Error())
		}
	}
	if neverCurrent {
		s.CurrentAsOf = time.Time{}
	}
	switch {
	case connErr != nil:
		s.Status = Disconnected
		s.Message = fmt.Sprintf("api server unreachable: %v", connErr)
		if len(unreachable) > 0 {
			s.Message = fmt.Sprintf("api server unreachable for %v: %v", unreachable, connErr)
		}
		for _, r := range s.Resources {
			if !r.LastSyncTime.IsZero() {
				s.Stale = true
				s.Message += "; serving the last known objects"
				break
			}
		}
	case !c.started:
		s.Status = Pending
		s.Message = "waiting for discovery"
	case len(queued) > 0 && waitingOnly:
		s.Status = Pending
		s.Message = fmt.Sprintf("%s: %v", queuedWhy, queued)
	case len(syncing) > 0 || len(resyncing) > 0 || len(resuming) > 0 || len(queued) > 0:
		s.Status = Syncing
		var parts []string
		if len(syncing) > 0 {
			parts = append(parts, fmt.Sprintf("initial sync in progress: %v", syncing))
		}
		if len(slow) > 0 {
			parts = append(parts, fmt.Sprintf("API server slow to answer, retrying: %v", slow))
		}
		if len(resyncing) > 0 {
			parts = append(parts, fmt.Sprintf("relisting, data not current: %v", resyncing))
		}
		if len(resuming) > 0 {
			parts = append(parts, fmt.Sprintf("restored from a snapshot, catching up with the API server: %v", resuming))
		}
		if len(queued) > 0 {
			parts = append(parts, fmt.Sprintf("%s: %v", queuedWhy, queued))
		}
		s.Message = strings.Join(parts, "; ")
	case len(degraded) > 0:
		s.Status = Degraded
		s.Message = fmt.Sprintf("%d resource types failing: %v", len(degraded), degraded)
	default:
		s.Status = Synced
	}
	if c.configErr != nil {
		switch {
		case !c.added:
			s.Status, s.Message, s.Unconfigured = Disconnected, "invalid configuration: "+c.configErr.Error(), true
		default:
			if s.Status != Disconnected {
				s.Status = Degraded
			}
			s.Message = strings.TrimSuffix("invalid new configuration, running on the previous one: "+c.configErr.Error()+"; "+s.Message, "; ")
		}
	}
	return s
}

// clusterStatusLocked is c's status with its change rates.
func (t *Tracker) clusterStatusLocked(c *clusterState, now time.Time) ClusterStatus {
	return t.withRatesLocked(c, c.statusLocked(now), now)
}

// withRatesLocked returns s, a status of c, with c's change rates.
func (t *Tracker) withRatesLocked(c *clusterState, s ClusterStatus, now time.Time) ClusterStatus {
	s.ChangeRate = c.changes.rates(now, t.opts.ChangeRateIntervals)
	return s
}

// fillCounts sets object counts; it runs outside t.mu because it calls the index.
func (t *Tracker) fillCounts(s *ClusterStatus) {
	if t.counts == nil {
		return
	}
	s.ObjectCount = t.counts.ObjectCount(s.Name, "")
	d, _ := t.counts.(Degrader)
	for i := range s.Resources {
		r := &s.Resources[i]
		r.ObjectCount = t.counts.ObjectCount(s.Name, r.Resource)
		if d != nil {
			r.MetadataOnly, r.Refused = d.Degraded(s.Name, r.Resource)
		}
	}
}

// Cluster returns the status of one cluster.
func (t *Tracker) Cluster(name string) (ClusterStatus, bool) {
	c, _, unlock := t.lockCluster(name, false)
	if c == nil {
		return ClusterStatus{}, false
	}
	s := t.clusterStatusLocked(c, t.opts.Now())
	unlock()
	t.fillCounts(&s)
	return s, true
}

// Clusters returns the status of every cluster, sorted by name, and the
// version it was read at (follow Changes after it).
func (t *Tracker) Clusters() ([]ClusterStatus, uint64) {
	now := t.opts.Now()
	// Writing: no cluster's report is halfway, so the states and the
	// version agree.
	t.mu.Lock()
	out := make([]ClusterStatus, 0, len(t.clusters))
	for _, name := range slices.Sorted(maps.Keys(t.clusters)) {
		out = append(out, t.clusterStatusLocked(t.clusters[name], now))
	}
	v := t.changes.Version()
	t.mu.Unlock()
	for i := range out {
		t.fillCounts(&out[i])
	}
	return out, v
}

// Changes returns the recorded changes after version, oldest first. It
// returns an error wrapping ErrExpired if some of them are no longer retained.
func (t *Tracker) Changes(after uint64) ([]Change, error) {
	out, err := t.changes.Since(after, 0)
	if err != nil {
		return nil, fmt.Errorf("health changes: %w", err)
	}
	for i := range out {
		t.fillCounts(&out[i].Cluster)
	}
	return out, nil
}

// Wait blocks until a change after version is recorded or ctx ends.
func (t *Tracker) Wait(ctx context.Context, after uint64) error { return t.changes.Wait(ctx, after) }
