package informers

import (
	"cmp"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/transport"
	"k8s.io/client-go/util/connrotation"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/klog/v2"

	"github.com/fleetcache/fleetcache/pkg/columns"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/compact"
	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
	"github.com/fleetcache/fleetcache/pkg/index/object"
)

// Options configure the ingestion of every cluster.
type Options struct {
	// Resources are the types to cache, by kubectl name. Default DefaultResources.
	Resources []string
	// DiscoveryRetry is how often types the cluster does not serve yet are
	// looked up again. Default 10s.
	DiscoveryRetry time.Duration
	// SyncTimeout is how long a type may take to finish its initial list
	// before it is reported DEGRADED (it keeps trying). Default 2m.
	SyncTimeout time.Duration
	// ProbeInterval is how often the API server's reachability is probed, so
	// a silently dead connection is noticed. Default 10s.
	ProbeInterval time.Duration
	// ProbeRetryInterval is how often an API server that cannot be reached
	// is probed, so that its types are listed again soon after it answers.
	// Default 1s.
	ProbeRetryInterval time.Duration
	// WatchTimeout caps how long one watch request lasts before the server
	// ends it and it is resumed from its last resourceVersion. Set it below
	// the idle timeout of a proxy or load balancer between fleetcache and
	// the API servers: a watch that such a device cuts counts as
	// interrupted and costs a relist. Default 0: client-go's 5 to 10
	// minutes.
	WatchTimeout time.Duration
	// ProbeTimeout bounds one probe. Default 5s.
	ProbeTimeout time.Duration
	// DisconnectAfter is how long an API server may leave probes
	// unanswered (timeouts) before its cluster is DISCONNECTED. A timeout
	// says the answer was late, which fleetcache's own load (starting many
	// clusters) can cause as well as the server; a refused or reset
	// connection or a failed TLS handshake means the server cannot be
	// reached, and counts at once. Default 30s.
	DisconnectAfter time.Duration
	// MaxConcurrentLists bounds how many lists (initial lists and relists,
	// plain or streaming) run at once across all clusters of a Fleet; the
	// types waiting for their turn are PENDING (SYNCING when relisting) with
	// that reason. A list holds its turn until it is applied to the index,
	// so this also bounds the memory of lists being decoded. Default
	// DefaultMaxConcurrentLists().
	MaxConcurrentLists int
	// ClientQPS and ClientBurst limit the requests fleetcache sends to each
	// member cluster (lists, watches, discovery, CRD reads), one token bucket
	// per cluster, shared by its types; probes are not limited, so that
	// fleetcache's own limit never makes a cluster look unreachable.
	// Defaults 20 and 40: a cluster's start takes one discovery round and a
	// list and a watch per type (about 35 requests with the default types).
	ClientQPS   float32
	ClientBurst int
	// Registerer receives the informers' metrics (ingest lag). Default: none.
	Registerer prometheus.Registerer
	// StreamingLists lists by a streaming watch (client-go's WatchList:
	// sendInitialEvents, ended by a bookmark) where client-go's
	// WatchListClient feature is on, as client-go's informers do by
	// default since 1.35. Default false: plain lists, served from the API
	// server's watch cache, which in BenchmarkFleetSync cost the API
	// servers less than half the CPU of streaming lists and synced a fleet
	// sooner (docs/design.md, "Plain lists by default"). Relists after
	// 410 Gone are plain lists either way.
	StreamingLists bool
	// CacheSecretData keeps the data and stringData of Secrets (core v1),
	// when Resources include them. Default false: they are dropped before
	// the object is stored, so that the cache and every answer built from
	// it hold the Secret's metadata (name, labels, type) and no credential.
	CacheSecretData bool
	// Codecs compress the stored objects' JSON (package compact): one
	// Codec, and one dictionary, per resource type, shared by every
	// cluster that uses these Options. Default: a new registry, which
	// NewFleet fills in once for all its clusters.
	Codecs *compact.Codecs
	// Restored gives, once per cluster, what a warm start restored of its
	// types (pkg/warmstart), by resource: the first run of each of them
	// resumes its watch from the restored resourceVersion instead of
	// listing (restore.go), and restored types the cluster no longer
	// caches are removed from the sink. Default: nothing restored.
	Restored func(cluster string) map[string]Restored
	// Loading, when set, is the warm start's load of the sink, under way
	// while the clusters start: no run writes to the sink or reports
	// itself synced before it ends (restore.go). Default nil: the sink is
	// filled already, if at all.
	Loading Loading
	// Columns is the table in which the Ingester records its types'
	// printers (pkg/columns): custom resources' printer columns, Secrets
	// whose data is not cached. Whoever prints the objects' columns reads
	// the same table (graphql.Options.Columns). Default: a new table,
	// which NewFleet fills in once for all its clusters.
	Columns *columns.Types
	// Schemas, when set, follows the OpenAPI schemas of each cluster's
	// types (pkg/openapi): an Ingester runs its Follow while it runs, with
	// the cluster's REST client and the types it runs. Default nil: no
	// schema is followed.
	Schemas SchemaFollower
}

// SchemaFollower follows the schemas of the types a cluster caches;
// *openapi.Follower implements it.
type SchemaFollower interface {
	// Follow follows them until ctx ends; types returns the types the
	// cluster runs at the moment.
	Follow(ctx context.Context, cluster string, client rest.Interface, types func() []*object.Type)
}

// DefaultMaxConcurrentLists is Options.MaxConcurrentLists' default: twice
// the CPUs Go may use, at least 4. Decoding a list is CPU work; more at
// once only holds more responses in memory.
func DefaultMaxConcurrentLists() int { return max(4, 2*runtime.GOMAXPROCS(0)) }

// DefaultOptions returns the Options with every default filled in: what a
// zero Options means.
func DefaultOptions() Options { return Options{}.withDefaults() }

func (o Options) withDefaults() Options {
	if len(o.Resources) == 0 {
		o.Resources = DefaultResources
	}
	if o.DiscoveryRetry <= 0 {
		o.DiscoveryRetry = 10 * time.Second
	}
	if o.SyncTimeout <= 0 {
		o.SyncTimeout = 2 * time.Minute
	}
	if o.ProbeInterval <= 0 {
		o.ProbeInterval = 10 * time.Second
	}
	if o.ProbeRetryInterval <= 0 {
		o.ProbeRetryInterval = time.Second
	}
	if o.ProbeTimeout <= 0 {
		o.ProbeTimeout = 5 * time.Second
	}
	if o.DisconnectAfter <= 0 {
		o.DisconnectAfter = 30 * time.Second
	}
	if o.MaxConcurrentLists <= 0 {
		o.MaxConcurrentLists = DefaultMaxConcurrentLists()
	}
	if o.ClientQPS <= 0 {
		o.ClientQPS = 20
	}
	if o.ClientBurst <= 0 {
		o.ClientBurst = 40
	}
	if o.Codecs == nil {
		o.Codecs = new(compact.Codecs)
	}
	if o.Columns == nil {
		o.Columns = new(columns.Types)
	}
	return o
}

// Sink receives the objects of a cluster; the global index implements it.
type Sink interface {
	// UpsertPrepared upserts an object with its body's search text
	// (index.Prepared); UpsertAll upserts a list's.
	UpsertPrepared(p index.Prepared) bool
	UpsertAll(ps []index.Prepared)
	Delete(k object.Key) bool
	DeleteObject(o *object.Object) bool
	Objects(cluster, resource string) []*object.Object
	// Progress records that a cluster's resource type is applied up to
	// resourceVersion rv.
	Progress(cluster, resource, rv string)
	// IndexedPaths are the paths of resource the sink indexes, which
	// its objects keep beside their bodies (object.Type.Projected).
	IndexedPaths(resource string) []fieldpath.Path
	// RemoveResource removes every object of a cluster's type.
	RemoveResource(cluster, resource string) int
}

// Ingester runs the ingestion of one cluster: one run per configured type,
// a client-go reflector that lists and watches the type and applies what it
// gets straight to a Sink (runStore), reporting to a health.Tracker. A run
// whose data stops being current is replaced by a fresh one as soon as the
// API server answers (see Start).
type Ingester struct {
	name      string
	sink      Sink
	health    *health.Tracker
	opts      Options
	names     []resourceName
	dynamic   dynamic.Interface
	discovery discovery.DiscoveryInterface
	// lists and watches are the REST clients of the runs' requests
	// (listWatch); watches has no rate limit and a connection of its own.
	// The probes go as the watches do: past the cluster's rate limiter, on
	// the connection the watches depend on.
	lists, watches rest.Interface
	// dialer tracks the cluster's connections so that Start closes every
	// one of them when the cluster stops, busy or idle.
	dialer *connrotation.Dialer
	// requests is the transport of the cluster's requests other than
	// watches and probes (discovery, lists, CRD reads), which exists only
	// while they run (onDemandTransport).
	requests *onDemandTransport
	// Shared by the clusters of a Fleet (their own when nil): the list
	// slots (nil: lists are not bounded), the prober and the metrics.
	gate     *listGate
	prober   *prober
	metrics  *metrics
	surfaces *surfaces

	mu sync.Mutex
	// reachable: the last probe succeeded and no request failed to connect
	// since. Runs are replaced only while it holds.
	reachable bool
	// probeFailed: the last probe failed.
	probeFailed bool
	// unansweredSince is when the probes began to time out, zero while
	// they are answered (see Options.DisconnectAfter).
	unansweredSince time.Time
	// probeTarget is the cluster's place in the prober while Start runs.
	probeTarget *probeTarget
	// runs holds the current run of each started type; Start alone changes it.
	runs map[string]*typeRun
	// stale holds the runs to replace, by resource.
	stale map[string]*typeRun
	// unserved holds the runs whose version the server answered 404 for,
	// by resource: their type is looked up again (followVersions) until
	// discovery prefers another version or a request of theirs succeeds.
	unserved map[string]*typeRun
	// wake tells Start that stale or reachable changed; it holds at most
	// one signal.
	wake chan struct{}
	// noCRD holds the custom resource types whose CustomResourceDefinition
	// could not be read (logged once each).
	noCRD map[string]bool
	// server is the API server's URL, for health.
	server string
	// restored holds what a warm start restored of the types not
	// started yet (Options.Restored); Start alone uses it.
	restored map[string]Restored
	// id is the member's identity once idKnown (memberID).
	idMu    sync.Mutex
	id      string
	idKnown bool
}

// typeRun is one run of one type's reflector and its store, stopped and
// waited for as a whole.
type typeRun struct {
	t         *object.Type
	reflector *cache.Reflector
	// ctx ends when the run is stopped (cancel).
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// mu orders the run's reports of freshness: once interrupted, a run
	// never reports itself synced. The reports run outside it (runReports).
	mu          sync.Mutex
	isSynced    bool
	interrupted bool
	// reports holds the reports of changes made under mu and not run yet,
	// in the order of the changes; reporting is set while a goroutine runs
	// them.
	reports   []func()
	reporting bool
	// expired is set when the run's own watch was refused with 410 Gone:
	// its replacement need not ask again.
	expired bool
	// slotHeld: the run holds a list slot (see listGate).
	slotHeld bool
	// deadline is the run's sync deadline, started with its first list.
	deadline *time.Timer

	// restoredRV is the resourceVersion a warm start restored the type's
	// objects at (restore.go); written before the run's goroutines
	// start, then read and cleared under mu, as target, the watch cache's
	// resourceVersion when the run began, is written.
	restoredRV, restoredMember string
	// resuming is set once the run took restoredRV, until its watch has
	// caught up with target: atomic, as the store asks after every event
	// of every run.
	resuming atomic.Bool
	target   uint64
	// resumedList: the reflector's first list was answered from the
	// snapshot, and its Replace has not come yet; resumed: it was.
	resumedList, resumed bool
	// unserved is set while the server answers 404 for the run's
	// version (Ingester.notServed).
	unserved atomic.Bool
	// resumeWatches counts the watches the run started while resuming.
	resumeWatches int

	// resumeFrom is the resourceVersion an interrupted run before this one
	// stopped at, while the server has not answered whether a watch could
	// resume from it (checkResume): a replacement that never synced passes
	// it on. Written before the run's goroutines start, or by the check's;
	// read after wg.Wait.
	resumeFrom string
}

func (r *typeRun) synced() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.isSynced
}

// lastResourceVersion returns the last resourceVersion the run saw, to
// resume from, or "" when it has none or its own watch expired.
func (r *typeRun) lastResourceVersion() string {
	r.mu.Lock()
	expired := r.expired
	r.mu.Unlock()
	if expired || r.reflector == nil {
		return ""
	}
	return r.reflector.LastSyncResourceVersion()
}

func (r *typeRun) isInterrupted() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.interrupted
}

// stopDeadlineLocked stops the run's sync deadline. A deadline stopped
// before it fired will not run its callback, which is no longer awaited
// (run.wg); one that fired is awaited until its callback returns.
func (r *typeRun) stopDeadlineLocked() {
	if r.deadline != nil && r.deadline.Stop() {
		r.wg.Done()
	}
}

// markSynced records the run synced, unless it was interrupted, and then
// runs report (see runReports).
func (r *typeRun) markSynced(report func()) bool {
	r.mu.Lock()
	if r.interrupted {
		r.mu.Unlock()
		return false
	}
	r.isSynced = true
	r.stopDeadlineLocked()
	r.reports = append(r.reports, report)
	r.mu.Unlock()
	r.runReports()
	return true
}

// interrupt records the run interrupted and then runs report, if not nil
// (see runReports); it returns true the first time.
// interrupt reports that run's data is not known current any more, for
// why, and replaces the run.
func (c *Ingester) interrupt(run *typeRun, why string) {
	if run.interrupt(func() { c.health.ResourceInterrupted(c.name, run.t.Resource, why, time.Now()) }) {
		c.replace(run)
	}
}

func (r *typeRun) interrupt(report func()) bool {
	r.mu.Lock()
	first := !r.interrupted
	r.interrupted = true
	if report != nil {
		r.reports = append(r.reports, report)
	}
	r.mu.Unlock()
	if report != nil {
		r.runReports()
	}
	return first
}

// runReports runs the queued reports in order, without holding mu, unless
// another goroutine is running them already: that one runs the reports
// queued meanwhile too before it returns. So the health tracker hears of a
// run's changes in the order they were made (an interruption always after
// the sync it ends), and no report runs under the run's lock. A report may
// thus run just after its caller returns, but never after the run's
// goroutines (and the probe's) have been waited for.
func (r *typeRun) runReports() {
	r.mu.Lock()
	if r.reporting {
		r.mu.Unlock()
		return
	}
	r.reporting = true
	for len(r.reports) > 0 {
		batch := r.reports
		r.reports = nil
		r.mu.Unlock()
		for _, report := range batch {
			report()
		}
		r.mu.Lock()
	}
	r.reporting = false
	r.mu.Unlock()
}

// NewIngester returns the ingestion of cluster name, reached with cfg. Start runs it.
func NewIngester(name string, cfg *rest.Config, sink Sink, h *health.Tracker, opts Options) (*Ingester, error) {
	opts = opts.withDefaults()
	names, err := parseResourceNames(opts.Resources)
	if err != nil {
		return nil, fmt.Errorf("cluster %q: %w", name, err)
	}
	c := &Ingester{name: name, sink: sink, health: h, opts: opts, names: names, reachable: true,
		runs: map[string]*typeRun{}, stale: map[string]*typeRun{}, unserved: map[string]*typeRun{}, wake: make(chan struct{}, 1),
		noCRD: map[string]bool{}, server: cfg.Host}
	cfg = rest.CopyConfig(cfg)
	// One token bucket for all of the cluster's clients but the probe's.
	cfg.QPS, cfg.Burst = opts.ClientQPS, opts.ClientBurst
	cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(opts.ClientQPS, opts.ClientBurst)
	if cfg.Proxy == nil {
		// A config with a Proxy func is never shared through client-go's
		// transport cache: this cluster gets connections of its own, which
		// Start closes when the cluster stops.
		cfg.Proxy = http.ProxyFromEnvironment
	}
	dial := cfg.Dial
	if dial == nil {
		dial = (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext
	}
	c.dialer = connrotation.NewDialer(connrotation.DialFunc(dial))
	cfg.Dial = c.dialer.DialContext
	// Two HTTP clients, so two kinds of connection: one HTTP/2 connection
	// for the watches and the probes, which stays open, and HTTP/1.1
	// connections for everything else (discovery, lists, CRD reads), which
	// close with their transport once idle for requestIdleTimeout. A
	// connection keeps the buffers it grew for the largest record and frame
	// it read (about 35 KB after a list); the watches' one only ever reads
	// events. HTTP/1.1 because a closed HTTP/2 connection of x/net's, as
	// client-go configures it, stays in memory, buffers and all, until its
	// 30 s read-idle timer fires: closing those would raise the start's
	// peak.
	requestCfg := rest.CopyConfig(cfg)
	if len(requestCfg.NextProtos) == 0 {
		requestCfg.NextProtos = []string{"http/1.1"}
	}
	// First, so that they are handed client-go's *http.Transport itself.
	roots := &sharedRoots{}
	requestCfg.WrapTransport = transport.Wrappers(roots.wrap, requestCfg.WrapTransport)
	// Built now for the configuration's errors, and again whenever a
	// request needs it after it was dropped.
	first, err := rest.TransportFor(requestCfg)
	if err != nil {
		return nil, fmt.Errorf("cluster %q: http client: %w", name, err)
	}
	c.requests = newOnDemandTransport(requestIdleTimeout, first, func() (http.RoundTripper, error) {
		return rest.TransportFor(requestCfg)
	})
	httpClient := &http.Client{Transport: c.requests, Timeout: requestCfg.Timeout}
	watchCfg := rest.CopyConfig(cfg)
	watchCfg.WrapTransport = transport.Wrappers(roots.wrap, watchCfg.WrapTransport)
	watchClient, err := rest.HTTPClientFor(watchCfg)
	if err != nil {
		return nil, fmt.Errorf("cluster %q: http client: %w", name, err)
	}
	if c.dynamic, err = dynamic.NewForConfigAndClient(cfg, httpClient); err != nil {
		return nil, fmt.Errorf("cluster %q: dynamic client: %w", name, err)
	}
	dc, err := discovery.NewDiscoveryClientForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("cluster %q: discovery client: %w", name, err)
	}
	// The group lists alone (/api, /apis: a few KB), not every group's
	// resources with them (aggregated discovery, tens of KB per cluster at
	// each start): built-in groups' resources come from the fleet's
	// surfaces, and only the configured types' group versions are asked.
	dc.UseLegacyDiscovery = true
	c.discovery = dc
	// As the dynamic client configures its own: JSON, and a serializer
	// that reads the server's errors (metav1.Status).
	restCfg := dynamic.ConfigFor(cfg)
	restCfg.GroupVersion = nil
	if c.lists, err = rest.UnversionedRESTClientForConfigAndClient(restCfg, httpClient); err != nil {
		return nil, fmt.Errorf("cluster %q: REST client: %w", name, err)
	}
	restCfg.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
	if c.watches, err = rest.UnversionedRESTClientForConfigAndClient(restCfg, watchClient); err != nil {
		return nil, fmt.Errorf("cluster %q: REST client: %w", name, err)
	}
	return c, nil
}

// dialTimeout bounds a TCP connect to a member API server: one that does
// not accept within it is not reachable.
const dialTimeout = 10 * time.Second

// requestIdleTimeout is how long a connection of a cluster's requests other
// than watches stays open unused: long enough for the pages of a list and
// the requests of a start, which follow each other closely.
const requestIdleTimeout = time.Second

// sharedRoots hands the CA pool client-go parsed for a cluster's first
// transport to the others built from the same CA data (the watches', and
// the requests' each time it is built again): a parsed certificate is
// about 3.5 KB, per cluster.
type sharedRoots struct{ pool *x509.CertPool }

func (s *sharedRoots) wrap(rt http.RoundTripper) http.RoundTripper {
	t, ok := rt.(*http.Transport)
	if !ok || t.TLSClientConfig == nil || t.TLSClientConfig.RootCAs == nil {
		return rt
	}
	if s.pool == nil {
		s.pool = t.TLSClientConfig.RootCAs
	} else {
		t.TLSClientConfig.RootCAs = s.pool
	}
	return rt
}

// Start runs the cache until ctx ends, then stops every run and
// goroutine it started before returning. Objects stay in the sink: removing
// them is the caller's decision (a restarted cache reconciles them).
//
// A type's data is current from the moment a list of it has been applied to
// the sink until its watch is interrupted (a request that cannot reach the
// server, a watch refused with 410 Gone or cut before its timeout, a failed
// probe). Its run is then replaced by a fresh one, which lists at once,
// as soon as the API server answers again: recovery waits on the probe
// (ProbeRetryInterval), never on client-go's backoff.
func (c *Ingester) Start(ctx context.Context) error {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("cluster", c.name))
	// Last, once nothing uses them: close the cluster's connections. Closing
	// only idle ones would leave a connection whose last stream is still
	// being torn down, and its read goroutine with it.
	defer c.dialer.CloseAll()
	defer c.requests.Close()
	ctx, cancel := context.WithCancel(ctx)
	var following sync.WaitGroup
	defer following.Wait() // after cancel
	defer cancel()
	defer func() {
		c.mu.Lock()
		runs := slices.Collect(maps.Values(c.runs))
		c.mu.Unlock()
		for _, r := range runs {
			r.cancel()
		}
		for _, r := range runs {
			r.wg.Wait()
		}
	}()

	c.health.AddCluster(c.name)
	c.health.Identify(c.name, c.server, "")
	if c.opts.Schemas != nil {
		following.Go(func() { c.opts.Schemas.Follow(ctx, c.name, c.lists, c.types) })
	}
	if c.prober == nil {
		// A cluster on its own: its own prober, stopped and waited for
		// after the cluster's target is removed.
		c.prober = newProber()
		var probing sync.WaitGroup
		pctx, stopProbing := context.WithCancel(ctx)
		probing.Go(func() { _ = c.prober.Start(pctx) }) // nil: it is new
		defer probing.Wait()
		defer stopProbing()
	}
	target := c.prober.add(ctx, c)
	c.mu.Lock()
	c.probeTarget = target
	c.mu.Unlock()
	// Before the runs stop and the connections close: no probe reports
	// for the cluster after Start returns.
	defer c.prober.remove(target)
	defer cancel()

	c.takeRestored(ctx)
	pending := c.names
	retry := time.NewTicker(c.opts.DiscoveryRetry)
	defer retry.Stop()
	pending = c.startServed(ctx, pending)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-retry.C:
			if len(pending) > 0 {
				pending = c.startServed(ctx, pending)
			}
			c.followVersions(ctx)
		case <-c.wake:
			c.replaceStale(ctx)
			c.followVersions(ctx)
		}
	}
}

// types returns the types the cluster runs.
func (c *Ingester) types() []*object.Type {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*object.Type, 0, len(c.runs))
	for _, r := range c.runs {
		out = append(out, r.t)
	}
	return out
}

// replace asks Start to replace run with a fresh one once the server answers.
func (c *Ingester) replace(run *typeRun) {
	c.mu.Lock()
	c.stale[run.t.Resource] = run
	c.mu.Unlock()
	signal(c.wake)
}

// unreachable records that a request could not reach the server: no run is
// replaced until a probe succeeds, and the probe runs now.
func (c *Ingester) unreachable() {
	c.mu.Lock()
	c.reachable = false
	target := c.probeTarget
	c.mu.Unlock()
	if target != nil {
		c.prober.probeNow(target)
	}
}

// notServed records that the server answered 404 for run's version, and
// asks Start to look its type up again.
func (c *Ingester) notServed(run *typeRun) {
	run.unserved.Store(true)
	c.mu.Lock()
	c.unserved[run.t.Resource] = run
	c.mu.Unlock()
	signal(c.wake)
}

// served records that a request of run succeeded after a 404: its version
// is served again (a 404 of a CRD being changed), and is not looked up
// any more.
func (c *Ingester) served(run *typeRun) {
	if !run.unserved.CompareAndSwap(true, false) {
		return
	}
	c.mu.Lock()
	if c.unserved[run.t.Resource] == run {
		delete(c.unserved, run.t.Resource)
	}
	c.mu.Unlock()
}

// followVersions looks the types of the unserved runs up again through
// discovery and replaces each run whose type the server now serves at
// another version (a CRD's served version changed) by a run of that
// version, which lists it: the objects' bodies change to that version in
// place (index.Index.Upsert), the typed schema follows the new run's type.
// A type still at its version (a CRD removed, or changing) is looked up
// again at the next retry (Options.DiscoveryRetry) while its requests fail.
func (c *Ingester) followVersions(ctx context.Context) {
	c.mu.Lock()
	var names []resourceName
	for _, n := range c.names {
		if r, ok := c.unserved[n.name]; ok {
			if c.runs[n.name] != r {
				delete(c.unserved, n.name) // replaced meanwhile
				continue
			}
			names = append(names, n)
		}
	}
	c.mu.Unlock()
	if len(names) == 0 {
		return
	}
	logger := klog.FromContext(ctx)
	types, _, err := resolve(c.discovery, c.surfaces, names)
	if err != nil {
		logger.V(2).Info("Discovery failed while following a served version, will retry", "err", err)
		return
	}
	for _, t := range types {
		c.mu.Lock()
		old := c.unserved[t.Resource]
		current := old != nil && c.runs[t.Resource] == old
		c.mu.Unlock()
		if !current || t.GVR == old.t.GVR && t.Kind == old.t.Kind && t.Namespaced == old.t.Namespaced {
			continue
		}
		old.cancel()
		old.wg.Wait()
		t.Codec = old.t.Codec
		t.Projected = old.t.Projected
		c.setPrinter(t)
		run, err := c.startRun(ctx, t, Restored{})
		if err != nil {
			// Not expected: startRun fails for no type. Looked up again.
			logger.Error(err, "Starting the type's run at its new version failed, will retry", "resource", t.Resource)
			continue
		}
		logger.Info("The type's served version changed: caching the new one", "resource", t.Resource,
			"from", old.t.GVR.Version, "to", t.GVR.Version)
		c.mu.Lock()
		c.runs[t.Resource] = run
		delete(c.unserved, t.Resource)
		delete(c.stale, t.Resource)
		c.mu.Unlock()
	}
}

// replaceStale stops each stale run and starts its replacement, if the
// server answers.
func (c *Ingester) replaceStale(ctx context.Context) {
	c.mu.Lock()
	if !c.reachable {
		c.mu.Unlock()
		return
	}
	stale := c.stale
	c.stale = map[string]*typeRun{}
	c.mu.Unlock()
	for resource, old := range stale {
		c.mu.Lock()
		current := c.runs[resource] == old
		c.mu.Unlock()
		if !current {
			continue // replaced already
		}
		old.cancel()
		old.wg.Wait()
		run, err := c.startRun(ctx, old.t, Restored{})
		if rv := cmp.Or(old.lastResourceVersion(), old.resumeFrom); err == nil && rv != "" {
			run.resumeFrom = rv
			run.wg.Go(func() {
				if c.checkResume(run.ctx, old.t, rv) {
					run.resumeFrom = ""
				}
			})
		}
		if err != nil {
			// Not expected: the same type started before. The old run
			// stays, stopped, and is retried at the next wake.
			klog.FromContext(ctx).Error(err, "Restarting the type's run failed", "resource", resource)
			c.replace(old)
			continue
		}
		c.mu.Lock()
		c.runs[resource] = run
		c.mu.Unlock()
	}
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// startServed starts a run for every name the cluster serves and
// returns the names still to look up.
func (c *Ingester) startServed(ctx context.Context, names []resourceName) []resourceName {
	logger := klog.FromContext(ctx)
	types, missing, err := resolve(c.discovery, c.surfaces, names)
	if err != nil {
		logger.Info("Discovery failed, will retry", "err", err)
		return names
	}
	for name, err := range missing {
		c.health.ResourceError(c.name, name, "", err)
	}
	for _, t := range types {
		restored, resume := c.restoredType(ctx, t)
		if resume {
			t = restored.Type
		} else {
			t.Codec = c.opts.Codecs.For(t.Resource)
			t.Projected = fieldpath.NewSet(c.sink.IndexedPaths(t.Resource))
		}
		c.setPrinter(t)
		run, err := c.startRun(ctx, t, restored)
		if err != nil {
			logger.Error(err, "Starting the type's run failed, will retry", "resource", t.Resource)
			missing[t.Resource] = err
			continue
		}
		c.mu.Lock()
		c.runs[t.Resource] = run
		c.mu.Unlock()
	}
	var rest []resourceName
	for _, n := range names {
		if _, ok := missing[n.name]; ok {
			rest = append(rest, n)
		}
	}
	return rest
}

// watchListSupport tells client-go's reflector whether to list by a
// streaming watch (watchlist.DoesClientNotSupportWatchListSemantics).
type watchListSupport bool

// IsWatchListSemanticsUnSupported is what client-go asks.
func (s watchListSupport) IsWatchListSemanticsUnSupported() bool { return !bool(s) }

// startRun starts a fresh run for t: its reflector lists, then watches,
// and applies what it gets to the sink through a runStore.
func (c *Ingester) startRun(ctx context.Context, t *object.Type, restored Restored) (*typeRun, error) {
	c.loadPrinterColumns(ctx, t)
	ctx, cancel := context.WithCancel(ctx)
	run := &typeRun{t: t, ctx: ctx, cancel: cancel, restoredRV: restored.ResourceVersion, restoredMember: restored.Member}
	lw := &listWatch{cache: c, t: t, run: run, path: collectionPath(t.GVR)}
	gated := &gatedListWatch{c: c, run: run, lw: lw}
	// With StreamingLists and client-go's WatchListClient feature on (its
	// default), the reflector lists by a streaming watch
	// (sendInitialEvents), falling back to a plain list when the server
	// refuses it; otherwise the ListerWatcher says it does not support
	// streaming, and the reflector lists plainly.
	lws := cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc:  gated.ListWithContext,
		WatchFuncWithContext: gated.WatchWithContext,
	}, watchListSupport(c.opts.StreamingLists && restored.ResourceVersion == ""))
	c.health.ResourceStarting(c.name, t.Resource, t.KindName())
	store := &runStore{c: c, run: run, events: c.health.EventCounter(c.name, t.Resource)}
	if c.metrics != nil {
		store.lag = c.metrics.lag.WithLabelValues(t.Resource)
	}
	logger := klog.FromContext(ctx).WithValues("resource", t.Resource)
	// No expected type: the objects are *wire.Decoded, which the store
	// takes as well as *object.Object.
	run.reflector = cache.NewReflectorWithOptions(lws, nil, store, cache.ReflectorOptions{
		Name: c.name + "/" + t.Resource, TypeDescription: t.Resource, Logger: &logger})
	run.wg.Go(func() {
		defer c.releaseSlot(run)
		defer func() {
			run.mu.Lock()
			run.stopDeadlineLocked()
			run.mu.Unlock()
		}()
		run.reflector.RunWithContext(ctx)
	})
	return run, nil
}

// listApplied reports that a list of run's type has been applied to the
// sink: the run's list slot goes to the next list, and the type is synced.
func (c *Ingester) listApplied(run *typeRun) {
	c.releaseSlot(run)
	if run.markSynced(func() { c.health.ResourceSynced(c.name, run.t.Resource) }) {
		klog.FromContext(run.ctx).V(2).Info("Resource synced", "resource", run.t.Resource)
	}
}

// secrets is the type whose data Options.CacheSecretData governs.
var secrets = schema.GroupResource{Resource: "secrets"}

// probe checks once that the API server answers (GET /version, bounded by
// ProbeTimeout) and returns when to probe again: after ProbeInterval while
// it answers, ProbeRetryInterval while it does not. A failed probe closes
// the cluster's connections, so that a watch on a silently dead one fails
// instead of hanging, and marks every run stale; a successful one lets
// Start replace the stale runs. A probe that times out counts as failed
// only once the server has left probes unanswered for DisconnectAfter: a
// late answer may be fleetcache's own doing (see Options.DisconnectAfter).
// The prober calls it.
func (c *Ingester) probe(ctx context.Context) time.Duration {
	pctx, cancel := context.WithTimeout(ctx, c.opts.ProbeTimeout)
	raw, err := c.watches.Get().AbsPath("/version").Do(pctx).Raw()
	cancel()
	if ctx.Err() != nil {
		return 0
	}
	now := time.Now()
	c.mu.Lock()
	switch {
	case err != nil && isTimeout(err):
		if c.unansweredSince.IsZero() {
			c.unansweredSince = now
		}
		if unanswered := now.Sub(c.unansweredSince); unanswered < c.opts.DisconnectAfter {
			c.mu.Unlock()
			klog.FromContext(ctx).V(2).Info("Probe not answered in time; not disconnected yet", "err", err, "unansweredFor", unanswered)
			return c.opts.ProbeRetryInterval
		}
	default:
		c.unansweredSince = time.Time{}
	}
	c.mu.Unlock()
	c.health.Probe(c.name, err)
	if err == nil {
		var v struct {
			GitVersion string `json:"gitVersion"`
		}
		if json.Unmarshal(raw, &v) == nil {
			c.health.Identify(c.name, "", v.GitVersion)
		}
	}
	c.probed(err)
	if err != nil {
		return c.opts.ProbeRetryInterval
	}
	return c.opts.ProbeInterval
}

// isTimeout reports whether err says an answer came too late rather than
// that the server cannot be reached.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

func (c *Ingester) probed(err error) {
	c.mu.Lock()
	failedNow := err != nil && !c.probeFailed
	c.probeFailed = err != nil
	c.reachable = err == nil
	c.mu.Unlock()
	if failedNow {
		c.dialer.CloseAll()
	}
	if err != nil {
		c.staleAll()
	}
	signal(c.wake)
}

// staleAll marks every run stale, as health.Tracker.Probe marks every type
// not current after a failed probe.
func (c *Ingester) staleAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for resource, r := range c.runs {
		if r.interrupt(nil) {
			c.stale[resource] = r
		}
	}
}
