// Package authz decides what a caller may see: an object of a resource type
// in a namespace of a cluster is visible to a caller who may list that type
// there, as that cluster itself would decide.
//
// A Decider answers one question (Attributes) for a user: SubjectAccessReview
// asks the member cluster, Policy reads rules from the configuration. The
// Authorizer caches decisions for a TTL in a bounded cache, asks cluster-wide
// first and namespace by namespace only where that is denied, and turns a
// caller's rights over the index's Contents into a Scope: index filters that
// select exactly the visible objects, so counts and facets reveal nothing
// hidden. A cluster whose decisions fail is denied as a whole and named in
// the Scope, never allowed by default.
//
// Nothing is authorized by default in the Go API: a GraphQL server built
// without an Authorizer shows every object to every caller. The aggregator
// command, by contrast, authorizes with SubjectAccessReviews whenever it
// authenticates (docs/configuration.md).
package authz
