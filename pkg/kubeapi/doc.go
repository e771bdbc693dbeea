// Package kubeapi serves the Kubernetes API of each member cluster,
// read-only, from fleetcache's index: kubectl, client-go programs and
// dashboards read a cluster at /clusters/{cluster} without touching it.
//
// A Server answers, under /clusters/{cluster}, the paths of a Kubernetes API
// server for the types fleetcache caches in that cluster:
//
//   - get, list and watch of objects (read.go, watch.go), from the index
//     (package index): label and field selectors (selectors.go), limit and
//     continue, and resourceVersions that are the member's own: a list's is
//     its stream's clock (index.Index.Clock), a watch from one resumes from
//     the index's tombstones and objects (index.Index.Since) and then
//     follows its feed, and answers 410 Gone past what it retains;
//   - Table output for kubectl (table.go), from the printers of package
//     columns;
//   - discovery, legacy and aggregated (discovery.go), /version and the
//     OpenAPI documents, read from the member once and kept for a while
//     (member.go), listing only the cached types, with the verbs get, list
//     and watch.
//
// Under /fleet (fleet.go), the fleet's API lists, watches and gets a type
// across the clusters the caller may read it in (those ?clusterSelector=
// matches), each object annotated with its cluster; its resourceVersion
// is the vector of the clusters' clocks, from which a watch resumes every
// stream at once (index.Index.Since).
//
// Impersonation and the audit log are the application's: the guard in
// front of the Server authenticates and impersonates (package transport,
// authz.Impersonator), and the Server adds what it reads and decides to
// the request's audit event (package audit).
//
// Writes answer 405 MethodNotAllowed with a Status saying where to write.
// Who may read what is an Authorizer's decision per request, for the verb
// asked (authz.Attributes.Verb). Authentication is the caller's: the
// application mounts the Server behind the same guard as /graphql.
package kubeapi
