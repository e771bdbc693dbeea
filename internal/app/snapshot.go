package app

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"

	"github.com/fleetcache/fleetcache/pkg/clusters"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/compact"
	"github.com/fleetcache/fleetcache/pkg/informers"
	"github.com/fleetcache/fleetcache/pkg/snapshot"
	"github.com/fleetcache/fleetcache/pkg/warmstart"
)

// unregisteredGrace is how long a cluster restored from the snapshot may
// wait for its source to register it again before its objects are
// dropped: live sources (a directory, Secrets) register theirs within
// seconds of the start.
const unregisteredGrace = time.Minute

// warmStart is the snapshot of the index (pkg/warmstart): its store, the
// load of what it holds, and the writer that keeps it. The load runs while
// the clusters start (load): it implements informers.Loading, which holds
// their writes to the index until it ends.
type warmStart struct {
	store  *snapshot.Store
	writer *warmstart.Writer
	opts   warmstart.Options
	dir    string
	logger klog.Logger
	// loader loads the snapshot; nil when there is none to load.
	loader *warmstart.Loader
	// streams are those the loader prepared, for health.
	streams map[index.Stream]warmstart.Stream

	mu sync.Mutex
	// restored holds what was restored of each cluster until its
	// informers take it.
	restored map[string]map[string]informers.Restored

	// done is closed once the load ended; then loaded is what it loaded
	// (nil: nothing, a cold start), err why it failed, and stopped says
	// that the process stopping cut it short.
	done    chan struct{}
	loaded  *warmstart.Loaded
	err     error
	stopped bool
}

var _ informers.Loading = (*warmStart)(nil)

// Done is closed once the load ended.
func (w *warmStart) Done() <-chan struct{} { return w.done }

// Err returns why the load failed once it ended: the index then holds
// nothing restored.
func (w *warmStart) Err() error { return w.err }

// openSnapshot opens the snapshot store of opts and prepares a load of
// what it holds into ix (warmStart.load): each stream's type and
// resourceVersion, which the clusters resume from. A snapshot that cannot
// be used is set aside or ignored with a log line and a count in
// fleetcache_snapshot_discarded_total: a cold start. Only a store that
// cannot be opened at all (held by another process, a directory that
// cannot be made) fails.
func openSnapshot(opts Options, reg prometheus.Registerer, ix *index.Index, codecs *compact.Codecs, logger klog.Logger) (*warmStart, error) {
	if opts.Snapshot.Dir == "" {
		return nil, nil
	}
	metrics, err := warmstart.NewMetrics(reg)
	if err != nil {
		return nil, err
	}
	store, err := snapshot.Open(opts.Snapshot.Dir, snapshot.Options{})
	var discarded *snapshot.DiscardedError
	switch {
	case errors.As(err, &discarded):
		logger.Error(discarded, "The snapshot could not be used and was set aside: starting cold", "dir", opts.Snapshot.Dir, "reason", discarded.Reason)
		metrics.Discarded(discarded.Reason)
	case err != nil:
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	w := &warmStart{store: store, dir: opts.Snapshot.Dir, logger: logger, restored: map[string]map[string]informers.Restored{}, done: make(chan struct{}),
		opts: warmstart.Options{Interval: opts.Snapshot.Interval, Metrics: metrics}}
	loader, err := warmstart.Prepare(store, ix, codecs)
	if err != nil {
		w.discard(err)
		close(w.done)
		return w, nil
	}
	w.loader, w.streams = loader, loader.Streams()
	for k, s := range w.streams {
		if s.Removed {
			continue
		}
		if w.restored[k.Cluster] == nil {
			w.restored[k.Cluster] = map[string]informers.Restored{}
		}
		w.restored[k.Cluster][k.Resource] = informers.Restored{Type: s.Type, ResourceVersion: s.ResourceVersion, Member: s.Member}
	}
	return w, nil
}

// discard logs and counts a snapshot that could not be loaded.
func (w *warmStart) discard(err error) {
	var discarded *snapshot.DiscardedError
	dir := w.dir
	switch {
	case errors.As(err, &discarded):
		w.logger.Error(err, "The snapshot could not be loaded and was set aside: starting cold", "dir", dir, "reason", discarded.Reason)
		w.opts.Metrics.Discarded(discarded.Reason)
	default:
		// The store is whole but what it holds does not build objects:
		// the writer rewrites it.
		w.logger.Error(err, "The snapshot could not be loaded: starting cold", "dir", dir, "reason", snapshot.ReasonCorrupt)
		w.opts.Metrics.Discarded(snapshot.ReasonCorrupt)
	}
}

// load fills the index from the snapshot while the clusters start, and
// then lets them write (Done). A load that fails (or that ctx ends)
// leaves the index empty: the restored types are forgotten, their health
// with them, and the runs that resumed list.
func (w *warmStart) load(ctx context.Context, tr *health.Tracker) {
	defer close(w.done)
	if w.loader == nil {
		return
	}
	loaded, err := w.loader.Load(ctx)
	if err != nil {
		w.loader.Abort()
		if ctx.Err() == nil {
			w.discard(err)
		}
		// Nothing to resume from; the clusters no source registers are
		// still dropped after unregisteredGrace (run).
		w.mu.Lock()
		for c := range w.restored {
			w.restored[c] = map[string]informers.Restored{}
		}
		w.mu.Unlock()
		for k, s := range w.streams {
			if !s.Removed { // attach reported these only
				tr.RemoveResource(k.Cluster, k.Resource)
			}
		}
		w.err, w.stopped = err, ctx.Err() != nil
		return
	}
	if len(loaded.Streams) > 0 {
		w.logger.Info("Loaded the snapshot: serving its objects, each cluster stale until its watches catch up",
			"dir", w.dir, "objects", loaded.Objects, "rebuilt", loaded.Rebuilt, "tombstones", loaded.Tombs, "streams", len(loaded.Streams), "took", loaded.Took)
	} else {
		w.logger.Info("The snapshot is empty: starting cold", "dir", w.dir)
	}
	w.opts.Metrics.Loaded(loaded)
	w.loaded = loaded
}

// ready is /readyz's check "snapshot": it passes once the load ended.
func (w *warmStart) ready(*http.Request) error {
	select {
	case <-w.done:
		return nil
	default:
		return errors.New("loading the snapshot into the index")
	}
}

// wait waits until the load ended or ctx ends.
func (w *warmStart) wait(ctx context.Context) error {
	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// attach tells tr of the restored types, stale as of when the snapshot
// knew them current until their watches catch up.
func (w *warmStart) attach(tr *health.Tracker) {
	w.opts.Freshness = freshness(tr)
	for k, s := range w.streams {
		if s.Removed {
			continue
		}
		kind := ""
		if s.Type != nil {
			kind = s.Type.KindName()
		}
		tr.ResourceRestored(k.Cluster, k.Resource, kind, s.AsOf)
	}
}

// freshness reads from tr how fresh each stream is, for the writer.
func freshness(tr *health.Tracker) func() map[index.Stream]warmstart.Freshness {
	return func() map[index.Stream]warmstart.Freshness {
		statuses, _ := tr.Clusters()
		out := map[index.Stream]warmstart.Freshness{}
		for _, c := range statuses {
			for _, r := range c.Resources {
				out[index.Stream{Cluster: c.Name, Resource: r.Resource}] = warmstart.Freshness{Current: r.Status == health.Synced, AsOf: r.CurrentAsOf, Member: c.MemberID}
			}
		}
		return out
	}
}

// take gives a cluster's informers what was restored of it, once.
func (w *warmStart) take(cluster string) map[string]informers.Restored {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := w.restored[cluster]
	delete(w.restored, cluster)
	return r
}

// run writes the snapshot, once loaded, until ctx ends, and drops the restored clusters
// that are not registered again within unregisteredGrace. It closes the
// store once the last write is done.
func (w *warmStart) run(ctx context.Context, ix *index.Index, reg *clusters.Registry, forget func(cluster string)) error {
	if w.wait(ctx) != nil || ctx.Err() != nil {
		// Stopped before the load ended, which may have been cut short:
		// the store stays as it was, for the next start.
		return w.store.Close()
	}
	w.writer = warmstart.NewWriter(ix, w.store, w.loaded, w.opts)
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTimer(unregisteredGrace)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		w.mu.Lock()
		left := slices.Sorted(maps.Keys(w.restored))
		w.mu.Unlock()
		for _, c := range left {
			if _, ok := reg.Get(c); !ok && w.take(c) != nil {
				klog.FromContext(ctx).Info("A cluster restored from the snapshot is not registered any more: dropping its objects", "cluster", c)
				forget(c)
			}
		}
	})
	err := w.writer.Start(ctx)
	wg.Wait()
	return errors.Join(err, w.store.Close())
}
