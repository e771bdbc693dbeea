package graphql

import (
	"fmt"
	"time"

	"github.com/graphql-go/graphql/language/ast"
	"github.com/prometheus/client_golang/prometheus"
)

// requestBuckets span the index's sub-millisecond answers up to
// Options.Timeout's default of 10s.
var requestBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// metrics are the Server's Prometheus metrics (docs/metrics.md). They
// exist whether or not Options.Registerer is set, so the hooks need no
// checks; unregistered, nobody reads them.
type metrics struct {
	requests   *prometheus.HistogramVec
	overflowed prometheus.Counter
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
		overflowed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "fleetcache_graphql_subscriptions_overflowed_total",
			Help: "Subscriptions ended as slow consumers: more events waited for them than Options.Fanout.Buffer.",
		}),
		since: time.Since,
	}
	// Every series exists from the start, so that rates and alerts see
	// zeros instead of nothing.
	for _, op := range []string{ast.OperationTypeQuery, ast.OperationTypeMutation, ast.OperationTypeSubscription} {
		m.requests.WithLabelValues(op)
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
		m.requests, m.overflowed,
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
