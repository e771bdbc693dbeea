// Package informers keeps fleetcache's copy of each cluster.
//
// An Ingester runs the ingestion of one cluster over the configured resource
// types (kubectl names such as "pods", "deployments.apps" or
// "widgets.example.com", resolved through discovery): per type, a client-go
// Reflector lists and watches through a ListerWatcher (listWatch) that makes
// its requests itself, observes what they tell about freshness, and decodes
// the server's bytes straight into object.Objects with package wire (their
// JSON without managedFields and the last-applied annotation, plus the
// fields the indexes need). The reflector hands them to a runStore, which
// applies them to the index at once, with no informer store, queue or
// handler goroutine in between. What the runs observe (syncs, API errors,
// unreachable or slow servers, relists) is reported to a health.Tracker.
//
// A Fleet runs an Ingester per registered cluster; it is the clusters.Runner
// that a clusters.Registry drives. Its clusters share a listGate, which bounds
// how many lists run at once across the fleet (types waiting for their turn
// are PENDING with that reason), one prober, whose single goroutine
// (Fleet.Start) probes every API server, and the informers' metrics (ingest
// lag, list slots). The Fleet's owner runs Fleet.Start beside the
// Registry's Start, with the same context.
package informers
