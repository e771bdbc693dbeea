// Package demo runs fleetcache on a small, live, local fleet: what "make
// demo" starts.
//
// Run starts three real clusters (one etcd and three kube-apiservers on
// 127.0.0.1, from internal/testcluster) named prod-eu, prod-us and staging,
// seeds each with a fleet (see fleet.go: namespaces, nodes, Deployments with
// their ReplicaSets and Pods linked by real ownerReferences, Services,
// ServiceAccounts, ConfigMaps, and Widgets of a CustomResourceDefinition),
// starts the aggregator against them in-process, prints where to look, and
// keeps a light churn going (churn.go) until its context ends. Then it stops
// the aggregator and the clusters, in that order, and returns.
//
// No controller-manager runs in the test clusters, so nothing reconciles: the
// demo writes the ReplicaSets and Pods a Deployment controller would have
// made, and their status, itself.
package demo
