// Package informers keeps fleetcache's copy of each cluster.
//
// An Ingester runs one client-go dynamic shared informer factory for one cluster,
// over the configured resource types (kubectl names such as "pods",
// "deployments.apps" or "widgets.example.com", resolved through discovery).
// A transform turns every object into an index.Object (its JSON without
// managedFields and the last-applied annotation, plus the fields the indexes
// need) before client-go stores it, so the informer's store and the global
// index share one compact copy. Event handlers apply every change to the
// index; what the informers observe (syncs, API errors, unreachable servers,
// relists) is reported to a health.Tracker.
//
// A Fleet runs an Ingester per registered cluster; it is the clusters.Runner that
// a clusters.Registry drives.
package informers
