// Package inventory holds what the fleet's inventory says about each
// registered cluster beside how to reach it: its labels, the source that
// registered it, and the control plane health the source reports.
//
// The cluster sources (package clusters) publish an [Info] per registered
// cluster into a [Store] with [Store.Set]; the API reads it to show
// Cluster.labels and to resolve clusterSelector: [Store.Select] returns the
// clusters a Kubernetes label selector matches. Every Set that changes
// something ends the context that [Store.Watch] handed out, so that live
// views (subscriptions filtered by a cluster selector) can re-evaluate
// which clusters they follow.
package inventory
