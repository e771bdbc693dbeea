package informers

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the informers' own metrics, fleet-wide: per cluster they
// would cost series by the thousand (docs/metrics.md, "Series per cluster").
type metrics struct {
	lag *prometheus.HistogramVec
}

// lagBuckets suit a change time known to the second (see changeTime).
var lagBuckets = []float64{0.5, 1, 2, 3, 5, 10, 30, 60, 120, 300}

// newMetrics registers the informers' metrics with reg, and gauges of
// gate's list slots.
func newMetrics(reg prometheus.Registerer, gate *listGate) (*metrics, error) {
	m := &metrics{lag: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "fleetcache_ingest_lag_seconds",
		Help:    "Time from an object's change in its cluster (the newest time of its managedFields, to the second) to its arrival in the index, for watch events that carry one; by resource type, all clusters together.",
		Buckets: lagBuckets,
	}, []string{"resource"})}
	inUse := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "fleetcache_list_slots_in_use",
		Help: "Lists (initial lists and relists) running now, across the fleet; at most the configured maxConcurrentLists.",
	}, func() float64 { return float64(len(gate.slots)) })
	size := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "fleetcache_list_slots",
		Help: "How many lists may run at once across the fleet (maxConcurrentLists).",
	}, func() float64 { return float64(cap(gate.slots)) })
	waiting := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "fleetcache_list_slot_waiters",
		Help: "Resource types of clusters waiting for their turn to list (PENDING, or SYNCING when relisting).",
	}, func() float64 { return float64(gate.waiting.Load()) })
	for _, c := range []prometheus.Collector{m.lag, inUse, size, waiting} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register informers metrics: %w", err)
		}
	}
	return m, nil
}
