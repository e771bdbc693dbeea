package graphql

import (
	"fmt"
	"time"

	"github.com/graphql-go/graphql/language/ast"
	"github.com/prometheus/client_golang/prometheus"
)

// Transports of subscriptions, the values of the transport label.
const (
	transportWebSocket = "websocket"
	transportSSE       = "sse"
)

// requestBuckets span the index's sub-millisecond answers up to
// Options.Timeout's default of 10s.
var requestBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// metrics are the Server's Prometheus metrics (docs/metrics.md). They
// exist whether or not Options.Registerer is set, so the hooks need no
// checks; unregistered, nobody reads them.
type metrics struct {
	requests      *prometheus.HistogramVec
	subscriptions *prometheus.GaugeVec
	overflowed    prometheus.Counter
	rateLimited   *prometheus.CounterVec
	// since returns the time elapsed since start; tests replace it.
	since func(start time.Time) time.Duration
}

func newMetrics() *metrics {
	m := &metrics{
		requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "fleetcache_graphql_request_duration_seconds",
			Help: "Time to answer a GraphQL operation, by type, over HTTP, WebSocket and SSE: from the request (decoded) to its result " +
				"(queries, mutations) or to the subscription set up and registered (subscriptions; events are not included). " +
				"Requests that fail before an operation is selected are not observed.",
			Buckets: requestBuckets,
		}, []string{"operation"}),
		subscriptions: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "fleetcache_graphql_subscriptions_open",
			Help: "Subscriptions running, by transport (websocket: graphql-transport-ws; sse: GraphQL over Server-Sent Events).",
		}, []string{"transport"}),
		overflowed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "fleetcache_graphql_subscriptions_overflowed_total",
			Help: "Subscriptions ended as slow consumers: more events waited for them than Options.Fanout.Buffer.",
		}),
		rateLimited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fleetcache_graphql_rate_limited_total",
			Help: "Operations refused because their caller (the authenticated user, else the client address) was over a rate limit (Options.RateLimit), by limit (query, subscription).",
		}, []string{"limit"}),
		since: time.Since,
	}
	// Every series exists from the start, so that rates and alerts see
	// zeros instead of nothing.
	for _, op := range []string{ast.OperationTypeQuery, ast.OperationTypeMutation, ast.OperationTypeSubscription} {
		m.requests.WithLabelValues(op)
	}
	for _, tr := range []string{transportWebSocket, transportSSE} {
		m.subscriptions.WithLabelValues(tr)
	}
	for _, k := range operationKinds {
		m.rateLimited.WithLabelValues(k.String())
	}
	return m
}

// register registers the metrics, and the document cache's lookups that s
// counts, with reg.
func (m *metrics) register(reg prometheus.Registerer, s *Server) error {
	cacheOpts := func(result string) prometheus.CounterOpts {
		return prometheus.CounterOpts{
			Name:        "fleetcache_graphql_document_cache_requests_total",
			Help:        "Lookups of a query text in the cache of parsed and validated documents, by result (hit, miss).",
			ConstLabels: prometheus.Labels{"result": result},
		}
	}
	for _, c := range []prometheus.Collector{
		m.requests, m.subscriptions, m.overflowed, m.rateLimited,
		prometheus.NewCounterFunc(cacheOpts("hit"), func() float64 { return float64(s.hits.Load()) }),
		prometheus.NewCounterFunc(cacheOpts("miss"), func() float64 { return float64(s.misses.Load()) }),
	} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("register graphql metrics: %w", err)
		}
	}
	return nil
}

// observe records a request of operation type op that started at start.
func (m *metrics) observe(op string, start time.Time) {
	m.requests.WithLabelValues(op).Observe(m.since(start).Seconds())
}

// subscriptionOpened counts a subscription of a transport as open; the
// function it returns counts it closed.
func (m *metrics) subscriptionOpened(transport string) (closed func()) {
	g := m.subscriptions.WithLabelValues(transport)
	g.Inc()
	return g.Dec
}
