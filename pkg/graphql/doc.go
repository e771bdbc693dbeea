// Package graphql serves fleetcache's GraphQL query API: what runs where in
// every cluster, answered from the global index (pkg/index) and the sync
// health tracker (pkg/health), never from the member clusters.
// ResourceFilter.fieldSelector (package fieldselector) and Resource.field
// (package fieldpath) read values inside the objects from their stored
// bytes.
//
// A Server holds the schema (Query.clusters, cluster, resource, resources and
// facets, Subscription.resourceEvents and clusterHealth; see schema.go for
// the SDL), an LRU cache of parsed and validated documents keyed by query
// text, and the Options that bound each request (page sizes, document
// depth, cost, response size, timeout, subscription buffers). It reads
// through two small interfaces declared here, Index and Health, which
// *index.Index and *health.Tracker implement.
//
// Resource is an interface: with Options.Kinds (the members' OpenAPI
// schemas, package openapi), each cached kind gets a type that implements
// it and a root field (package typed, pkg/graphql/typed; kinds.go), and
// package relations (pkg/graphql/relations) adds the fields that relate
// kinds (Pod.node, Node.pods, Service.pods, …) through the Engine it
// declares. The schema is rebuilt while Start runs when the kinds change;
// each schema keeps its own document cache (a generation).
//
// Two parts of the schema live in packages of their own, each reading the
// engine through a small interface it declares: package fleet
// (pkg/graphql/fleet) is the fleet itself (Cluster, ResourceSync,
// StatusPeriod, StaleCluster, Fleetcache; Query.clusters and cluster;
// the updates of clusterHealth subscriptions), package changes
// (pkg/graphql/changes) is Query.changes.
//
// Before graphql-go validates a document, the limits of package document
// (pkg/graphql/document) refuse what would crash it or take it too long:
// brackets nested too deep to parse, more than 2,000 selections, fragment
// cycles, operations deeper than Options.MaxDepth. An operation's cost
// (package cost, pkg/graphql/cost) is the most objects its answer can
// hold, computed before it runs; the server keeps it with the document
// when it holds for any variables, and refuses an operation over
// Options.MaxCost with QUERY_TOO_COMPLEX (cost.go).
//
// The engine knows nothing of sockets. A transport (pkg/transport: HTTP,
// graphql-transport-ws, GraphQL over Server-Sent Events) calls two entries:
// Prepare takes a Request (query, operation name, variables) and returns
// an Operation (parsed, validated, selected; documents come from the
// cache) whose Type the transport checks; then ExecuteOperation runs a
// query or mutation and returns a Result whose errors each carry
// extensions.code (the Code constants) and whose data encodes in the order
// the query selects, and SubscribeOperation starts a
// subscription. Execute and Subscribe do both steps, for callers that need
// no check in between. The caller, when a transport authenticated one, is
// in the context (authn.WithUser); the Authorizer filters every answer and
// event for it (authorization.go).
//
// Every query and every subscription payload runs through one executor,
// package execute (pkg/graphql/execute): graphql-go parses, validates and
// coerces variables (coerceVariables, through one probe execution, see
// execute.go) and provides introspection's types, and the executor runs
// the operation's plan, writing JSON straight from the index's stored
// bytes. Plans that hold for any variables are kept with the document. A
// panic or an error without a code is INTERNAL to the caller and logged
// at error level with the operation's name.
//
// Subscriptions (Subscription.resourceEvents and clusterHealth) return a
// Subscription whose Next returns one payload at a time, each the
// execution of the operation's plan with one event as root value
// (graphql-go's own Subscribe is not used: it leaks abandoned
// subscribers).
// resourceEvents subscriptions are subscribers of a fanout.Hub, run by
// Server.Start, that follows the index's change feed (pkg/fanout: grouped
// by filter and by execution, bounded queues, slow consumers ended with
// ErrSlowConsumer, since cursors replayed without gap or duplicate,
// heartbeats every Options.Fanout.HeartbeatInterval). Subscriptions whose
// payloads are equal (same query and variables, same caller) share one
// execution and one encoding per change. clusterHealth subscriptions read
// the health tracker's status changes in Next.
//
// With Options.Registerer set, the server registers its metrics
// (metrics.go, docs/metrics.md): request durations by operation type, slow
// consumers ended, document cache hits.
//
// Paging uses the opaque cursors of package cursor (pkg/graphql/cursor): a
// page cursor holds an object.Position and continues strictly after it
// (keyset paging, so objects that exist throughout are returned exactly
// once while others come and go); a revision cursor holds the index epoch
// and the revision a page was read at, which is also what subscriptions
// take as since and give as each event's cursor. Garbage and cursors of
// the other kind are rejected as BAD_USER_INPUT; a revision cursor of
// another epoch (before a restart, another replica) is CURSOR_EXPIRED.
package graphql
