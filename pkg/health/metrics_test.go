package health

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestCollector(t *testing.T) {
	now := t0
	tr := NewTracker(counts{"c1/pods": 2, "c1/configmaps": 0}, Options{Now: func() time.Time { return now }})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(tr))

	tr.AddCluster("c2")
	tr.ResourceStarting("c1", "pods", "Pod")
	tr.ResourceList("c1", "pods")
	tr.ResourceStarting("c1", "configmaps", "ConfigMap")
	tr.ResourceError("c1", "configmaps", "ConfigMap", errForbidden)
	for range 3 {
		tr.EventCounter("c1", "pods").Record(EventAdded, now)
	}
	now = t0.Add(2500 * time.Millisecond)
	tr.ResourceSynced("c1", "pods")
	tr.ResourceWatch("c1", "pods")
	tr.ResourceWatch("c1", "pods") // resumed
	tr.ResourceList("c1", "pods")  // relist
	tr.ResourceExpired("c1", "pods")
	tr.EventCounter("c1", "pods").Record(EventModified, t0.Add(time.Minute))
	tr.EventCounter("c1", "pods").Record(EventDeleted, t0.Add(90*time.Second))
	tr.EventCounter("c1", "nodes").Record(EventAdded, t0) // not tracked: ignored

	names := []string{
		"fleetcache_cluster_status", "fleetcache_resource_status", "fleetcache_cached_objects",
		"fleetcache_events_total", "fleetcache_watch_restarts_total", "fleetcache_relists_total",
		"fleetcache_last_event_timestamp_seconds", "fleetcache_initial_sync_duration_seconds",
		"fleetcache_watch_expired_total", "fleetcache_cluster_current_as_of_timestamp_seconds",
	}
	// t0 is 2026-11-22T10:00:00Z: 1795341600 in Unix seconds.
	want := `
# HELP fleetcache_cached_objects Objects of the resource type cached from the cluster.
# TYPE fleetcache_cached_objects gauge
fleetcache_cached_objects{cluster="c1",resource="configmaps"} 0
fleetcache_cached_objects{cluster="c1",resource="pods"} 2
# HELP fleetcache_cluster_current_as_of_timestamp_seconds Unix time until which all of the cluster's cached data is known current: the scrape time while SYNCED, frozen when a watch broke; absent while a type was never current.
# TYPE fleetcache_cluster_current_as_of_timestamp_seconds gauge
fleetcache_cluster_current_as_of_timestamp_seconds{cluster="c1"} 1.7953416025e+09
# HELP fleetcache_cluster_status Sync status of the cluster: 1 for its current status, 0 for the others.
# TYPE fleetcache_cluster_status gauge
fleetcache_cluster_status{cluster="c1",status="DEGRADED"} 1
fleetcache_cluster_status{cluster="c1",status="DISCONNECTED"} 0
fleetcache_cluster_status{cluster="c1",status="PENDING"} 0
fleetcache_cluster_status{cluster="c1",status="SYNCED"} 0
fleetcache_cluster_status{cluster="c1",status="SYNCING"} 0
fleetcache_cluster_status{cluster="c2",status="DEGRADED"} 0
fleetcache_cluster_status{cluster="c2",status="DISCONNECTED"} 0
fleetcache_cluster_status{cluster="c2",status="PENDING"} 1
fleetcache_cluster_status{cluster="c2",status="SYNCED"} 0
fleetcache_cluster_status{cluster="c2",status="SYNCING"} 0
# HELP fleetcache_events_total Object changes the informer delivered to the index, by watch event type; the objects of every list count as ADDED or MODIFIED.
# TYPE fleetcache_events_total counter
fleetcache_events_total{cluster="c1",resource="configmaps",type="ADDED"} 0
fleetcache_events_total{cluster="c1",resource="configmaps",type="DELETED"} 0
fleetcache_events_total{cluster="c1",resource="configmaps",type="MODIFIED"} 0
fleetcache_events_total{cluster="c1",resource="pods",type="ADDED"} 3
fleetcache_events_total{cluster="c1",resource="pods",type="DELETED"} 1
fleetcache_events_total{cluster="c1",resource="pods",type="MODIFIED"} 1
# HELP fleetcache_initial_sync_duration_seconds How long the last initial list of the resource type took, until every object reached the index; absent until it synced.
# TYPE fleetcache_initial_sync_duration_seconds gauge
fleetcache_initial_sync_duration_seconds{cluster="c1",resource="pods"} 2.5
# HELP fleetcache_last_event_timestamp_seconds Unix time of the last object change of the resource type; absent before the first one.
# TYPE fleetcache_last_event_timestamp_seconds gauge
fleetcache_last_event_timestamp_seconds{cluster="c1",resource="pods"} 1.79534169e+09
# HELP fleetcache_relists_total Full lists of the resource type after its initial one (410 Gone, reconnections).
# TYPE fleetcache_relists_total counter
fleetcache_relists_total{cluster="c1",resource="configmaps"} 0
fleetcache_relists_total{cluster="c1",resource="pods"} 1
# HELP fleetcache_resource_status Sync status of a resource type of the cluster: one series, 1, labelled with its current status.
# TYPE fleetcache_resource_status gauge
fleetcache_resource_status{cluster="c1",resource="configmaps",status="DEGRADED"} 1
fleetcache_resource_status{cluster="c1",resource="pods",status="SYNCED"} 1
# HELP fleetcache_watch_restarts_total Watches of the resource type resumed from a resourceVersion after they ended.
# TYPE fleetcache_watch_restarts_total counter
fleetcache_watch_restarts_total{cluster="c1",resource="configmaps"} 0
fleetcache_watch_restarts_total{cluster="c1",resource="pods"} 1
# HELP fleetcache_watch_expired_total Watches of the resource type refused with 410 Gone: their resourceVersion had been compacted.
# TYPE fleetcache_watch_expired_total counter
fleetcache_watch_expired_total{cluster="c1",resource="configmaps"} 0
fleetcache_watch_expired_total{cluster="c1",resource="pods"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}

	// A removed cluster's series go with it; a type that syncs again
	// reports its new initial sync.
	tr.RemoveCluster("c2")
	tr.RemoveResource("c1", "configmaps")
	now = t0.Add(time.Hour)
	tr.ResourceStarting("c1", "pods", "Pod")
	now = now.Add(750 * time.Millisecond)
	tr.ResourceSynced("c1", "pods")
	want = `
# HELP fleetcache_cluster_status Sync status of the cluster: 1 for its current status, 0 for the others.
# TYPE fleetcache_cluster_status gauge
fleetcache_cluster_status{cluster="c1",status="DEGRADED"} 0
fleetcache_cluster_status{cluster="c1",status="DISCONNECTED"} 0
fleetcache_cluster_status{cluster="c1",status="PENDING"} 0
fleetcache_cluster_status{cluster="c1",status="SYNCED"} 1
fleetcache_cluster_status{cluster="c1",status="SYNCING"} 0
# HELP fleetcache_initial_sync_duration_seconds How long the last initial list of the resource type took, until every object reached the index; absent until it synced.
# TYPE fleetcache_initial_sync_duration_seconds gauge
fleetcache_initial_sync_duration_seconds{cluster="c1",resource="pods"} 0.75
# HELP fleetcache_relists_total Full lists of the resource type after its initial one (410 Gone, reconnections).
# TYPE fleetcache_relists_total counter
fleetcache_relists_total{cluster="c1",resource="pods"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "fleetcache_cluster_status",
		"fleetcache_initial_sync_duration_seconds", "fleetcache_relists_total"); err != nil {
		t.Error(err)
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("metrics lint: %v %v", problems, err)
	}
}

// degradedCounts is counts whose index degrades the pods of c1 under a
// memory budget.
type degradedCounts struct{ counts }

func (degradedCounts) Degraded(cluster, resource string) (int, uint64) {
	if cluster == "c1" && resource == "pods" {
		return 3, 2
	}
	return 0, 0
}

// TestCollectorBudget: the memory budget's series exist only for the types
// it degraded.
func TestCollectorBudget(t *testing.T) {
	tr := NewTracker(degradedCounts{counts{"c1/pods": 5}}, Options{})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(tr))
	tr.ResourceStarting("c1", "pods", "Pod")
	tr.ResourceStarting("c1", "configmaps", "ConfigMap")
	want := `
# HELP fleetcache_metadata_only_objects Objects of the resource type the index holds without their body, under its memory budget; absent while none.
# TYPE fleetcache_metadata_only_objects gauge
fleetcache_metadata_only_objects{cluster="c1",resource="pods"} 3
# HELP fleetcache_refused_objects_total Objects of the resource type the index did not store, under its memory budget; absent while none.
# TYPE fleetcache_refused_objects_total counter
fleetcache_refused_objects_total{cluster="c1",resource="pods"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "fleetcache_metadata_only_objects", "fleetcache_refused_objects_total"); err != nil {
		t.Error(err)
	}
}

// BenchmarkEventCounter is the health work of one object event: no lock,
// whatever else the Tracker does.
func BenchmarkEventCounter(b *testing.B) {
	tr := NewTracker(nil, Options{})
	for i := range 20 {
		tr.ResourceStarting("c"+strconv.Itoa(i), "pods", "Pod")
	}
	ev := tr.EventCounter("c9", "pods")
	at := time.Now()
	for b.Loop() {
		ev.Record(EventModified, at)
	}
}

// BenchmarkResourceUpdate is the health work of a request that changes no
// status (ResourceRequestOK, once per list page and watch request) and of
// one that does, for a cluster of the 16 default types.
func BenchmarkResourceUpdate(b *testing.B) {
	tr := NewTracker(nil, Options{})
	for i := range 16 {
		tr.ResourceStarting("c1", "type-"+strconv.Itoa(i), "Kind")
		tr.ResourceSynced("c1", "type-"+strconv.Itoa(i))
	}
	b.Run("unchanged", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			tr.ResourceRequestOK("c1", "type-3")
		}
	})
	b.Run("changed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			tr.ResourceQueued("c1", "type-3", "waiting")
			tr.ResourceListing("c1", "type-3")
		}
	})
}
