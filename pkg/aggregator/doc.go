// Package aggregator wires fleetcache together: a clusters.Registry runs an
// informers.Cache per cluster (through an informers.Fleet) into one
// index.Index and one health.Tracker, and an HTTP server serves the GraphQL
// API over them. Run is what the aggregator command calls.
package aggregator
