package informers

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/connrotation"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/klog/v2"

	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index"
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
	// CacheSecretData keeps the data and stringData of Secrets (core v1),
	// when Resources include them. Default false: they are dropped before
	// the object is stored, so that the cache and every answer built from
	// it hold the Secret's metadata (name, labels, type) and no credential.
	CacheSecretData bool
}

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
	return o
}

// Sink receives the objects of a cluster; the global index implements it.
type Sink interface {
	Upsert(o *index.Object) bool
	Delete(k index.Key) bool
	DeleteObject(o *index.Object) bool
	Objects(cluster, resource string) []*index.Object
}

// Ingester runs the ingestion of one cluster: one dynamic shared informer per
// configured type, feeding a Sink and reporting to a health.Tracker. An
// informer whose data stops being current is replaced by a fresh one as
// soon as the API server answers (see Start).
type Ingester struct {
	name      string
	sink      Sink
	health    *health.Tracker
	opts      Options
	names     []resourceName
	dynamic   dynamic.Interface
	discovery discovery.DiscoveryInterface
	// lists and watches are the REST clients of the informers' requests
	// (listWatch); watches has no rate limit.
	lists, watches rest.Interface
	// dialer tracks the cluster's connections so that Start closes every
	// one of them when the cluster stops, busy or idle.
	dialer *connrotation.Dialer

	mu sync.Mutex
	// reachable: the last probe succeeded and no request failed to connect
	// since. Runs are replaced only while it holds.
	reachable bool
	// probeFailed: the last probe failed.
	probeFailed bool
	// runs holds the current run of each started type; Start alone changes it.
	runs map[string]*typeRun
	// stale holds the runs to replace, by resource.
	stale map[string]*typeRun
	// wake tells Start that stale or reachable changed; probeNow asks the
	// probe to run at once. Both hold at most one signal.
	wake, probeNow chan struct{}
	// noCRD holds the custom resource types whose CustomResourceDefinition
	// could not be read (logged once each).
	noCRD map[string]bool
}

// typeRun is one run of one type's informer: its own reflector, store and
// handler, stopped and waited for as a whole.
type typeRun struct {
	t   *index.Type
	inf cache.SharedIndexInformer
	// ctx ends when the run is stopped (cancel).
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// mu orders the run's reports of freshness: once interrupted, a run
	// never reports itself synced.
	mu          sync.Mutex
	isSynced    bool
	interrupted bool
	// expired is set when the run's own watch was refused with 410 Gone:
	// its replacement need not ask again.
	expired bool

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
	if expired || r.inf == nil {
		return ""
	}
	return r.inf.LastSyncResourceVersion()
}

func (r *typeRun) isInterrupted() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.interrupted
}

// markSynced runs report and records the run synced, unless it was
// interrupted.
func (r *typeRun) markSynced(report func()) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.interrupted {
		return false
	}
	r.isSynced = true
	report()
	return true
}

// interrupt runs report and records the run interrupted; it returns true
// the first time.
func (r *typeRun) interrupt(report func()) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	report()
	first := !r.interrupted
	r.interrupted = true
	return first
}

// NewIngester returns the ingestion of cluster name, reached with cfg. Start runs it.
func NewIngester(name string, cfg *rest.Config, sink Sink, h *health.Tracker, opts Options) (*Ingester, error) {
	opts = opts.withDefaults()
	names, err := parseResourceNames(opts.Resources)
	if err != nil {
		return nil, fmt.Errorf("cluster %q: %w", name, err)
	}
	c := &Ingester{name: name, sink: sink, health: h, opts: opts, names: names, reachable: true,
		runs: map[string]*typeRun{}, stale: map[string]*typeRun{}, wake: make(chan struct{}, 1), probeNow: make(chan struct{}, 1),
		noCRD: map[string]bool{}}
	cfg = rest.CopyConfig(cfg)
	if cfg.Proxy == nil {
		// A config with a Proxy func is never shared through client-go's
		// transport cache: this cluster gets connections of its own, which
		// Start closes when the cluster stops.
		cfg.Proxy = http.ProxyFromEnvironment
	}
	dial := cfg.Dial
	if dial == nil {
		dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	c.dialer = connrotation.NewDialer(connrotation.DialFunc(dial))
	cfg.Dial = c.dialer.DialContext
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("cluster %q: http client: %w", name, err)
	}
	if c.dynamic, err = dynamic.NewForConfigAndClient(cfg, httpClient); err != nil {
		return nil, fmt.Errorf("cluster %q: dynamic client: %w", name, err)
	}
	if c.discovery, err = discovery.NewDiscoveryClientForConfigAndClient(cfg, httpClient); err != nil {
		return nil, fmt.Errorf("cluster %q: discovery client: %w", name, err)
	}
	// As the dynamic client configures its own: JSON, and a serializer
	// that reads the server's errors (metav1.Status).
	restCfg := dynamic.ConfigFor(cfg)
	restCfg.GroupVersion = nil
	if c.lists, err = rest.UnversionedRESTClientForConfigAndClient(restCfg, httpClient); err != nil {
		return nil, fmt.Errorf("cluster %q: REST client: %w", name, err)
	}
	restCfg.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
	if c.watches, err = rest.UnversionedRESTClientForConfigAndClient(restCfg, httpClient); err != nil {
		return nil, fmt.Errorf("cluster %q: REST client: %w", name, err)
	}
	return c, nil
}

// Start runs the cache until ctx ends, then stops every informer and
// goroutine it started before returning. Objects stay in the sink: removing
// them is the caller's decision (a restarted cache reconciles them).
//
// A type's data is current from the moment a list of it has been applied to
// the sink until its watch is interrupted (a request that cannot reach the
// server, a watch refused with 410 Gone or cut before its timeout, a failed
// probe). Its informer is then replaced by a fresh one, which lists at once,
// as soon as the API server answers again: recovery waits on the probe
// (ProbeRetryInterval), never on client-go's backoff.
func (c *Ingester) Start(ctx context.Context) error {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("cluster", c.name))
	// Last, once nothing uses them: close the cluster's connections. Closing
	// only idle ones would leave a connection whose last stream is still
	// being torn down, and its read goroutine with it.
	defer c.dialer.CloseAll()
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
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
	wg.Go(func() { c.probe(ctx) })

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
		case <-c.wake:
			c.replaceStale(ctx)
		}
	}
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
	c.mu.Unlock()
	signal(c.probeNow)
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
		run, err := c.startRun(ctx, old.t)
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
			klog.FromContext(ctx).Error(err, "Restarting informer failed", "resource", resource)
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

// startServed starts an informer for every name the cluster serves and
// returns the names still to look up.
func (c *Ingester) startServed(ctx context.Context, names []resourceName) []resourceName {
	logger := klog.FromContext(ctx)
	types, missing, err := resolve(c.discovery, names)
	if err != nil {
		logger.Info("Discovery failed, will retry", "err", err)
		return names
	}
	for name, err := range missing {
		c.health.ResourceError(c.name, name, "", err)
	}
	for _, t := range types {
		c.setPrinter(t)
		run, err := c.startRun(ctx, t)
		if err != nil {
			logger.Error(err, "Starting informer failed, will retry", "resource", t.Resource)
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

// startRun starts a fresh informer for t: it lists, then watches.
func (c *Ingester) startRun(ctx context.Context, t *index.Type) (*typeRun, error) {
	c.loadPrinterColumns(ctx, t)
	ctx, cancel := context.WithCancel(ctx)
	run := &typeRun{t: t, ctx: ctx, cancel: cancel}
	lw := &listWatch{cache: c, t: t, run: run, path: collectionPath(t.GVR)}
	// A ListWatch claims WatchList semantics: with client-go's
	// WatchListClient feature on (the default), the reflector lists by a
	// streaming watch (sendInitialEvents), and falls back to a plain list
	// when the server refuses it.
	inf := cache.NewSharedIndexInformerWithOptions(&cache.ListWatch{
		ListWithContextFunc:  lw.ListWithContext,
		WatchFuncWithContext: lw.WatchWithContext,
	}, &index.Object{}, cache.SharedIndexInformerOptions{ObjectDescription: t.Resource})
	if err := inf.SetWatchErrorHandlerWithContext(c.watchErrorHandler(t)); err != nil {
		cancel()
		return nil, fmt.Errorf("set watch error handler of %s: %w", t.Resource, err)
	}
	reg, err := inf.AddEventHandler(&handler{cache: c, resource: t.Resource})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("add event handler of %s: %w", t.Resource, err)
	}
	c.health.ResourceStarting(c.name, t.Resource, t.KindName())
	run.inf = inf
	run.wg.Go(func() { inf.RunWithContext(ctx) })
	run.wg.Go(func() { c.awaitSync(ctx, run, inf.GetStore(), reg) })
	return run, nil
}

// awaitSync waits until every object of the initial list reached the
// handler, reports the type synced and prunes objects the sink still holds
// from an earlier run of this cluster that the cluster no longer has.
func (c *Ingester) awaitSync(ctx context.Context, run *typeRun, store cache.Store, reg cache.ResourceEventHandlerRegistration) {
	t := run.t
	deadline := time.NewTimer(c.opts.SyncTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for !reg.HasSynced() {
		select {
		case <-ctx.Done():
			return
		case <-deadline.C:
			c.health.ResourceError(c.name, t.Resource, t.KindName(),
				fmt.Errorf("%w: not synced after %s", health.ErrSyncDeadline, c.opts.SyncTimeout))
		case <-tick.C:
		}
	}
	for _, o := range c.sink.Objects(c.name, t.Resource) {
		if _, exists, _ := store.GetByKey(storeKey(o)); !exists {
			c.sink.DeleteObject(o)
		}
	}
	if run.markSynced(func() { c.health.ResourceSynced(c.name, t.Resource) }) {
		klog.FromContext(ctx).V(2).Info("Resource synced", "resource", t.Resource)
	}
}

func storeKey(o *index.Object) string {
	if o.Namespace == "" {
		return o.Name
	}
	return o.Namespace + "/" + o.Name
}

// secrets is the type whose data Options.CacheSecretData governs.
var secrets = schema.GroupResource{Resource: "secrets"}

// probe checks that the API server answers, every ProbeInterval while it
// does and every ProbeRetryInterval while it does not, and at once when a
// request failed to connect. A failed probe closes the cluster's
// connections, so that a watch on a silently dead one fails instead of
// hanging, and marks every run stale; a successful one lets Start replace
// the stale runs.
func (c *Ingester) probe(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-c.probeNow:
		}
		pctx, cancel := context.WithTimeout(ctx, c.opts.ProbeTimeout)
		err := c.discovery.RESTClient().Get().AbsPath("/version").Do(pctx).Error()
		cancel()
		if ctx.Err() != nil {
			return
		}
		c.health.Probe(c.name, err)
		c.probed(err)
		if err != nil {
			timer.Reset(c.opts.ProbeRetryInterval)
		} else {
			timer.Reset(c.opts.ProbeInterval)
		}
	}
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
		if r.interrupt(func() {}) {
			c.stale[resource] = r
		}
	}
}

// handler applies informer events to the sink.
type handler struct {
	cache    *Ingester
	resource string
}

func (h *handler) OnAdd(obj any, _ bool)  { h.upsert(obj, health.EventAdded) }
func (h *handler) OnUpdate(_, newObj any) { h.upsert(newObj, health.EventModified) }
func (h *handler) OnDelete(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if o, ok := obj.(*index.Object); ok {
		h.cache.sink.Delete(o.Key())
		h.event(health.EventDeleted)
	}
}

func (h *handler) upsert(obj any, typ health.EventType) {
	if o, ok := obj.(*index.Object); ok {
		h.cache.sink.Upsert(o)
		h.event(typ)
	}
}

func (h *handler) event(typ health.EventType) {
	h.cache.health.ResourceEvent(h.cache.name, h.resource, typ, time.Now())
}
