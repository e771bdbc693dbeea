package informers

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/wire"
)

// earlyEnd is how much of its timeout a watch must have run for its end to
// count as the server's normal timeout rather than an interruption.
const earlyEnd = 0.9

// listWatch is the ListerWatcher of one run of one type's informer. It sees
// every list and watch the reflector makes and reports what they tell about
// freshness: requests that could not reach the server, watches refused with
// 410 Gone, watches that ended before their timeout, relists. A run whose
// data stops being current is replaced by the Ingester (see Ingester.Start); the
// reflector's own retries, with their backoff, are never what recovery
// waits on.
//
// It makes its requests itself, with the cluster's REST clients, and
// decodes what the server sends straight into index.Objects (package
// wire): no unstructured maps, no second encoding. A list answers a
// *metainternalversion.List of *index.Object (a page of it, with its
// resourceVersion and continue token, for client-go's pager), a watch
// events of *index.Object, bookmarks included (index.NewBookmark).
type listWatch struct {
	cache *Ingester
	t     *index.Type
	run   *typeRun
	// path is the URL path of the type's collection, all namespaces.
	path string
}

var _ cache.ListerWatcherWithContext = (*listWatch)(nil)

// parameterCodec encodes ListOptions as query parameters, as client-go's
// dynamic client does.
var parameterCodec = func() runtime.ParameterCodec {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, versionV1)
	return runtime.NewParameterCodec(s)
}()

var versionV1 = schema.GroupVersion{Version: "v1"}

// collectionPath returns the URL path of the objects of gvr in every namespace.
func collectionPath(gvr schema.GroupVersionResource) string {
	if gvr.Group == "" {
		return "/api/" + gvr.Version + "/" + gvr.Resource
	}
	return "/apis/" + gvr.Group + "/" + gvr.Version + "/" + gvr.Resource
}

// decoder returns a decoder of the type's objects, one per request: a
// list's page and a watch's stream each reuse its buffers.
func (lw *listWatch) decoder() *wire.Decoder {
	dropData := lw.t.GVR.GroupResource() == secrets && !lw.cache.opts.CacheSecretData
	return wire.NewDecoder(lw.cache.name, lw.t, dropData)
}

func (lw *listWatch) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	if err := lw.parked(ctx); err != nil {
		return nil, err
	}
	lw.listing()
	res := lw.cache.lists.Get().AbsPath(lw.path).SpecificallyVersionedParams(&opts, parameterCodec, versionV1).Do(ctx)
	raw, err := res.Raw()
	if err != nil {
		err = res.Error() // the server's Status, when it sent one
	}
	lw.report(ctx, err)
	if err != nil {
		return nil, cmp.Or(lw.parked(ctx), err)
	}
	list, err := lw.decoder().List(raw)
	if err != nil {
		err = fmt.Errorf("decode list of %s: %w", lw.t.Resource, err)
		lw.cache.health.ResourceError(lw.cache.name, lw.t.Resource, lw.t.KindName(), err)
		return nil, err
	}
	return list, nil
}

func (lw *listWatch) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	if err := lw.parked(ctx); err != nil {
		return nil, err
	}
	c := lw.cache
	if opts.SendInitialEvents != nil && *opts.SendInitialEvents {
		lw.listing() // a streaming list
	} else {
		c.health.ResourceWatch(c.name, lw.t.Resource)
	}
	if limit := int64(c.opts.WatchTimeout.Seconds()); limit > 0 && (opts.TimeoutSeconds == nil || *opts.TimeoutSeconds > limit) {
		opts.TimeoutSeconds = &limit
	}
	start := time.Now()
	opts.Watch = true
	// The watch client has no rate limit: client-go never throttles watches.
	body, err := lw.cache.watches.Get().AbsPath(lw.path).SpecificallyVersionedParams(&opts, parameterCodec, versionV1).Stream(ctx)
	lw.report(ctx, err)
	if err != nil {
		return nil, cmp.Or(lw.parked(ctx), err)
	}
	// As client-go's REST client runs a watch: a decoding error becomes an
	// ERROR event, the end of the body the end of the watch.
	w := watch.NewStreamWatcherWithLogger(klog.FromContext(ctx), wire.NewWatchDecoder(body, lw.decoder()),
		apierrors.NewClientErrorReporter(http.StatusInternalServerError, http.MethodGet, "ClientWatchDecoding"))
	var timeout time.Duration
	if opts.TimeoutSeconds != nil {
		timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	return newObservedWatch(w, lw, start, timeout), nil
}

// parked holds a request of an interrupted run until the run is stopped and
// returns the run's context's error, which the reflector does not retry;
// for a run not interrupted it returns nil at once. An interrupted run is
// replaced as soon as the server answers (Ingester.replaceStale), which stops
// it first. Its reflector must not retry meanwhile: client-go sleeps
// between failed WatchList requests without watching the context, growing
// the sleep up to 30 s during an outage, and the replacement would wait for
// the sleep to end before listing.
func (lw *listWatch) parked(ctx context.Context) error {
	if !lw.run.isInterrupted() {
		return nil
	}
	<-ctx.Done()
	return ctx.Err()
}

// listing counts a list, plain or streaming. One after the run synced is the
// reflector relisting on its own (after an error it does not retry in
// place): the run's data is no longer known current.
func (lw *listWatch) listing() {
	if lw.run.synced() {
		lw.interrupted("relisting after a watch error")
	}
	lw.cache.health.ResourceList(lw.cache.name, lw.t.Resource)
}

// report classifies the outcome of a request.
func (lw *listWatch) report(ctx context.Context, err error) {
	c := lw.cache
	var status apierrors.APIStatus
	switch {
	case err == nil:
		c.health.ResourceRequestOK(c.name, lw.t.Resource)
	case ctx.Err() != nil:
		// The run is stopping: not the server's doing.
	case apierrors.IsResourceExpired(err) || apierrors.IsGone(err):
		lw.expired()
	case errors.As(err, &status):
		// Forbidden, not found, ...: the watch error handler reports it.
	default:
		c.health.ResourceUnreachable(c.name, lw.t.Resource, err)
		lw.interrupted("API server unreachable")
		c.unreachable()
	}
}

func (lw *listWatch) expired() {
	lw.run.mu.Lock()
	lw.run.expired = true
	lw.run.mu.Unlock()
	lw.cache.health.ResourceExpired(lw.cache.name, lw.t.Resource)
	lw.interrupted("watch expired (410 Gone): its resourceVersion was compacted")
}

// interrupted reports that this run's data is not known current any more
// and asks the Ingester to replace the run.
func (lw *listWatch) interrupted(why string) {
	c := lw.cache
	if lw.run.interrupt(func() { c.health.ResourceInterrupted(c.name, lw.t.Resource, why, time.Now()) }) {
		c.replace(lw.run)
	}
}

// observedWatch passes a watch's events on to the reflector and tells its
// listWatch of a 410 Gone in the stream and of an end before the watch's
// timeout. Stop returns once its goroutine has.
type observedWatch struct {
	w        watch.Interface
	lw       *listWatch
	start    time.Time
	timeout  time.Duration
	out      chan watch.Event
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
}

func newObservedWatch(w watch.Interface, lw *listWatch, start time.Time, timeout time.Duration) *observedWatch {
	o := &observedWatch{w: w, lw: lw, start: start, timeout: timeout,
		out: make(chan watch.Event), stop: make(chan struct{}), done: make(chan struct{})}
	go o.run()
	return o
}

func (o *observedWatch) ResultChan() <-chan watch.Event { return o.out }

func (o *observedWatch) Stop() {
	o.stopOnce.Do(func() {
		close(o.stop)
		o.w.Stop()
	})
	<-o.done
}

func (o *observedWatch) run() {
	defer close(o.done)
	defer close(o.out)
	for {
		select {
		case <-o.stop:
			return
		case ev, ok := <-o.w.ResultChan():
			if !ok {
				o.ended()
				return
			}
			if ev.Type == watch.Error {
				o.failed(apierrors.FromObject(ev.Object))
			}
			select {
			case o.out <- ev:
			case <-o.stop:
				return
			}
		}
	}
}

func (o *observedWatch) failed(err error) {
	switch {
	case apierrors.IsResourceExpired(err) || apierrors.IsGone(err):
		o.lw.expired()
	default:
		o.lw.interrupted(fmt.Sprintf("watch failed: %v", err))
	}
}

// ended handles the end of the server's stream: at its timeout the
// reflector resumes from the last resourceVersion, as client-go always does;
// earlier, the stream was cut (a restart, a dropped connection) and what it
// missed is not known until the type is listed again.
func (o *observedWatch) ended() {
	select {
	case <-o.stop:
		return
	default:
	}
	if o.timeout > 0 && time.Since(o.start) >= time.Duration(float64(o.timeout)*earlyEnd) {
		return
	}
	o.lw.interrupted("watch ended before its timeout")
}

// watchErrorHandler reports API errors of lists and watches (forbidden, not
// found, not served) to health before client-go's own handling.
func (c *Ingester) watchErrorHandler(t *index.Type) cache.WatchErrorHandlerWithContext {
	return func(ctx context.Context, r *cache.Reflector, err error) {
		if ctx.Err() != nil {
			return // the run is stopping: not the server's doing
		}
		var status apierrors.APIStatus
		if errors.As(err, &status) && !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
			c.health.ResourceError(c.name, t.Resource, t.KindName(), err)
		}
		cache.DefaultWatchErrorHandler(ctx, r, err)
	}
}

// resumeCheckTimeout bounds checkResume: the server ends its watch after a
// second (TimeoutSeconds), which this leaves room for.
const resumeCheckTimeout = 5 * time.Second

// checkResume asks the server to resume the interrupted watch of t from
// rv, the last resourceVersion the interrupted run saw, as client-go's
// reflector would, and counts a refusal with 410 Gone
// (fleetcache_watch_expired_total): the server no longer holds the history
// since rv, compacted or never in a restarted server's watch cache, while
// the type was cut off. It runs beside the replacement's list and makes
// nothing current: a resumed watch proves nothing until its first event or
// bookmark (docs/design.md, "Why relist rather than resume"). It returns
// whether the server answered.
func (c *Ingester) checkResume(ctx context.Context, t *index.Type, rv string) bool {
	ctx, cancel := context.WithTimeout(ctx, resumeCheckTimeout)
	defer cancel()
	timeout := int64(1)
	w, err := c.dynamic.Resource(t.GVR).Watch(ctx, metav1.ListOptions{ResourceVersion: rv, TimeoutSeconds: &timeout})
	answered := err == nil
	if err == nil {
		defer w.Stop()
		select {
		case ev, ok := <-w.ResultChan():
			if ok && ev.Type == watch.Error {
				err = apierrors.FromObject(ev.Object)
			}
		case <-ctx.Done():
			answered = false
		}
	}
	var status apierrors.APIStatus
	switch {
	case apierrors.IsResourceExpired(err) || apierrors.IsGone(err):
		c.health.ResourceExpired(c.name, t.Resource)
		klog.FromContext(ctx).V(2).Info("The interrupted watch could not resume: its history is gone", "resource", t.Resource, "resourceVersion", rv)
		return true
	case err == nil:
		return answered
	default:
		return errors.As(err, &status)
	}
}
