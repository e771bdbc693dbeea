package graphql

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	"github.com/fleetcache/fleetcache/pkg/columns"
	"github.com/fleetcache/fleetcache/pkg/fanout"
	"github.com/fleetcache/fleetcache/pkg/graphql/fleet"
	"github.com/fleetcache/fleetcache/pkg/inventory"
)

// Inventory is what the server reads of the clusters' inventory;
// *inventory.Store implements it.
type Inventory interface {
	Get(name string) (inventory.Info, bool)
	Narrow(names []string, sel labels.Selector) ([]string, uint64)
	CountByLabel(counts map[string]int, key string) map[string]int
	Watch() (version uint64, changed context.Context)
}

// ProcessStatus is what the fleetcache process says of itself
// (Query.fleetcache).
type ProcessStatus = fleet.ProcessStatus

// Option defaults.
const (
	defaultPageSize          = 100
	defaultMaxPageSize       = 1000
	defaultMaxDepth          = 12
	defaultMaxCost           = 10000
	defaultMaxResponseBytes  = 64 << 20
	defaultTimeout           = 10 * time.Second
	defaultDocumentCacheSize = 1024
)

// Options configure a Server. Each field's comment states its default, used
// when the field is zero.
type Options struct {
	// DefaultPageSize is the default of resources(first:). Default 100.
	DefaultPageSize int
	// MaxPageSize is the largest resources(first:) accepted. Default 1000.
	MaxPageSize int
	// MaxDepth is how deeply a document may nest field selections, counted
	// with fragments expanded: { resources { edges { node { name } } } } is
	// 4 deep. Introspection (__schema, __type) is bounded separately by
	// max(MaxDepth, 16), which fits the introspection query of GraphQL
	// clients such as GraphiQL. Default 12.
	MaxDepth int
	// MaxCost bounds an operation's cost: the most objects its answer (a
	// subscription's: each event's) can hold, computed before it runs,
	// with each edge of resources counting its first and each resource,
	// owner and child one (docs/graphql.md, "Query cost"). An operation
	// over it is refused with QUERY_TOO_COMPLEX. Default 10,000: ten full
	// pages of MaxPageSize.
	MaxCost int
	// MaxResponseBytes bounds the encoding of one answer (or subscription
	// event): objects range from a few hundred bytes to megabytes, which
	// the cost cannot know, so the server stops writing an answer once it
	// passes this size and answers RESPONSE_TOO_LARGE instead. Default
	// 64 MiB: a full-cost answer of objects of 6 KiB on average.
	MaxResponseBytes int64
	// Timeout bounds the execution of each request. Default 10s.
	Timeout time.Duration
	// DocumentCacheSize is how many parsed and validated documents are kept,
	// keyed by query text; documents over 64 KiB are not cached. Default 1024.
	DocumentCacheSize int
	// Fanout configures the hub behind resourceEvents subscriptions, with
	// fanout's defaults: Buffer (1024) is how many events may wait for each
	// subscription (Subscription.Next) before it is ended as a slow
	// consumer with ErrSlowConsumer, the client resuming from its last
	// cursor; HeartbeatInterval (30s) is how long a subscription stays
	// silent before it sends a heartbeat, a payload without data whose
	// extensions carry the cursor of the revision it has caught up with,
	// so that a client resuming after a quiet spell is not behind the
	// retained changes. Its Overflows counter is the server's own.
	Fanout fanout.Options
	// Authorizer filters every answer and event by what the caller may
	// list: the user that the context carries (authn.WithUser; the
	// transports put the authenticated caller there), or an anonymous one
	// that sees nothing. Default nil: everything is visible.
	Authorizer Authorizer
	// Inventory holds the clusters' labels, source and control plane
	// health (Cluster.labels, clusterSelector, facets by CLUSTER_LABEL).
	// Default: an empty inventory.Store, in which no cluster has labels.
	Inventory Inventory
	// Columns are the printers of the index's types (pkg/columns), which
	// pkg/informers records as it sets the types up (informers.Options.Columns):
	// Resource.columns prints custom resources with their printer columns
	// from here. Default nil: no type has a printer, and custom resources
	// print as their name alone.
	Columns *columns.Types
	// Kinds are the OpenAPI schemas of the fleet's kinds (pkg/openapi):
	// each kind gets a type that implements Resource and a root field
	// (docs/graphql.md, "Typed kinds"), and the schema is rebuilt while
	// Start runs when they change. Default nil: no kind is typed, every
	// object is an UntypedResource.
	Kinds Kinds
	// Logger receives the server's log lines. Default klog.Background().
	Logger klog.Logger
	// Registerer is where the server registers its metrics (request
	// durations, overflows, document cache lookups; see docs/metrics.md).
	// Default nil: they are not registered.
	Registerer prometheus.Registerer
	// Process tells what fleetcache says of itself (Query.fleetcache: its
	// version, uptime, memory, list slots), for the status page. Default
	// nil: Query.fleetcache is null.
	Process func() ProcessStatus
}

// DefaultOptions returns the Options with every default filled in: what a
// zero Options means. Configuration and flags that expose a field read its
// default from here.
func DefaultOptions() Options { return Options{}.withDefaults() }

// withDefaults fills in the defaults of unset fields.
func (o Options) withDefaults() Options {
	if o.DefaultPageSize <= 0 {
		o.DefaultPageSize = defaultPageSize
	}
	if o.MaxPageSize <= 0 {
		o.MaxPageSize = defaultMaxPageSize
	}
	if o.MaxDepth <= 0 {
		o.MaxDepth = defaultMaxDepth
	}
	if o.MaxCost <= 0 {
		o.MaxCost = defaultMaxCost
	}
	if o.MaxResponseBytes <= 0 {
		o.MaxResponseBytes = defaultMaxResponseBytes
	}
	if o.Timeout <= 0 {
		o.Timeout = defaultTimeout
	}
	if o.DocumentCacheSize <= 0 {
		o.DocumentCacheSize = defaultDocumentCacheSize
	}
	o.Fanout = o.Fanout.WithDefaults()
	if o.Inventory == nil {
		o.Inventory = inventory.NewStore()
	}
	if o.Logger.GetSink() == nil {
		o.Logger = klog.Background()
	}
	return o
}
