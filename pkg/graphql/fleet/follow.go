package fleet

import (
	"context"
	"io"

	"github.com/fleetcache/fleetcache/pkg/inventory"
)

// Follower follows the status of one cluster, or of every cluster, for
// a clusterHealth subscription: the current status of each, then each
// change, and a cluster's status again when its inventory entry (labels,
// source, control plane condition) changes. It reads the tracker's
// changes itself, in Next: they are few.
type Follower struct {
	s          *Schema
	cluster    string
	hasCluster bool

	started bool
	version uint64
	pending []Update
	// inventory is what the inventory said of each cluster when its last
	// status was queued, at version invVersion: a relabel sends the
	// cluster again (inventoryChanges).
	inventory  map[string]inventory.Info
	invVersion uint64
}

// Follow returns a Follower of cluster, or of every cluster when
// hasCluster is false.
func (s *Schema) Follow(cluster string, hasCluster bool) *Follower {
	return &Follower{s: s, cluster: cluster, hasCluster: hasCluster}
}

// Next returns the next update, waiting for one until ctx or closed ends
// (then ctx's error, or io.EOF for closed).
func (f *Follower) Next(ctx, closed context.Context) (*Update, error) {
	for {
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case closed.Err() != nil:
			return nil, io.EOF
		}
		if len(f.pending) > 0 {
			u := f.pending[0]
			f.pending = f.pending[1:]
			if f.inventory == nil {
				f.inventory = map[string]inventory.Info{}
			}
			if u.Removed {
				delete(f.inventory, u.Status.Name)
			} else {
				f.inventory[u.Status.Name], _ = f.s.inventory.Get(u.Status.Name)
			}
			return &u, nil
		}
		if !f.started {
			f.invVersion, _ = f.s.inventory.Watch()
			statuses, v := f.s.health.Clusters()
			for _, st := range statuses {
				if !f.hasCluster || st.Name == f.cluster {
					f.pending = append(f.pending, Update{Status: st})
				}
			}
			f.version, f.started = v, true
			continue
		}
		changes, err := f.s.health.Changes(f.version)
		if err != nil {
			// Changes were dropped (ErrExpired): send the current state
			// again.
			f.started = false
			continue
		}
		for _, c := range changes {
			f.version = c.Version
			if !f.hasCluster || c.Cluster.Name == f.cluster {
				f.pending = append(f.pending, Update{Status: c.Cluster, Removed: c.Removed})
			}
		}
		f.inventoryChanges()
		if len(f.pending) > 0 {
			continue
		}
		if err := f.wait(ctx, closed); err != nil && ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
}

// Ready reports whether Next returns at once.
func (f *Follower) Ready() bool { return len(f.pending) > 0 }

// inventoryChanges queues the current status of each followed cluster
// whose labels, source or control plane condition changed since its last
// status was queued.
func (f *Follower) inventoryChanges() {
	v, _ := f.s.inventory.Watch()
	if v == f.invVersion {
		return
	}
	f.invVersion = v
	statuses, _ := f.s.health.Clusters()
	for _, st := range statuses {
		if f.hasCluster && st.Name != f.cluster {
			continue
		}
		if info, _ := f.s.inventory.Get(st.Name); !info.Equal(f.inventory[st.Name]) {
			f.pending = append(f.pending, Update{Status: st})
		}
	}
}

// wait waits for a change after f.version, or of the inventory, until ctx
// or closed ends.
func (f *Follower) wait(ctx, closed context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(closed, cancel)
	defer stop()
	v, changed := f.s.inventory.Watch()
	if v != f.invVersion {
		return nil
	}
	stopInv := context.AfterFunc(changed, cancel)
	defer stopInv()
	return f.s.health.Wait(ctx, f.version)
}
