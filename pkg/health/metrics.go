package health

import (
	"github.com/prometheus/client_golang/prometheus"
)

// statuses lists every Status: each gets a series, 1 for the current one.
var statuses = []Status{Pending, Syncing, Synced, Degraded, Disconnected}

// Collector exposes a Tracker's state as Prometheus metrics, per cluster
// and resource type (docs/metrics.md lists them). It reads the Tracker when
// scraped, so a removed cluster's or type's series disappear with it and
// the informers' event path does no metric work of its own.
type Collector struct {
	t *Tracker

	clusterStatus, resourceStatus  *prometheus.Desc
	cachedObjects, events          *prometheus.Desc
	watchRestarts, relists         *prometheus.Desc
	watchExpired, currentAsOf      *prometheus.Desc
	lastEvent, initialSyncDuration *prometheus.Desc
	metadataOnly, refused          *prometheus.Desc
}

// NewCollector returns a Collector of t's state; register it with the
// aggregator's prometheus.Registerer.
func NewCollector(t *Tracker) *Collector {
	cr := []string{"cluster", "resource"}
	return &Collector{
		t: t,
		clusterStatus: prometheus.NewDesc("fleetcache_cluster_status",
			"Sync status of the cluster: 1 for its current status, 0 for the others.",
			[]string{"cluster", "status"}, nil),
		resourceStatus: prometheus.NewDesc("fleetcache_resource_status",
			"Sync status of a resource type of the cluster: one series, 1, labelled with its current status.",
			[]string{"cluster", "resource", "status"}, nil),
		cachedObjects: prometheus.NewDesc("fleetcache_cached_objects",
			"Objects of the resource type cached from the cluster.", cr, nil),
		events: prometheus.NewDesc("fleetcache_events_total",
			"Object changes the informer delivered to the index, by watch event type; the objects of every list count as ADDED or MODIFIED.",
			[]string{"cluster", "resource", "type"}, nil),
		watchRestarts: prometheus.NewDesc("fleetcache_watch_restarts_total",
			"Watches of the resource type resumed from a resourceVersion after they ended.", cr, nil),
		relists: prometheus.NewDesc("fleetcache_relists_total",
			"Full lists of the resource type after its initial one (410 Gone, reconnections).", cr, nil),
		watchExpired: prometheus.NewDesc("fleetcache_watch_expired_total",
			"Watches of the resource type refused with 410 Gone: their resourceVersion had been compacted.", cr, nil),
		currentAsOf: prometheus.NewDesc("fleetcache_cluster_current_as_of_timestamp_seconds",
			"Unix time until which all of the cluster's cached data is known current: the scrape time while SYNCED, frozen when a watch broke; absent while a type was never current.",
			[]string{"cluster"}, nil),
		lastEvent: prometheus.NewDesc("fleetcache_last_event_timestamp_seconds",
			"Unix time of the last object change of the resource type; absent before the first one.", cr, nil),
		initialSyncDuration: prometheus.NewDesc("fleetcache_initial_sync_duration_seconds",
			"How long the last initial list of the resource type took, until every object reached the index; absent until it synced.", cr, nil),
		metadataOnly: prometheus.NewDesc("fleetcache_metadata_only_objects",
			"Objects of the resource type the index holds without their body, under its memory budget; absent while none.", cr, nil),
		refused: prometheus.NewDesc("fleetcache_refused_objects_total",
			"Objects of the resource type the index did not store, under its memory budget; absent while none.", cr, nil),
	}
}

// Describe sends the descriptors of every metric the Collector produces.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.clusterStatus, c.resourceStatus, c.cachedObjects, c.events,
		c.watchRestarts, c.relists, c.watchExpired, c.currentAsOf, c.lastEvent, c.initialSyncDuration, c.metadataOnly, c.refused} {
		ch <- d
	}
}

// Collect sends the current value of every series.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	clusters, _ := c.t.Clusters()
	for _, cs := range clusters {
		for _, st := range statuses {
			ch <- prometheus.MustNewConstMetric(c.clusterStatus, prometheus.GaugeValue, oneIf(cs.Status == st), cs.Name, string(st))
		}
		if !cs.CurrentAsOf.IsZero() {
			ch <- prometheus.MustNewConstMetric(c.currentAsOf, prometheus.GaugeValue, float64(cs.CurrentAsOf.UnixNano())/1e9, cs.Name)
		}
		for _, r := range cs.Resources {
			// One series per type, not one per status: at 16 types the
			// zeros would be 64 of a cluster's series (docs/metrics.md).
			ch <- prometheus.MustNewConstMetric(c.resourceStatus, prometheus.GaugeValue, 1, cs.Name, r.Resource, string(r.Status))
			ch <- prometheus.MustNewConstMetric(c.cachedObjects, prometheus.GaugeValue, float64(r.ObjectCount), cs.Name, r.Resource)
			for _, e := range [...]struct {
				typ EventType
				n   uint64
			}{{EventAdded, r.Events.Added}, {EventModified, r.Events.Modified}, {EventDeleted, r.Events.Deleted}} {
				ch <- prometheus.MustNewConstMetric(c.events, prometheus.CounterValue, float64(e.n), cs.Name, r.Resource, e.typ.String())
			}
			ch <- prometheus.MustNewConstMetric(c.watchRestarts, prometheus.CounterValue, float64(r.WatchRestarts), cs.Name, r.Resource)
			ch <- prometheus.MustNewConstMetric(c.relists, prometheus.CounterValue, float64(r.Relists), cs.Name, r.Resource)
			ch <- prometheus.MustNewConstMetric(c.watchExpired, prometheus.CounterValue, float64(r.WatchExpired), cs.Name, r.Resource)
			// Only once the memory budget touches the type: two zero series
			// per type of every cluster would be a fifth of /metrics.
			if r.MetadataOnly > 0 {
				ch <- prometheus.MustNewConstMetric(c.metadataOnly, prometheus.GaugeValue, float64(r.MetadataOnly), cs.Name, r.Resource)
			}
			if r.Refused > 0 {
				ch <- prometheus.MustNewConstMetric(c.refused, prometheus.CounterValue, float64(r.Refused), cs.Name, r.Resource)
			}
			if !r.LastEventTime.IsZero() {
				ch <- prometheus.MustNewConstMetric(c.lastEvent, prometheus.GaugeValue, float64(r.LastEventTime.UnixNano())/1e9, cs.Name, r.Resource)
			}
			if !r.LastSyncTime.IsZero() {
				ch <- prometheus.MustNewConstMetric(c.initialSyncDuration, prometheus.GaugeValue, r.InitialSyncDuration.Seconds(), cs.Name, r.Resource)
			}
		}
	}
}

func oneIf(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
