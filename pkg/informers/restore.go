package informers

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
	"github.com/fleetcache/fleetcache/pkg/index/object"
)

// A warm start (pkg/warmstart) fills the index from a snapshot before the
// clusters run. The first run of each restored type then does not list:
//
//  1. Its reflector's first list is answered with the restored objects'
//     resourceVersion and no items (resumeList): the objects are in the
//     index already. A consistent list of one object (limit=1, no
//     resourceVersion) reads the member's current resourceVersion
//     meanwhile, the run's target.
//  2. Its watch resumes from the restored resourceVersion: the member
//     sends what changed since, and deletions become tombs as usual.
//  3. The type is SYNCED once the run's clock reaches the target (an
//     event or a bookmark at or past it): every change the member had
//     when the run began is then applied. A type that changed since the
//     snapshot gets there with the changes. A quiet one gets there with a
//     bookmark: the consistent read made the watch cache ask etcd how far
//     it is (Kubernetes' consistent reads from the cache), and the cache
//     sends a watch a bookmark two seconds before the watch's timeout, so
//     the first resumed watch asks for resumeWatchTimeouts[0] seconds.
//     Servers whose cache does not learn the target so (consistent reads
//     from etcd) get a second, longer watch, which the cache's periodic
//     bookmark (a minute after a watch begins) may end.
//  4. While a warm start still loads the snapshot (Options.Loading), a
//     run writes nothing to the sink and reports nothing synced: its
//     store waits for the load before its first write. The watch begins
//     meanwhile (the resumed list writes nothing), so that its changes
//     and bookmarks are waiting when the load ends. A load that fails
//     leaves the sink empty: each run that resumed is interrupted, and
//     lists.
//  5. A member that answers 410 Gone (the resourceVersion was compacted)
//     interrupts the run, as any expired watch does: its replacement
//     lists, and the differences reach the index as events. So does a
//     member whose resumed watches end without reaching the target, one
//     whose current resourceVersion is older than the restored one
//     (restored from a backup), and another member under the same name (a
//     cluster rebuilt: see Restored.Member).

// Restored is what a warm start restored of one type of a cluster.
type Restored struct {
	// Type is the type of the restored objects; nil when none was
	// restored (the member served none).
	Type *object.Type
	// ResourceVersion is the member's resourceVersion the restored
	// objects are current up to.
	ResourceVersion string
	// Member identifies the member they were read from (the UID of its
	// kube-system namespace): a cluster rebuilt under the same name has
	// another history, in which ResourceVersion means nothing, and is
	// listed. Empty: unknown, listed too.
	Member string
}

// Loading is a warm start's load of the sink, under way while the
// clusters start: as with a context, Done is closed once it ended, and
// Err then says whether it failed (the sink then holds nothing restored).
type Loading interface {
	Done() <-chan struct{}
	Err() error
}

// loaded waits for the warm start's load to end (Options.Loading): nil
// once it succeeded or when there is none, its error when it failed,
// ctx's when ctx ended first.
func (c *Ingester) loaded(ctx context.Context) error {
	l := c.opts.Loading
	if l == nil {
		return nil
	}
	select {
	case <-l.Done():
		return l.Err()
	case <-ctx.Done():
		return ctx.Err()
	}
}

// loadFailed reports, without waiting, whether the warm start's load
// failed.
func (c *Ingester) loadFailed() bool {
	l := c.opts.Loading
	if l == nil {
		return false
	}
	select {
	case <-l.Done():
		return l.Err() != nil
	default:
		return false
	}
}

// resumeWatchTimeouts are the timeouts, in seconds, of a resuming run's
// watches: the first ends with the bookmark the watch cache sends two
// seconds before a timeout, the second is long enough for its periodic
// one (every minute). The run lists if they end before it caught up.
var resumeWatchTimeouts = []int64{3, 75}

// memberID returns the identity of the cluster's member, the UID of its
// kube-system namespace, reading it once and telling health; "" when the
// member has none or fleetcache may not read it.
func (c *Ingester) memberID(ctx context.Context) (string, error) {
	c.idMu.Lock()
	defer c.idMu.Unlock()
	if c.idKnown {
		return c.id, nil
	}
	raw, err := c.lists.Get().AbsPath("/api/v1/namespaces/kube-system").Do(ctx).Raw()
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsForbidden(err):
	case err != nil:
		return "", err
	default:
		var ns struct {
			Metadata struct{ UID string } `json:"metadata"`
		}
		if err := json.Unmarshal(raw, &ns); err != nil {
			return "", fmt.Errorf("read the kube-system namespace: %w", err)
		}
		c.id = ns.Metadata.UID
	}
	c.idKnown = true
	c.health.SetMemberID(c.name, c.id)
	return c.id, nil
}

// takeRestored takes the cluster's restored types from Options.Restored
// and removes from the sink those the cluster no longer caches, once the
// load ended.
func (c *Ingester) takeRestored(ctx context.Context) {
	if c.opts.Restored == nil {
		return
	}
	c.restored = c.opts.Restored(c.name)
	configured := map[string]bool{}
	for _, n := range c.names {
		configured[n.name] = true
	}
	for resource := range c.restored {
		if !configured[resource] {
			if c.loaded(ctx) != nil && ctx.Err() != nil {
				return
			}
			c.sink.RemoveResource(c.name, resource)
			c.health.RemoveResource(c.name, resource)
			delete(c.restored, resource)
		}
	}
}

// restoredType returns what was restored of t's resource and whether its
// first run resumes from it: the member still serves the restored type.
// When it serves another version or kind, the restored objects are
// removed, once the load ended, and the run lists.
func (c *Ingester) restoredType(ctx context.Context, t *object.Type) (Restored, bool) {
	r, ok := c.restored[t.Resource]
	delete(c.restored, t.Resource)
	switch {
	case !ok || r.ResourceVersion == "":
		return Restored{}, false
	case r.Type == nil:
		t.Codec = c.opts.Codecs.For(t.Resource)
		t.Projected = fieldpath.NewSet(c.sink.IndexedPaths(t.Resource))
		r.Type = t
		return r, true
	case r.Type.GVR != t.GVR || r.Type.Kind != t.Kind || r.Type.Namespaced != t.Namespaced:
		if c.loaded(ctx) == nil || ctx.Err() == nil {
			c.sink.RemoveResource(c.name, t.Resource)
		}
		return Restored{}, false
	}
	return r, true
}

// resumeList answers a restored run's first list (see above), and returns
// false for every other list.
func (g *gatedListWatch) resumeList(ctx context.Context) (runtime.Object, bool, error) {
	run, lw := g.run, g.lw
	run.mu.Lock()
	rv, member := run.restoredRV, run.restoredMember
	run.mu.Unlock()
	if rv == "" || g.c.loadFailed() {
		return nil, false, nil
	}
	id, err := g.c.memberID(ctx)
	if err != nil {
		lw.report(ctx, err)
		return nil, true, cmp.Or(lw.parked(ctx), err)
	}
	if id == "" || id != member {
		// Another member, or one that cannot say: list.
		run.mu.Lock()
		run.restoredRV = ""
		run.mu.Unlock()
		klog.FromContext(ctx).Info("The restored objects are not this member's: listing", "resource", lw.t.Resource, "member", id, "snapshot", member)
		return nil, false, nil
	}
	restored, _ := index.ParseResourceVersion(rv)
	// A consistent read: the member's current resourceVersion, which a
	// watch cache that serves it learns from etcd too, so that its
	// bookmarks reach it (see above).
	one := metav1.ListOptions{Limit: 1}
	res := g.c.lists.Get().AbsPath(lw.path).SpecificallyVersionedParams(&one, parameterCodec, versionV1).Do(ctx)
	raw, err := res.Raw()
	if err != nil {
		err = res.Error()
		lw.report(ctx, err)
		return nil, true, cmp.Or(lw.parked(ctx), err)
	}
	lw.report(ctx, nil)
	list, err := lw.decoder().List(raw)
	if err != nil {
		return nil, true, fmt.Errorf("decode list of %s: %w", lw.t.Resource, err)
	}
	current, ok := index.ParseResourceVersion(list.ResourceVersion)
	run.mu.Lock()
	run.restoredRV = ""
	if !ok || current < restored {
		// Not a history that goes on from the snapshot's: list.
		run.mu.Unlock()
		return nil, false, nil
	}
	run.resumedList, run.resumed, run.target = true, true, current
	run.resuming.Store(true)
	run.mu.Unlock()
	return &metainternalversion.List{ListMeta: metav1.ListMeta{ResourceVersion: rv}}, true, nil
}

// wasResumed reports whether the run's first list was answered from the
// snapshot.
func (r *typeRun) wasResumed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.resumed
}

// takeResumedList reports, once, that a Replace applies a restored run's
// first list, which holds no items: the restored objects stay.
func (r *typeRun) takeResumedList() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	was := r.resumedList
	r.resumedList = false
	return was
}

// resumeWatch is asked before each watch of a resuming run: the timeout the
// watch asks for, 0 when the run is not resuming; and an error when the
// run gave up resuming.
func (lw *listWatch) resumeWatch() (int64, error) {
	run := lw.run
	run.mu.Lock()
	resuming := run.resuming.Load()
	if resuming {
		run.resumeWatches++
	}
	n := run.resumeWatches
	run.mu.Unlock()
	switch {
	case !resuming:
		return 0, nil
	case n > len(resumeWatchTimeouts):
		why := fmt.Sprintf("its watch resumed from the snapshot did not reach the member's resourceVersion in %d watches", len(resumeWatchTimeouts))
		lw.interrupted(why)
		return 0, errors.New(why)
	}
	return resumeWatchTimeouts[n-1], nil
}

// caughtUp is told of each resourceVersion a resuming run's watch reached:
// once it is the target, the run is synced.
func (c *Ingester) caughtUp(run *typeRun, rv string) {
	if !run.resuming.Load() {
		return // every event of every run that is not resuming: no lock
	}
	n, ok := index.ParseResourceVersion(rv)
	run.mu.Lock()
	done := ok && n >= run.target && run.resuming.CompareAndSwap(true, false)
	run.mu.Unlock()
	if done {
		c.listApplied(run)
	}
}
