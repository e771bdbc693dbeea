// Package health tracks how fresh fleetcache's copy of each cluster is.
//
// A Tracker holds one state per cluster and per resource type. The informers
// report what they observe (a type started, synced or failed, a request that
// succeeded or could not reach the server, a probe result, an object event);
// the Tracker derives a Status for each resource type and for the cluster:
//
//	PENDING       registered, nothing started yet, or waiting for its turn to list
//	SYNCING       some type has not finished its initial list (or relists, or its server is slow)
//	SYNCED        every type is synced and the API server is reachable
//	DEGRADED      reachable, but some types fail (forbidden, not served, sync deadline passed)
//	DISCONNECTED  the API server cannot be reached; the last known data stays, marked stale
//
// Its locks are sharded per cluster, and object events are counted in an
// EventCounter without any lock, so that the reports of hundreds of
// clusters do not contend.
//
// Every change of a derived status is recorded with a version number, so a
// consumer can read the current ClusterStatus list and then follow Changes
// without missing one (bounded retention, like the index feed).
//
// A Collector exposes the same state to Prometheus, read at scrape time:
// per cluster and resource type, the status, cached objects, events by
// type, watch restarts, relists, last event time and initial sync duration
// (docs/metrics.md).
//
// Healthz and Readyz return the Handlers of /healthz and /readyz, which run
// Checks (plain func(*http.Request) error) and answer in kube-apiserver's
// format. Readyz has one check per cluster, passing once InitialSyncError
// finds the cluster past its initial sync (docs/operations.md).
package health
