// Package openapi follows the OpenAPI v3 schemas of the kinds each member
// cluster caches, for the typed GraphQL schema (pkg/graphql/typed).
//
// A Follower runs one loop per cluster (Follow), started by the cluster's
// informers (informers.Options.Schemas) with a REST client of the cluster
// and a function that returns the types it caches. Every Options.Interval
// the loop reads the cluster's /openapi/v3 root, the list of its
// group-versions, each with a URL that holds a hash of that group-version's
// document (as client-go's openapi3 root reads it); it fetches the document
// of each group-version it caches a type of when that URL changed, and
// finds each cached kind's schema there by its
// x-kubernetes-group-version-kind. Documents are decoded once per URL and
// shared by the clusters that serve the same one (a fleet of one
// Kubernetes version decodes core/v1 once).
//
// Snapshot returns what the fleet serves: for each cached kind (group and
// kind), the versions that clusters serve, each with its Document and the
// clusters serving it. Watch tells when it changes: a cluster added or
// removed, a CRD added, changed or removed.
package openapi
