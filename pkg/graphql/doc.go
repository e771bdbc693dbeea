// Package graphql serves fleetcache's GraphQL query API: what runs where in
// every cluster, answered from the global index (pkg/index) and the sync
// health tracker (pkg/health), never from the member clusters.
//
// A Server holds the schema (Query.clusters, cluster, resource, resources and
// facets, Subscription.resourceEvents and clusterHealth; see schema.go for
// the SDL), an LRU cache of parsed and validated documents keyed by query
// text, and the Options that bound each request (page sizes, document
// depth, body size, cost, response size, timeout, subscription buffers).
// An operation's cost (cost.go) is the most objects its answer can hold,
// computed before it runs; one over Options.MaxCost is refused with
// QUERY_TOO_COMPLEX. It reads through two
// small interfaces declared here, Index and Health, which *index.Index and
// *health.Tracker implement.
//
// Execute is the transport-independent entry point: it takes a Request
// (query, operation name, variables) and returns a Result whose errors each
// carry extensions.code (the Code constants). ServeHTTP serves it as
// GraphQL over HTTP at /graphql: POST with application/json, GET for queries,
// application/json or application/graphql-response+json answers by the
// Accept header, and an offline playground for browsers.
//
// Subscriptions (Subscription.resourceEvents and clusterHealth) are served
// by Subscribe, which parses and validates a request once and returns a
// Subscription; its Next returns one payload at a time, each the execution
// of the operation with one event as root value (graphql-go's own
// Subscribe is not used: it leaks abandoned subscribers). The transports
// (WebSocket, Server-Sent Events) call Subscribe and Next.
//
// A hub (hub.go), run by Server.Start, follows the index's change feed and
// hands each change to the resourceEvents subscriptions whose filter it
// concerns: filters are grouped so that each distinct filter is evaluated
// once per change, and subscriptions whose payloads are equal (same query
// and variables) share one execution and one encoding per change. Each
// subscription has a bounded queue, grown as changes arrive; one that
// overflows is ended (ErrSlowConsumer) and the client resumes from its
// last cursor, so a slow client never holds up the hub, the index or
// other subscribers. An idle subscription costs no goroutine of its own: a
// few hundred bytes plus its caller's goroutine waiting in Next. A since
// cursor is replayed from the feed by Next itself up to the hub's position
// at registration, after which the hub takes over: no gap, no duplicate.
// Idle subscriptions send heartbeats carrying the revision they have
// caught up with (Options.Fanout.HeartbeatInterval). clusterHealth subscriptions
// read the health tracker's status changes in Next.
//
// With Options.Registerer set, the server registers its metrics
// (metrics.go, docs/metrics.md): request durations by operation type, open
// subscriptions by transport, slow consumers ended, document cache hits.
//
// Paging uses opaque cursors (cursor.go): a page cursor holds an
// index.Position and continues strictly after it (keyset paging, so objects
// that exist throughout are returned exactly once while others come and go);
// a revision cursor holds the index epoch and the revision a page was read
// at, which is also what subscriptions take as since and give as each
// event's cursor. Both are checksummed, so garbage and cursors of the other
// kind are rejected as BAD_USER_INPUT; a revision cursor of another epoch
// (before a restart, another replica) is CURSOR_EXPIRED.
package graphql
