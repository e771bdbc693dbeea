// Package app is the aggregator application: it wires fleetcache together. A
// clusters.Registry runs an informers.Ingester per cluster (through an
// informers.Fleet) into one index.Index and one health.Tracker, and an HTTP
// server serves the GraphQL API over them. Config and ParseArgs read the
// configuration file and flags; Run is what the aggregator command calls.
//
// It is internal: the application's wiring is not a Go API. Programs that
// embed fleetcache build on the packages of pkg/ instead.
package app
