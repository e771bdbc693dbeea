package informers

import (
	"context"

	"github.com/fleetcache/fleetcache/pkg/clusters"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index"
)

// Fleet runs one Ingester per cluster, all feeding one index and one health
// tracker. It implements clusters.Runner. Its clusters share what need not
// be per cluster: the list slots that bound how many lists run at once
// (Options.MaxConcurrentLists), one prober for all API servers, the
// resources of built-in group versions per server version, and the metrics.
type Fleet struct {
	index    *index.Index
	health   *health.Tracker
	opts     Options
	gate     *listGate
	prober   *prober
	metrics  *metrics
	surfaces *surfaces
}

// NewFleet returns a Fleet; it validates the configured resource types and
// registers the informers' metrics with opts.Registerer, if set.
func NewFleet(ix *index.Index, h *health.Tracker, opts Options) (*Fleet, error) {
	opts = opts.withDefaults()
	if _, err := parseResourceNames(opts.Resources); err != nil {
		return nil, err
	}
	f := &Fleet{index: ix, health: h, opts: opts, gate: newListGate(opts.MaxConcurrentLists), prober: newProber(), surfaces: newSurfaces()}
	if opts.Registerer != nil {
		m, err := newMetrics(opts.Registerer, f.gate)
		if err != nil {
			return nil, err
		}
		f.metrics = m
	}
	return f, nil
}

// ListSlots returns how many lists may run at once in the fleet
// (Options.MaxConcurrentLists), how many run, and how many wait for a slot.
func (f *Fleet) ListSlots() (size, inUse, waiting int) {
	return cap(f.gate.slots), len(f.gate.slots), int(f.gate.waiting.Load())
}

// Start runs what the fleet's clusters share, the prober of their API
// servers, until ctx ends, and returns nil then. Clusters run by RunCluster
// are probed only while Start runs: a cluster whose server stopped answering
// recovers once a probe succeeds. It may be called once.
func (f *Fleet) Start(ctx context.Context) error {
	return f.prober.Start(ctx)
}

// RunCluster runs the ingestion of c until ctx ends.
func (f *Fleet) RunCluster(ctx context.Context, c clusters.Cluster) error {
	ing, err := NewIngester(c.Name, c.Config, f.index, f.health, f.opts)
	if err != nil {
		return err
	}
	ing.gate, ing.prober, ing.metrics, ing.surfaces = f.gate, f.prober, f.metrics, f.surfaces
	return ing.Start(ctx)
}

// ForgetCluster removes a removed cluster's objects from the index (the feed
// carries the deletions) and its health, once a warm start's load ended.
func (f *Fleet) ForgetCluster(name string) {
	if f.opts.Loading != nil {
		<-f.opts.Loading.Done()
	}
	f.index.RemoveCluster(name)
	f.health.RemoveCluster(name)
}
