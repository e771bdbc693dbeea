package warmstart

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the snapshot's metrics: its writes, and what starts found.
type Metrics struct {
	writes      *prometheus.CounterVec
	duration    prometheus.Histogram
	objects     prometheus.Counter
	lastWrite   prometheus.Gauge
	discarded   *prometheus.CounterVec
	loadSeconds prometheus.Gauge
	loaded      prometheus.Gauge
	rebuilt     prometheus.Gauge
}

// NewMetrics registers the snapshot's metrics with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fleetcache_snapshot_writes_total",
			Help: "Writes of the snapshot to its store, by result (ok, error)."}, []string{"result"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "fleetcache_snapshot_write_duration_seconds",
			Help:    "How long a write of the snapshot took, from reading the index to the synced commit.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10)}),
		objects: prometheus.NewCounter(prometheus.CounterOpts{Name: "fleetcache_snapshot_objects_written_total",
			Help: "Objects put into or deleted from the snapshot store."}),
		lastWrite: prometheus.NewGauge(prometheus.GaugeOpts{Name: "fleetcache_snapshot_last_write_timestamp_seconds",
			Help: "When the snapshot was last written successfully (Unix time)."}),
		discarded: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fleetcache_snapshot_discarded_total",
			Help: "Snapshots found unusable at start and set aside, by reason (torn, corrupt, format): the replica started cold."}, []string{"reason"}),
		loadSeconds: prometheus.NewGauge(prometheus.GaugeOpts{Name: "fleetcache_snapshot_load_duration_seconds",
			Help: "How long loading the snapshot into the index took at start."}),
		loaded: prometheus.NewGauge(prometheus.GaugeOpts{Name: "fleetcache_snapshot_loaded_objects",
			Help: "Objects loaded from the snapshot at start (0: a cold start)."}),
		rebuilt: prometheus.NewGauge(prometheus.GaugeOpts{Name: "fleetcache_snapshot_loaded_rebuilt_objects",
			Help: "Objects of the snapshot loaded at start that were built again from their JSON (another dictionary or other indexed paths than the writer's): slower than as they were held."}),
	}
	for _, r := range []string{"torn", "corrupt", "format"} {
		m.discarded.WithLabelValues(r)
	}
	for _, c := range []prometheus.Collector{m.writes, m.duration, m.objects, m.lastWrite, m.discarded, m.loadSeconds, m.loaded, m.rebuilt} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Discarded counts a snapshot set aside for reason.
func (m *Metrics) Discarded(reason string) {
	if m != nil {
		m.discarded.WithLabelValues(reason).Inc()
	}
}

// Loaded records what Load did.
func (m *Metrics) Loaded(l *Loaded) {
	if m != nil && l != nil {
		m.loadSeconds.Set(l.Took.Seconds())
		m.loaded.Set(float64(l.Objects))
		m.rebuilt.Set(float64(l.Rebuilt))
	}
}

func (m *Metrics) observe(start, end time.Time, objects int, err error) {
	if m == nil {
		return
	}
	if err != nil {
		m.writes.WithLabelValues("error").Inc()
		return
	}
	m.writes.WithLabelValues("ok").Inc()
	m.duration.Observe(end.Sub(start).Seconds())
	m.objects.Add(float64(objects))
	m.lastWrite.Set(float64(end.UnixNano()) / 1e9)
}
