package informers

import (
	"context"

	"github.com/fleetcache/fleetcache/pkg/clusters"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index"
)

// Fleet runs one Ingester per cluster, all feeding one index and one health
// tracker. It implements clusters.Runner.
type Fleet struct {
	index  *index.Index
	health *health.Tracker
	opts   Options
}

// NewFleet returns a Fleet; it validates the configured resource types.
func NewFleet(ix *index.Index, h *health.Tracker, opts Options) (*Fleet, error) {
	opts = opts.withDefaults()
	if _, err := parseResourceNames(opts.Resources); err != nil {
		return nil, err
	}
	return &Fleet{index: ix, health: h, opts: opts}, nil
}

// RunCluster runs the ingestion of c until ctx ends.
func (f *Fleet) RunCluster(ctx context.Context, c clusters.Cluster) error {
	ing, err := NewIngester(c.Name, c.Config, f.index, f.health, f.opts)
	if err != nil {
		return err
	}
	return ing.Start(ctx)
}

// ForgetCluster removes a removed cluster's objects from the index (the feed
// carries the deletions) and its health.
func (f *Fleet) ForgetCluster(name string) {
	f.index.RemoveCluster(name)
	f.health.RemoveCluster(name)
}
