// Package informers keeps fleetcache's copy of each cluster.
//
// An Ingester runs one client-go shared informer per configured resource
// type of one cluster (kubectl names such as "pods", "deployments.apps" or
// "widgets.example.com", resolved through discovery). Each informer's
// ListerWatcher makes its list and watch requests itself and decodes the
// server's bytes straight into index.Objects with package wire (their JSON
// without managedFields and the last-applied annotation, plus the fields
// the indexes need), so the informer's store and the global index share one
// compact copy and no object is ever decoded into maps. Event handlers apply every change to the
// index; what the informers observe (syncs, API errors, unreachable servers,
// relists) is reported to a health.Tracker.
//
// A Fleet runs an Ingester per registered cluster; it is the clusters.Runner that
// a clusters.Registry drives.
package informers
