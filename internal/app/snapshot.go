package app

import (
	"context"
	"errors"
	"fmt"
	"maps"
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

// warmStart is the snapshot of the index (pkg/warmstart): its store, what
// was loaded from it, and the writer that keeps it.
type warmStart struct {
	store  *snapshot.Store
	writer *warmstart.Writer
	opts   warmstart.Options

	mu sync.Mutex
	// restored holds what was restored of each cluster until its
	// informers take it.
	restored map[string]map[string]informers.Restored
	loaded   *warmstart.Loaded
}

// openSnapshot opens the snapshot store of opts and fills a new index from
// it. A snapshot that cannot be used is set aside or ignored with a log
// line and a count in fleetcache_snapshot_discarded_total, and the index
// starts empty: a cold start. Only a store that cannot be opened at all
// (held by another process, a directory that cannot be made) fails.
func openSnapshot(opts Options, reg prometheus.Registerer, codecs *compact.Codecs, logger klog.Logger) (*index.Index, *warmStart, error) {
	ix := index.New(opts.Index)
	if opts.Snapshot.Dir == "" {
		return ix, nil, nil
	}
	metrics, err := warmstart.NewMetrics(reg)
	if err != nil {
		return nil, nil, err
	}
	store, err := snapshot.Open(opts.Snapshot.Dir, snapshot.Options{})
	var discarded *snapshot.DiscardedError
	switch {
	case errors.As(err, &discarded):
		logger.Error(discarded, "The snapshot could not be used and was set aside: starting cold", "dir", opts.Snapshot.Dir, "reason", discarded.Reason)
		metrics.Discarded(discarded.Reason)
	case err != nil:
		return nil, nil, fmt.Errorf("snapshot: %w", err)
	}
	w := &warmStart{store: store, restored: map[string]map[string]informers.Restored{},
		opts: warmstart.Options{Interval: opts.Snapshot.Interval, Metrics: metrics}}
	loaded, err := warmstart.Load(store, ix, codecs)
	switch {
	case errors.As(err, &discarded):
		logger.Error(err, "The snapshot could not be loaded and was set aside: starting cold", "dir", opts.Snapshot.Dir, "reason", discarded.Reason)
		metrics.Discarded(discarded.Reason)
		ix, loaded = index.New(opts.Index), nil
	case err != nil:
		// The store is whole but what it holds does not build objects:
		// the writer rewrites it.
		logger.Error(err, "The snapshot could not be loaded: starting cold", "dir", opts.Snapshot.Dir)
		metrics.Discarded(snapshot.ReasonCorrupt)
		ix, loaded = index.New(opts.Index), nil
	case len(loaded.Streams) > 0:
		logger.Info("Loaded the snapshot: serving its objects, each cluster stale until its watches catch up",
			"dir", opts.Snapshot.Dir, "objects", loaded.Objects, "rebuilt", loaded.Rebuilt, "tombstones", loaded.Tombs, "streams", len(loaded.Streams), "took", loaded.Took)
	default:
		logger.Info("The snapshot is empty: starting cold", "dir", opts.Snapshot.Dir)
	}
	metrics.Loaded(loaded)
	w.loaded = loaded
	if loaded != nil {
		for k, s := range loaded.Streams {
			if s.Removed {
				continue
			}
			if w.restored[k.Cluster] == nil {
				w.restored[k.Cluster] = map[string]informers.Restored{}
			}
			w.restored[k.Cluster][k.Resource] = informers.Restored{Type: s.Type, ResourceVersion: s.ResourceVersion, Member: s.Member}
		}
	}
	return ix, w, nil
}

// attach tells tr of the restored types, stale as of when the snapshot
// knew them current until their watches catch up, and makes the writer of
// ix, which asks tr how fresh each stream is.
func (w *warmStart) attach(ix *index.Index, tr *health.Tracker) {
	w.opts.Freshness = freshness(tr)
	w.writer = warmstart.NewWriter(ix, w.store, w.loaded, w.opts)
	if w.loaded == nil {
		return
	}
	for k, s := range w.loaded.Streams {
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

// run writes the snapshot until ctx ends, and drops the restored clusters
// that are not registered again within unregisteredGrace. It closes the
// store once the last write is done.
func (w *warmStart) run(ctx context.Context, reg *clusters.Registry, forget func(cluster string)) error {
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
