package graphql

import (
	"errors"
	"fmt"
	"github.com/fleetcache/fleetcache/pkg/index/views"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/fleetcache/fleetcache/pkg/fanout"
)

// TestMetrics checks the engine's metrics after queries, subscriptions
// and a slow consumer (the transports' own: pkg/transport).
func TestMetrics(t *testing.T) {
	f := newFixture(t)
	reg := prometheus.NewPedanticRegistry()
	s := startServer(t, f.ix, f.tracker, Options{Registerer: reg, Fanout: fanout.Options{Buffer: 2}})
	// Every request takes a quarter second: exact in binary, so the sums
	// below are too.
	s.metrics.since = func(time.Time) time.Duration { return 250 * time.Millisecond }

	// Queries: two through Execute (a miss, then a hit), one through
	// Subscribe, as a streaming transport runs it. An invalid document is
	// a miss and, without an operation, no request observation.
	const clustersQuery = `{ clusters { name } }`
	run(t, s, clustersQuery, nil)
	run(t, s, clustersQuery, nil)
	if res := run(t, s, `{ nope }`, nil); len(res.Errors) == 0 {
		t.Fatal("invalid document accepted")
	}
	if sub, res := s.Subscribe(t.Context(), Request{Query: clustersQuery}); sub != nil || len(res.Errors) > 0 {
		t.Fatalf("query through Subscribe: %v %+v", sub, res)
	}
	// Three subscriptions; the last one does not read, and overflows its
	// buffer of 2.
	subscribe(t, s, eventsQuery, nil).Close()
	subscribe(t, s, eventsQuery, nil).Close()
	slow := subscribe(t, s, eventsQuery, nil)
	for i := range 3 {
		f.ix.Upsert(version(t, "c1", "ns", fmt.Sprint(i), "1", nil))
	}
	waitFor(t, "the slow subscription to overflow", func() bool { return s.hub.Subscribers() == 0 })
	if _, err := slow.Next(t.Context()); !errors.Is(err, ErrSlowConsumer) {
		t.Fatalf("slow Next: %v, want ErrSlowConsumer", err)
	}

	want := `
# HELP fleetcache_graphql_document_cache_requests_total Lookups of a query text in the cache of parsed and validated documents, by result (hit, miss).
# TYPE fleetcache_graphql_document_cache_requests_total counter
fleetcache_graphql_document_cache_requests_total{result="hit"} 4
fleetcache_graphql_document_cache_requests_total{result="miss"} 3
# HELP fleetcache_graphql_request_duration_seconds Time to answer a GraphQL operation, by type, over HTTP, WebSocket and SSE: from the request (decoded) to its result (queries, mutations) or to the subscription set up and registered (subscriptions; events are not included). Requests that fail before an operation is selected are not observed.
# TYPE fleetcache_graphql_request_duration_seconds histogram
` + histogram("mutation", 0) + histogram("query", 3) + histogram("subscription", 3) + `
# HELP fleetcache_graphql_subscriptions_overflowed_total Subscriptions ended as slow consumers: more events waited for them than Options.Fanout.Buffer.
# TYPE fleetcache_graphql_subscriptions_overflowed_total counter
fleetcache_graphql_subscriptions_overflowed_total 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("metrics lint: %v %v", problems, err)
	}
}

// histogram returns the exposition of n requests of a type that took a
// quarter second each.
func histogram(op string, n int) string {
	var b strings.Builder
	for _, le := range requestBuckets {
		c := 0
		if le >= 0.25 {
			c = n
		}
		fmt.Fprintf(&b, "fleetcache_graphql_request_duration_seconds_bucket{operation=%q,le=%q} %d\n", op, fmt.Sprint(le), c)
	}
	fmt.Fprintf(&b, "fleetcache_graphql_request_duration_seconds_bucket{operation=%q,le=\"+Inf\"} %d\n", op, n)
	fmt.Fprintf(&b, "fleetcache_graphql_request_duration_seconds_sum{operation=%q} %v\n", op, float64(n)/4)
	fmt.Fprintf(&b, "fleetcache_graphql_request_duration_seconds_count{operation=%q} %d\n", op, n)
	return b.String()
}

func TestMetricsRegistration(t *testing.T) {
	f := newFixture(t)
	// Without a Registerer the metrics still count, unexposed.
	s := newServer(t, f.ix, f.tracker, Options{})
	run(t, s, `{ clusters { name } }`, nil)
	if n := testutil.CollectAndCount(s.metrics.requests); n != 3 {
		t.Errorf("request series = %d, want 3", n)
	}
	// Two servers cannot share a registry: the second's metrics would
	// collide with the first's.
	reg := prometheus.NewRegistry()
	newServer(t, f.ix, f.tracker, Options{Registerer: reg})
	if _, err := New(views.Of(f.ix), f.tracker, Options{Registerer: reg}); err == nil {
		t.Error("second server on one registry: no error")
	}
}
