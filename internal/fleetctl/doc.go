// Package fleetctl is `kubectl fleet`, the kubectl plugin on fleetcache's
// GraphQL API (cmd/kubectl-fleet is its main): `get` prints a kind's objects
// of every cluster as `kubectl get` prints them, with a CLUSTER column first
// and the columns of Resource.columns, and follows resourceEvents with -w;
// `clusters` prints each cluster's health; `count` prints facets.
//
// Main parses the command line and runs a command. A Client, built from a
// kubeconfig context or --server/--token (Connect), posts queries over HTTP
// (Query) and follows subscriptions over WebSocket with the
// graphql-transport-ws protocol (Subscribe), resuming from the last cursor
// after a disconnect (watch). Errors say which of the usual failures
// happened: the server is unreachable, it refused the credentials, it
// rejected the request (Error carries its code).
//
// It is an application, not a library: nothing outside cmd/kubectl-fleet
// and its tests should import it.
package fleetctl
