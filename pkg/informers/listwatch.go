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

	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/wire"
)

// earlyEnd is how much of its timeout a watch must have run for its end to
// count as the server's normal timeout rather than an interruption.
const earlyEnd = 0.9

// listWatch is the ListerWatcher of one run of one type's reflector. It sees
// every list and watch the reflector makes and reports what they tell about
// freshness: requests that could not reach the server, watches refused with
// 410 Gone, watches that ended before their timeout, relists. A run whose
// data stops being current is replaced by the Ingester (see Ingester.Start); the
// reflector's own retries, with their backoff, are never what recovery
// waits on.
//
// It makes its requests itself, with the cluster's REST clients, and
// decodes what the server sends straight into object.Objects (package
// wire): no unstructured maps, no second encoding. A list answers a
// *metainternalversion.List of *object.Object (a page of it, with its
// resourceVersion and continue token, for client-go's pager), a watch
// events of *object.Object, bookmarks included (object.NewBookmark).
type listWatch struct {
	cache *Ingester
	t     *object.Type
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
	if limit, err := lw.resumeWatch(); err != nil {
		return nil, err
	} else if limit > 0 {
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
	w := watch.NewStreamWatcherWithLogger(klog.FromContext(ctx), &observedDecoder{Decoder: wire.NewWatchDecoder(body, lw.decoder()), lw: lw},
		apierrors.NewClientErrorReporter(http.StatusInternalServerError, http.MethodGet, "ClientWatchDecoding"))
	var timeout time.Duration
	if opts.TimeoutSeconds != nil {
		timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	return &observedWatch{Interface: w, lw: lw, ctx: ctx, start: start, timeout: timeout}, nil
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

// report classifies the outcome of a request. A server that answers late
// or sheds the request (a timeout, 429 Too Many Requests) is busy, not
// gone: the type is SYNCING with that reason, and only a connection that
// cannot be made or is cut makes it DISCONNECTED.
func (lw *listWatch) report(ctx context.Context, err error) {
	c := lw.cache
	var status apierrors.APIStatus
	switch {
	case err == nil:
		c.health.ResourceRequestOK(c.name, lw.t.Resource)
		c.served(lw.run)
	case ctx.Err() != nil:
		// The run is stopping: not the server's doing.
	case apierrors.IsResourceExpired(err) || apierrors.IsGone(err):
		lw.expired()
	case apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err):
		// The reflector retries after its backoff.
		c.health.ResourceSlow(c.name, lw.t.Resource, err)
	case apierrors.IsNotFound(err):
		// The version is not served (any more): a CRD's served versions
		// changed, or it was removed. The reflector retries; the type
		// fails until a request succeeds or discovery names another
		// version, which a new run then caches.
		c.health.ResourceError(c.name, lw.t.Resource, lw.t.KindName(), err)
		c.notServed(lw.run)
	case errors.As(err, &status):
		// Forbidden, not found, ...: the reflector retries; the type
		// fails until a request succeeds.
		c.health.ResourceError(c.name, lw.t.Resource, lw.t.KindName(), err)
	case isTimeout(err):
		c.health.ResourceSlow(c.name, lw.t.Resource, err)
		lw.interrupted("API server slow to answer")
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
func (lw *listWatch) interrupted(why string) { lw.cache.interrupt(lw.run, why) }

// observedDecoder tells its listWatch of the errors a watch stream
// carries (a 410 Gone, say), in the goroutine that decodes the stream.
type observedDecoder struct {
	watch.Decoder
	lw *listWatch
}

func (d *observedDecoder) Decode() (watch.EventType, runtime.Object, error) {
	typ, obj, err := d.Decoder.Decode()
	if err == nil && typ == watch.Error {
		if err := apierrors.FromObject(obj); apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
			d.lw.expired()
		} else {
			d.lw.interrupted(fmt.Sprintf("watch failed: %v", err))
		}
	}
	return typ, obj, err
}

// observedWatch is a watch whose end its listWatch is told of when the
// reflector stops it: at the watch's timeout the reflector resumes from the
// last resourceVersion, as client-go always does; earlier, the stream was
// cut (a restart, a dropped connection) and what it missed is not known
// until the type is listed again. It adds no goroutine: the reflector stops
// every watch as soon as its stream ends, in its own goroutine, and errors
// in the stream are seen by its observedDecoder.
type observedWatch struct {
	watch.Interface
	lw       *listWatch
	ctx      context.Context // the request's: it ends when the run stops
	start    time.Time
	timeout  time.Duration
	stopOnce sync.Once
}

func (o *observedWatch) Stop() {
	o.stopOnce.Do(func() {
		o.Interface.Stop()
		switch {
		case o.ctx.Err() != nil:
			// The run is stopping.
		case o.timeout > 0 && time.Since(o.start) >= time.Duration(float64(o.timeout)*earlyEnd):
			// The server's normal end.
		default:
			o.lw.interrupted("watch ended before its timeout")
		}
	})
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
func (c *Ingester) checkResume(ctx context.Context, t *object.Type, rv string) bool {
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
