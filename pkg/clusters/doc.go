// Package clusters knows which Kubernetes clusters fleetcache aggregates and keeps
// one cache running per cluster.
//
// A [Cluster] is a name plus the *rest.Config used to reach it. Clusters come from
// sources: [FromKubeconfig] reads the contexts of one kubeconfig file and [FromDir]
// reads every kubeconfig file of a directory; in both the cluster name is the
// context name.
//
// A [Registry] holds the clusters by name and runs each one through a [Runner]:
// every cluster gets its own goroutine and its own cancel function, and
// [Registry.Start] returns only after all of them have returned. [Registry.Add],
// [Registry.Update], [Registry.Remove] and [Registry.Set] change the set while it
// runs; Update restarts a cluster whose server or credentials changed, and Remove
// stops a cluster and then calls [Runner.ForgetCluster]. A typical reload loop
// reads the sources again and hands the result to Set.
package clusters
