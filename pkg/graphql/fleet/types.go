package fleet

import (
	"context"
	"math"

	"github.com/graphql-go/graphql"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/fleetcache/fleetcache/pkg/graphql/typed"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/inventory"
)

// Health is the part of the health tracker the fleet's types read;
// *health.Tracker implements it.
type Health interface {
	Clusters() ([]health.ClusterStatus, uint64)
	Cluster(name string) (health.ClusterStatus, bool)
	// History is a cluster's status timeline, for Cluster.history.
	History(cluster string) []health.StatusPeriod
	// Changes and Wait follow the status changes, for a Follower.
	Changes(after uint64) ([]health.Change, error)
	Wait(ctx context.Context, after uint64) error
}

// Inventory is what the fleet's types read of the clusters' inventory;
// *inventory.Store implements it.
type Inventory interface {
	Get(name string) (inventory.Info, bool)
	Narrow(names []string, sel labels.Selector) ([]string, uint64)
	// Watch returns the inventory's version, and a context that ends
	// when it changes.
	Watch() (version uint64, changed context.Context)
}

// Schema builds the fleet's types and resolves Query.clusters and
// Query.cluster for one engine.
type Schema struct {
	health    Health
	inventory Inventory
	// details reports whether the caller of ctx may read the details of a
	// cluster's health (messages, errors, its server).
	details func(ctx context.Context, cluster string) bool
	// badInput wraps an error in the caller's argument.
	badInput func(err error) error
}

// New returns the Schema of h and inv. details reports whether the caller
// of a context may read the details of a cluster's health; badInput turns
// an error in an argument into the engine's BAD_USER_INPUT error.
func New(h Health, inv Inventory, details func(ctx context.Context, cluster string) bool, badInput func(error) error) *Schema {
	return &Schema{health: h, inventory: inv, details: details, badInput: badInput}
}

// Update is the root value of the execution of one clusterHealth event: a
// Cluster, or its removal.
type Update struct {
	Status  health.ClusterStatus
	Removed bool
}

func nonNullList(t graphql.Type) *graphql.NonNull {
	return graphql.NewNonNull(graphql.NewList(graphql.NewNonNull(t)))
}

// SyncStatus is the enum SyncStatus: a health.Status.
var SyncStatus = graphql.NewEnum(graphql.EnumConfig{
	Name:        "SyncStatus",
	Description: "How fresh fleetcache's copy of a cluster, or of one resource type of it, is.",
	Values: graphql.EnumValueConfigMap{
		"PENDING":      {Value: health.Pending, Description: "Registered, nothing started yet."},
		"SYNCING":      {Value: health.Syncing, Description: "The initial list is not complete."},
		"SYNCED":       {Value: health.Synced, Description: "Listed and watching; the API server is reachable."},
		"DEGRADED":     {Value: health.Degraded, Description: "Reachable, but some types fail (forbidden, not served, sync deadline passed)."},
		"DISCONNECTED": {Value: health.Disconnected, Description: "The API server cannot be reached; the last known objects stay."},
	},
})

// StaleClusterType returns StaleCluster: since when a selected cluster's
// data is not known current.
func StaleClusterType() *graphql.Object {
	return graphql.NewObject(graphql.ObjectConfig{
		Name:        "StaleCluster",
		Description: "A selected cluster whose data is not known current: the objects of the answer are its last known state.",
		Fields: graphql.Fields{
			"cluster": {Type: graphql.NewNonNull(graphql.String), Description: "The cluster name.", Resolve: clusterField(func(c *health.ClusterStatus) any { return c.Name })},
			"status":  {Type: graphql.NewNonNull(SyncStatus), Description: "The sync status of the cluster.", Resolve: clusterField(func(c *health.ClusterStatus) any { return c.Status })},
			"currentAsOf": {Type: typed.Time, Description: "The last moment all its data was known current: the answer is stale since then. Null if it never was (still in its initial sync).",
				Resolve: clusterField(func(c *health.ClusterStatus) any { return c.CurrentAsOf })},
		},
	})
}

// ClusterType returns Cluster, a cluster's sync health, with the
// ResourceSync of each of its types.
func (s *Schema) ClusterType() *graphql.Object {
	resourceSync := resourceSyncType()
	statusPeriod := statusPeriodType()
	info := func(fn func(inventory.Info) any) graphql.FieldResolveFn {
		return clusterField(func(c *health.ClusterStatus) any {
			i, _ := s.inventory.Get(c.Name)
			return fn(i)
		})
	}
	return graphql.NewObject(graphql.ObjectConfig{
		Name:        "Cluster",
		Description: "A registered cluster and how fresh its cached objects are.",
		Fields: graphql.Fields{
			"name":   {Type: graphql.NewNonNull(graphql.String), Description: "The cluster name.", Resolve: clusterField(func(c *health.ClusterStatus) any { return c.Name })},
			"status": {Type: graphql.NewNonNull(SyncStatus), Description: "The sync status of the cluster.", Resolve: clusterField(func(c *health.ClusterStatus) any { return c.Status })},
			"stale": {Type: graphql.NewNonNull(graphql.Boolean), Description: "The API server is unreachable and the objects are the last known state.",
				Resolve: clusterField(func(c *health.ClusterStatus) any { return c.Stale })},
			"lastSyncTime": {Type: typed.Time, Description: "When the last list of a resource type was applied to the index.", Resolve: clusterField(func(c *health.ClusterStatus) any { return c.LastSyncTime })},
			"currentAsOf": {Type: typed.Time, Description: "The last moment all of the cluster's data was known current (the earliest of its types): now while SYNCED, frozen when a watch broke. Null if some type never was.",
				Resolve: clusterField(func(c *health.ClusterStatus) any { return c.CurrentAsOf })},
			"lastEventTime": {Type: typed.Time, Description: "When the last object change arrived.", Resolve: clusterField(func(c *health.ClusterStatus) any { return c.LastEventTime })},
			"objectCount":   {Type: graphql.NewNonNull(graphql.Int), Description: "How many objects of the cluster are cached.", Resolve: clusterField(func(c *health.ClusterStatus) any { return c.ObjectCount })},
			"changeRate": {Type: nonNullList(graphql.Float), Description: "Object changes per second that reached the cache from the cluster, in each of the last 30 complete intervals of 10 seconds, oldest first (the objects of a relist count too).",
				Resolve: clusterField(func(c *health.ClusterStatus) any { return c.ChangeRate })},
			"message": {Type: graphql.String, Description: "Why the cluster is not SYNCED; null when it is.",
				Resolve: clusterField(func(c *health.ClusterStatus) any { return NonEmpty(c.Message) })},
			"resources": {Type: nonNullList(resourceSync), Description: "The sync state of each resource type, by name.", Resolve: clusterField(func(c *health.ClusterStatus) any {
				out := make([]*health.ResourceStatus, len(c.Resources))
				for i := range c.Resources {
					out[i] = &c.Resources[i]
				}
				return out
			})},
			"labels": {Type: graphql.NewNonNull(typed.JSON), Description: "The cluster's labels, as an object: its source's " +
				"(a ClusterProfile's, a Secret's without the source's marker labels) overlaid with the configured ones.",
				Resolve: info(func(i inventory.Info) any {
					if i.Labels == nil {
						return map[string]string{}
					}
					return i.Labels
				})},
			"source": {Type: graphql.String, Description: `Where the cluster is registered from: "ClusterProfile fleet/prod-eu", "kubeconfig files".`,
				Resolve: info(func(i inventory.Info) any { return NonEmpty(i.Source) })},
			"controlPlaneHealthy": {Type: graphql.Boolean, Description: "The inventory's own view of the control plane (a ClusterProfile's ControlPlaneHealthy condition); null when the source says nothing.",
				Resolve: info(func(i inventory.Info) any {
					if i.ControlPlaneHealthy == nil {
						return nil
					}
					return *i.ControlPlaneHealthy
				})},
			"controlPlaneMessage": {Type: graphql.String, Description: "The reason and message of that condition.",
				Resolve: info(func(i inventory.Info) any { return NonEmpty(i.ControlPlaneMessage) })},
			"server": {Type: graphql.String, Description: "The URL of the cluster's API server; null to callers who may not list namespaces in the cluster.",
				Resolve: clusterField(func(c *health.ClusterStatus) any { return NonEmpty(c.Server) })},
			"kubernetesVersion": {Type: graphql.String, Description: `The Kubernetes version its API server reports (/version's gitVersion: "v1.36.3"); null until a probe read it.`,
				Resolve: clusterField(func(c *health.ClusterStatus) any { return NonEmpty(c.Version) })},
			"history": {Type: nonNullList(statusPeriod), Description: "The cluster's statuses over the retained window (24 hours), oldest first: " +
				"when each began and ended, and why.",
				Resolve: s.resolveHistory},
			"removed": {Type: graphql.NewNonNull(graphql.Boolean), Description: "True only in the clusterHealth event reporting that the cluster was removed; the other fields are then its last status.",
				Resolve: func(p graphql.ResolveParams) (any, error) {
					u, ok := p.Source.(*Update)
					return ok && u.Removed, nil
				}},
		},
	})
}

// statusPeriodType returns StatusPeriod: a span of a cluster's status
// timeline.
func statusPeriodType() *graphql.Object {
	field := func(fn func(*health.StatusPeriod) any) graphql.FieldResolveFn {
		return func(p graphql.ResolveParams) (any, error) { return fn(p.Source.(*health.StatusPeriod)), nil }
	}
	return graphql.NewObject(graphql.ObjectConfig{
		Name:        "StatusPeriod",
		Description: "A span of time a cluster spent in one status.",
		Fields: graphql.Fields{
			"status": {Type: graphql.NewNonNull(SyncStatus), Description: "The status.", Resolve: field(func(p *health.StatusPeriod) any { return p.Status })},
			"start":  {Type: graphql.NewNonNull(typed.Time), Description: "When it began.", Resolve: field(func(p *health.StatusPeriod) any { return p.Start })},
			"end":    {Type: typed.Time, Description: "When it ended; null while it lasts.", Resolve: field(func(p *health.StatusPeriod) any { return p.End })},
			"message": {Type: graphql.String, Description: "Why the cluster entered it (its message then); null for SYNCED.",
				Resolve: field(func(p *health.StatusPeriod) any { return NonEmpty(p.Message) })},
		},
	})
}

// ProcessType returns Fleetcache: what the process says of itself.
func ProcessType() *graphql.Object {
	field := func(fn func(*ProcessStatus) any) graphql.FieldResolveFn {
		return func(p graphql.ResolveParams) (any, error) { return fn(p.Source.(*ProcessStatus)), nil }
	}
	num := func(name, desc string, fn func(*ProcessStatus) any) *graphql.Field {
		return &graphql.Field{Name: name, Type: graphql.NewNonNull(graphql.Float), Description: desc, Resolve: field(fn)}
	}
	return graphql.NewObject(graphql.ObjectConfig{
		Name:        "Fleetcache",
		Description: "The fleetcache process that answers: its build, uptime, memory and list slots.",
		Fields: graphql.Fields{
			"version":     {Type: graphql.NewNonNull(graphql.String), Description: "The build's version.", Resolve: field(func(p *ProcessStatus) any { return p.Version })},
			"startTime":   {Type: graphql.NewNonNull(typed.Time), Description: "When the process started.", Resolve: field(func(p *ProcessStatus) any { return p.StartTime })},
			"replica":     {Type: graphql.NewNonNull(graphql.String), Description: "This process among replicas: its host name (a Pod's name).", Resolve: field(func(p *ProcessStatus) any { return p.Replica })},
			"memoryBytes": num("memoryBytes", "Its resident memory (RSS), in bytes.", func(p *ProcessStatus) any { return float64(p.MemoryBytes) }),
			"memoryLimitBytes": num("memoryLimitBytes", "The Go runtime's soft memory limit (the container's, GOMEMLIMIT); 0 for none.",
				func(p *ProcessStatus) any { return float64(p.MemoryLimitBytes) }),
			"memoryBudgetBytes": num("memoryBudgetBytes", "The index's memory budget (limits.memoryBudget); 0 for none.",
				func(p *ProcessStatus) any { return float64(p.MemoryBudgetBytes) }),
			"memoryBudgetUsedBytes": num("memoryBudgetUsedBytes", "What the index holds, as its budget counts it.",
				func(p *ProcessStatus) any { return float64(p.MemoryBudgetUsedBytes) }),
			"listSlots":      {Type: graphql.NewNonNull(graphql.Int), Description: "How many lists may run at once in the fleet (informers.maxConcurrentLists).", Resolve: field(func(p *ProcessStatus) any { return p.ListSlots })},
			"listSlotsInUse": {Type: graphql.NewNonNull(graphql.Int), Description: "How many lists run now.", Resolve: field(func(p *ProcessStatus) any { return p.ListSlotsInUse })},
			"listsWaiting":   {Type: graphql.NewNonNull(graphql.Int), Description: "How many types wait for a list slot.", Resolve: field(func(p *ProcessStatus) any { return p.ListsWaiting })},
			"goroutines":     {Type: graphql.NewNonNull(graphql.Int), Description: "How many goroutines run.", Resolve: field(func(p *ProcessStatus) any { return p.Goroutines })},
		},
	})
}

// resourceSyncType returns ResourceSync: the sync health of one resource
// type of a cluster.
func resourceSyncType() *graphql.Object {
	return graphql.NewObject(graphql.ObjectConfig{
		Name:        "ResourceSync",
		Description: "The sync state of one resource type of a cluster.",
		Fields: graphql.Fields{
			"resource":     {Type: graphql.NewNonNull(graphql.String), Description: `The kubectl resource name: "pods", "deployments.apps".`, Resolve: resourceStatusField(func(r *health.ResourceStatus) any { return r.Resource })},
			"kind":         {Type: graphql.NewNonNull(graphql.String), Description: "The kind of its objects.", Resolve: resourceStatusField(func(r *health.ResourceStatus) any { return r.Kind })},
			"status":       {Type: graphql.NewNonNull(SyncStatus), Description: "The sync status of this type.", Resolve: resourceStatusField(func(r *health.ResourceStatus) any { return r.Status })},
			"objectCount":  {Type: graphql.NewNonNull(graphql.Int), Description: "How many objects of this type are cached.", Resolve: resourceStatusField(func(r *health.ResourceStatus) any { return r.ObjectCount })},
			"lastError":    {Type: graphql.String, Description: "The last error listing or watching this type; null if none.", Resolve: resourceStatusField(func(r *health.ResourceStatus) any { return NonEmpty(r.LastError) })},
			"lastSyncTime": {Type: typed.Time, Description: "When the last list of this type was applied to the index.", Resolve: resourceStatusField(func(r *health.ResourceStatus) any { return r.LastSyncTime })},
			"currentAsOf": {Type: typed.Time, Description: "The last moment this type's data was known current: now while SYNCED, frozen when its watch broke. Null if it never was.",
				Resolve: resourceStatusField(func(r *health.ResourceStatus) any { return r.CurrentAsOf })},
			"lastEventTime": {Type: typed.Time, Description: "When the last object change arrived.", Resolve: resourceStatusField(func(r *health.ResourceStatus) any { return r.LastEventTime })},
			"metadataOnly": {Type: graphql.NewNonNull(graphql.Int), Description: "How many of its objects are held without their body, under the memory budget: their object holds metadata only.",
				Resolve: resourceStatusField(func(r *health.ResourceStatus) any { return r.MetadataOnly })},
			"refused": {Type: graphql.NewNonNull(graphql.Int), Description: "How many of its objects were not cached, under the memory budget, since fleetcache started (at most 2147483647).",
				Resolve: resourceStatusField(func(r *health.ResourceStatus) any { return min(r.Refused, math.MaxInt32) })},
			"initialSyncSeconds": {Type: graphql.Float, Description: "How long its last initial list took, in seconds, from its start to its data in the cache; null until it synced.",
				Resolve: resourceStatusField(func(r *health.ResourceStatus) any {
					if r.InitialSyncDuration <= 0 {
						return nil
					}
					return r.InitialSyncDuration.Seconds()
				})},
		},
	})
}

// NonEmpty returns s, or nil (null) when it is empty.
func NonEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// clusterField resolves a field of a Cluster: a *health.ClusterStatus, or a
// *Update in clusterHealth subscriptions.
func clusterField(fn func(*health.ClusterStatus) any) graphql.FieldResolveFn {
	return func(p graphql.ResolveParams) (any, error) {
		if u, ok := p.Source.(*Update); ok {
			return fn(&u.Status), nil
		}
		return fn(p.Source.(*health.ClusterStatus)), nil
	}
}

func resourceStatusField(fn func(*health.ResourceStatus) any) graphql.FieldResolveFn {
	return func(p graphql.ResolveParams) (any, error) { return fn(p.Source.(*health.ResourceStatus)), nil }
}
