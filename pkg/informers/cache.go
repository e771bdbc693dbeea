package informers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/connrotation"
	"k8s.io/klog/v2"

	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index"
)

// Options configure the cache of every cluster.
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

// Cache keeps the copy of one cluster: one dynamic shared informer factory
// over the configured types, feeding a Sink and reporting to a health.Tracker.
type Cache struct {
	name      string
	sink      Sink
	health    *health.Tracker
	opts      Options
	names     []resourceName
	dynamic   dynamic.Interface
	discovery discovery.DiscoveryInterface
	// dialer tracks the cluster's connections so that Start closes every
	// one of them when the cluster stops, busy or idle.
	dialer *connrotation.Dialer
}

// NewCache returns the cache of cluster name, reached with cfg. Start runs it.
func NewCache(name string, cfg *rest.Config, sink Sink, h *health.Tracker, opts Options) (*Cache, error) {
	opts = opts.withDefaults()
	names, err := parseResourceNames(opts.Resources)
	if err != nil {
		return nil, fmt.Errorf("cluster %q: %w", name, err)
	}
	c := &Cache{name: name, sink: sink, health: h, opts: opts, names: names}
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(c.observe)
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
	return c, nil
}

// Start runs the cache until ctx ends, then stops every informer and
// goroutine it started before returning. Objects stay in the sink: removing
// them is the caller's decision (a restarted cache reconciles them).
func (c *Cache) Start(ctx context.Context) error {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("cluster", c.name))
	// Last, once nothing uses them: close the cluster's connections. Closing
	// only idle ones would leave a connection whose last stream is still
	// being torn down, and its read goroutine with it.
	defer c.dialer.CloseAll()
	var wg sync.WaitGroup
	defer wg.Wait()
	factory := dynamicinformer.NewDynamicSharedInformerFactory(c.dynamic, 0)
	defer factory.Shutdown()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	c.health.AddCluster(c.name)
	wg.Go(func() { c.probe(ctx) })

	pending := c.names
	retry := time.NewTicker(c.opts.DiscoveryRetry)
	defer retry.Stop()
	for {
		pending = c.startServed(ctx, factory, pending, &wg)
		if len(pending) == 0 {
			<-ctx.Done()
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-retry.C:
		}
	}
}

// startServed starts an informer for every name the cluster serves and
// returns the names still to look up.
func (c *Cache) startServed(ctx context.Context, factory dynamicinformer.DynamicSharedInformerFactory, names []resourceName, wg *sync.WaitGroup) []resourceName {
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
		if err := c.startInformer(ctx, factory, t, wg); err != nil {
			logger.Error(err, "Starting informer failed, will retry", "resource", t.Resource)
			missing[t.Resource] = err
		}
	}
	factory.Start(ctx.Done())
	var rest []resourceName
	for _, n := range names {
		if _, ok := missing[n.name]; ok {
			rest = append(rest, n)
		}
	}
	return rest
}

func (c *Cache) startInformer(ctx context.Context, factory dynamicinformer.DynamicSharedInformerFactory, t *index.Type, wg *sync.WaitGroup) error {
	inf := factory.ForResource(t.GVR).Informer()
	if err := inf.SetTransform(c.transform(t)); err != nil {
		return fmt.Errorf("set transform of %s: %w", t.Resource, err)
	}
	if err := inf.SetWatchErrorHandlerWithContext(c.watchErrorHandler(t)); err != nil {
		return fmt.Errorf("set watch error handler of %s: %w", t.Resource, err)
	}
	reg, err := inf.AddEventHandler(&handler{cache: c, resource: t.Resource})
	if err != nil {
		return fmt.Errorf("add event handler of %s: %w", t.Resource, err)
	}
	c.health.ResourceStarting(c.name, t.Resource, t.KindName())
	wg.Go(func() { c.awaitSync(ctx, t, inf.GetStore(), reg) })
	return nil
}

// awaitSync waits until every object of the initial list reached the
// handler, reports the type synced and prunes objects the sink still holds
// from an earlier run of this cluster that the cluster no longer has.
func (c *Cache) awaitSync(ctx context.Context, t *index.Type, store cache.Store, reg cache.ResourceEventHandlerRegistration) {
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
	c.health.ResourceSynced(c.name, t.Resource)
	klog.FromContext(ctx).V(2).Info("Resource synced", "resource", t.Resource)
}

func storeKey(o *index.Object) string {
	if o.Namespace == "" {
		return o.Name
	}
	return o.Namespace + "/" + o.Name
}

// secrets is the type whose data Options.CacheSecretData governs.
var secrets = schema.GroupResource{Resource: "secrets"}

// lastApplied is the annotation kubectl apply writes: a second copy of the object.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// transform turns what the reflector decoded into the compact index.Object
// before client-go stores it. It is idempotent, as client-go requires.
func (c *Cache) transform(t *index.Type) cache.TransformFunc {
	return func(obj any) (any, error) {
		switch o := obj.(type) {
		case *unstructured.Unstructured:
			if t.GVR.GroupResource() == secrets && !c.opts.CacheSecretData {
				// Before encoding: the credential never reaches the
				// index, its JSON or any answer.
				delete(o.Object, "data")
				delete(o.Object, "stringData")
			}
			if meta, ok := o.Object["metadata"].(map[string]any); ok {
				delete(meta, "managedFields")
				if ann, ok := meta["annotations"].(map[string]any); ok {
					delete(ann, lastApplied)
					if len(ann) == 0 {
						delete(meta, "annotations")
					}
				}
			}
			return index.NewObject(c.name, t, o)
		case cache.DeletedFinalStateUnknown:
			inner, err := c.transform(t)(o.Obj)
			if err != nil {
				return nil, err
			}
			o.Obj = inner
			return o, nil
		default:
			return obj, nil
		}
	}
}

func (c *Cache) watchErrorHandler(t *index.Type) cache.WatchErrorHandlerWithContext {
	return func(ctx context.Context, r *cache.Reflector, err error) {
		var status apierrors.APIStatus
		switch {
		case apierrors.IsResourceExpired(err) || apierrors.IsGone(err):
			// The reflector relists; the transport counts it.
		case errors.As(err, &status):
			c.health.ResourceError(c.name, t.Resource, t.KindName(), err)
		}
		cache.DefaultWatchErrorHandler(ctx, r, err)
	}
}

// probe checks that the API server answers, so a connection that died
// silently is noticed within ProbeInterval+ProbeTimeout.
func (c *Cache) probe(ctx context.Context) {
	tick := time.NewTicker(c.opts.ProbeInterval)
	defer tick.Stop()
	for {
		pctx, cancel := context.WithTimeout(ctx, c.opts.ProbeTimeout)
		err := c.discovery.RESTClient().Get().AbsPath("/version").Do(pctx).Error()
		cancel()
		if ctx.Err() != nil {
			return
		}
		c.health.Probe(c.name, err)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// handler applies informer events to the sink.
type handler struct {
	cache    *Cache
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

// observe wraps the cluster's transport to see, per resource type, every
// list and watch request and whether the server could be reached: what
// client-go's reflectors do not report (relists, watch restarts, recovery).
func (c *Cache) observe(rt http.RoundTripper) http.RoundTripper {
	wanted := map[string]bool{}
	for _, n := range c.names {
		wanted[n.name] = true
	}
	return &observer{cache: c, wanted: wanted, next: rt}
}

type observer struct {
	cache  *Cache
	wanted map[string]bool
	next   http.RoundTripper
}

// WrappedRoundTripper lets client-go reach the transport underneath.
func (o *observer) WrappedRoundTripper() http.RoundTripper { return o.next }

// RoundTrip reports list and watch requests of the wanted types to health.
func (o *observer) RoundTrip(req *http.Request) (*http.Response, error) {
	c, rt := o.cache, o.next
	resource := requestResource(req)
	if !o.wanted[resource] {
		return rt.RoundTrip(req)
	}
	q := req.URL.Query()
	if q.Get("watch") == "true" || q.Get("watch") == "1" {
		if q.Get("sendInitialEvents") == "true" {
			c.health.ResourceList(c.name, resource)
		} else {
			c.health.ResourceWatch(c.name, resource)
		}
	} else {
		c.health.ResourceList(c.name, resource)
	}
	resp, err := rt.RoundTrip(req)
	switch {
	case err != nil && req.Context().Err() == nil:
		c.health.ResourceUnreachable(c.name, resource, err)
	case err == nil && resp.StatusCode < 300:
		c.health.ResourceRequestOK(c.name, resource)
	}
	return resp, err
}

// requestResource returns the kubectl name of the collection a GET request
// lists or watches across all namespaces ("pods", "deployments.apps"), or "".
func requestResource(req *http.Request) string {
	if req.Method != http.MethodGet {
		return ""
	}
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	switch {
	case len(parts) == 3 && parts[0] == "api":
		return parts[2]
	case len(parts) == 4 && parts[0] == "apis":
		return parts[3] + "." + parts[1]
	}
	return ""
}
