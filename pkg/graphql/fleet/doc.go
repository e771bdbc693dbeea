// Package fleet is the part of the GraphQL schema that describes the
// fleet itself rather than its objects: Cluster (a cluster's sync health,
// inventory labels and status history), ResourceSync, StatusPeriod,
// StaleCluster, the SyncStatus enum, and Fleetcache (the answering
// process, a ProcessStatus).
//
// A Schema reads two small interfaces declared here, Health (which
// *health.Tracker implements) and Inventory (*inventory.Store), and a
// function of the engine that says whether a caller may read a cluster's
// details: Redact hides messages, errors and the server's address from
// the others. Its ClusterType is Cluster, whose values are
// *health.ClusterStatus, or an *Update in clusterHealth events;
// ResolveClusters and ResolveCluster resolve Query.clusters and
// Query.cluster. The engine (package graphql) assembles these types into
// its schema and runs the clusterHealth subscriptions.
package fleet
