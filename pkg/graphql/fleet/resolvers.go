package fleet

import (
	"context"
	"slices"
	"time"

	"github.com/graphql-go/graphql"

	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/inventory"
)

// ResolveClusters resolves Query.clusters: every registered cluster, or
// those whose labels the selector argument matches.
func (s *Schema) ResolveClusters(p graphql.ResolveParams) (any, error) {
	statuses, _ := s.health.Clusters()
	var selected []string
	v, bySelector := p.Args["selector"].(string)
	if bySelector {
		sel, err := inventory.ParseSelector(v)
		if err != nil {
			return nil, s.badInput(err)
		}
		selected, _ = s.inventory.Narrow(nil, sel)
	}
	out := make([]*health.ClusterStatus, 0, len(statuses))
	for i := range statuses {
		if _, ok := slices.BinarySearch(selected, statuses[i].Name); bySelector && !ok {
			continue
		}
		st := s.Redact(p.Context, statuses[i])
		out = append(out, &st)
	}
	return out, nil
}

// resolveHistory resolves Cluster.history: the tracker's periods, their
// messages hidden from callers who may not read the cluster's details.
func (s *Schema) resolveHistory(p graphql.ResolveParams) (any, error) {
	var name string
	switch c := p.Source.(type) {
	case *Update:
		name = c.Status.Name
	case *health.ClusterStatus:
		name = c.Name
	}
	periods := s.health.History(name)
	details := s.details(p.Context, name)
	out := make([]*health.StatusPeriod, len(periods))
	for i := range periods {
		if !details && periods[i].Message != "" {
			periods[i].Message = HiddenDetails
		}
		out[i] = &periods[i]
	}
	return out, nil
}

// ResolveCluster resolves Query.cluster: one cluster by name, or null.
func (s *Schema) ResolveCluster(p graphql.ResolveParams) (any, error) {
	name, _ := p.Args["name"].(string)
	st, ok := s.health.Cluster(name)
	if !ok {
		return nil, nil
	}
	st = s.Redact(p.Context, st)
	return &st, nil
}

// Redact hides the messages of a cluster's status from callers who
// may not list namespaces across that cluster: errors name namespaces,
// users and objects of other tenants. Status and counts stay visible.
func (s *Schema) Redact(ctx context.Context, st health.ClusterStatus) health.ClusterStatus {
	if s.details(ctx, st.Name) {
		return st
	}
	if st.Message != "" {
		st.Message = HiddenDetails
	}
	// The API server's address is the infrastructure's, not every
	// tenant's business.
	st.Server = ""
	rs := make([]health.ResourceStatus, len(st.Resources))
	for i, r := range st.Resources {
		if r.LastError != "" {
			r.LastError = "hidden"
		}
		rs[i] = r
	}
	st.Resources = rs
	return st
}

// HiddenDetails replaces a message the caller may not read.
const HiddenDetails = "details hidden: they need the right to list namespaces in this cluster"

// ProcessStatus is what the fleetcache process says of itself.
type ProcessStatus struct {
	// Version is the build's version (its module version and VCS
	// revision).
	Version string
	// StartTime is when the process started.
	StartTime time.Time
	// Replica names this process among replicas: the host name (a Pod's
	// name).
	Replica string
	// MemoryBytes is the resident memory, MemoryLimitBytes the Go
	// runtime's soft memory limit (0: none); MemoryBudgetBytes and
	// MemoryBudgetUsedBytes the index's budget (0: none) and what it
	// counts against it.
	MemoryBytes, MemoryLimitBytes, MemoryBudgetBytes, MemoryBudgetUsedBytes int64
	// ListSlots is how many lists may run at once in the fleet,
	// ListSlotsInUse how many run, ListsWaiting how many wait for a slot.
	ListSlots, ListSlotsInUse, ListsWaiting int
	// Goroutines is how many goroutines run.
	Goroutines int
}
