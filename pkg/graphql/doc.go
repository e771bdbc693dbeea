// Package graphql serves fleetcache's GraphQL query API: what runs where in
// every cluster, answered from the global index (pkg/index) and the sync
// health tracker (pkg/health), never from the member clusters.
//
// A Server holds the schema (Query.clusters, cluster, resource, resources and
// facets; see schema.go for the SDL), an LRU cache of parsed and validated
// documents keyed by query text, and the Options that bound each request
// (page sizes, document depth, body size, timeout). It reads through two
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
// Paging uses opaque cursors (cursor.go): a page cursor holds an
// index.Position and continues strictly after it (keyset paging, so objects
// that exist throughout are returned exactly once while others come and go);
// a revision cursor holds the index epoch and the revision a page was read
// at. Both are checksummed, so garbage and cursors of the other kind are
// rejected as BAD_USER_INPUT.
package graphql
