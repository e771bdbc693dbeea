// Package deploy holds fleetcache's deployment artefacts and the tests that
// keep them honest; it has no code of its own.
//
//   - helm/fleetcache: the Helm chart (Deployment of two replicas with its
//     PodDisruptionBudget and snapshot volume, Service, ServiceAccount,
//     RBAC for cluster Secrets, the system:auth-delegator binding that
//     token reviews need, config file with authentication, authorization
//     and TLS, optional ServiceMonitor, PrometheusRule and member-cluster
//     ClusterRole).
//   - member-cluster: the ClusterRole each member cluster grants fleetcache
//     (list/watch on the default resource types, create on
//     subjectaccessreviews) and an example binding.
//   - prometheus/alerts.yaml: the alert rules (a copy of the chart's
//     files/alerts.yaml for plain Prometheus).
//   - grafana/fleetcache.json: the dashboard.
//
// The tests render the chart with the helm CLI of bin/ (make testbin), decode
// every object, dry-run them against a real API server, apply the member
// ClusterRole to a real cluster and sync and authorize through it (with
// tokens reviewed through the chart's auth-delegator binding), check
// the metric names of the alerts and the dashboard, and build the binary as
// the Dockerfile does to check that it is static.
package deploy
