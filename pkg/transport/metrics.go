package transport

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Transports of subscriptions, the values of the transport label.
const (
	transportWebSocket = "websocket"
	transportSSE       = "sse"
)

// metrics are the Server's Prometheus metrics (docs/metrics.md). They
// exist whether or not Options.Registerer is set, so the hooks need no
// checks; unregistered, nobody reads them.
type metrics struct {
	subscriptions *prometheus.GaugeVec
	rateLimited   *prometheus.CounterVec
}

func newMetrics() *metrics {
	m := &metrics{
		subscriptions: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "fleetcache_graphql_subscriptions_open",
			Help: "Subscriptions running, by transport (websocket: graphql-transport-ws; sse: GraphQL over Server-Sent Events).",
		}, []string{"transport"}),
		rateLimited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fleetcache_graphql_rate_limited_total",
			Help: "Operations refused because their caller (the authenticated user, else the client address) was over a rate limit (Options.RateLimit), by limit (query, subscription).",
		}, []string{"limit"}),
	}
	// Every series exists from the start, so that rates and alerts see
	// zeros instead of nothing.
	for _, tr := range []string{transportWebSocket, transportSSE} {
		m.subscriptions.WithLabelValues(tr)
	}
	for _, k := range operationKinds {
		m.rateLimited.WithLabelValues(k.String())
	}
	return m
}

// register registers the metrics with reg.
func (m *metrics) register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.subscriptions, m.rateLimited} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("register transport metrics: %w", err)
		}
	}
	return nil
}

// subscriptionOpened counts a subscription of a transport as open; the
// function it returns counts it closed.
func (m *metrics) subscriptionOpened(transport string) (closed func()) {
	g := m.subscriptions.WithLabelValues(transport)
	g.Inc()
	return g.Dec
}
