package graphql

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/fleetcache/fleetcache/pkg/fanout"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestMetrics drives every metric of the server through its real entry
// points (Execute, HTTP, WebSocket, SSE, the hub) and compares what the
// registry exposes.
func TestMetrics(t *testing.T) {
	f := newFixture(t)
	reg := prometheus.NewPedanticRegistry()
	s := startServer(t, f.ix, f.tracker, Options{Registerer: reg, Fanout: fanout.Options{Buffer: 2}})
	// Every request takes a quarter second: exact in binary, so the sums
	// below are too.
	s.metrics.since = func(time.Time) time.Duration { return 250 * time.Millisecond }
	endpoint := serve(t, s)
	open := func(transport string) float64 {
		return testutil.ToFloat64(s.metrics.subscriptions.WithLabelValues(transport))
	}

	// Queries: two through Execute (a miss, then a hit), one over HTTP,
	// one over WebSocket. An invalid document is a miss and, without an
	// operation, no request observation.
	const clustersQuery = `{ clusters { name } }`
	run(t, s, clustersQuery, nil)
	run(t, s, clustersQuery, nil)
	if res, body := do(t, http.MethodPost, endpoint, map[string]string{"Content-Type": "application/json"},
		string(mustJSON(t, map[string]any{"query": clustersQuery}))); res.Status != http.StatusOK {
		t.Fatalf("POST: %d %s", res.Status, body)
	}
	if res := run(t, s, `{ nope }`, nil); len(res.Errors) == 0 {
		t.Fatal("invalid document accepted")
	}
	ws := dialWS(t, endpoint)
	ws.init()
	ws.subscribe("q", clustersQuery, nil)
	ws.expect(msgNext, "q")
	ws.expect(msgComplete, "q")

	// One subscription over each transport is open until its client goes.
	ws.subscribe("s", eventsQuery, nil)
	waitFor(t, "the WebSocket subscription to open", func() bool { return open(transportWebSocket) == 1 })
	sse := openSSE(t, nil, endpoint, map[string]any{"query": eventsQuery})
	if got := open(transportSSE); got != 1 {
		t.Errorf("open SSE subscriptions = %v once the stream started, want 1", got)
	}
	if err := ws.c.Close(websocket.StatusNormalClosure, ""); err != nil {
		t.Fatal(err)
	}
	sse.close()
	waitFor(t, "both subscriptions to close", func() bool { return open(transportWebSocket) == 0 && open(transportSSE) == 0 })

	// A subscription that does not read overflows its buffer of 2.
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
fleetcache_graphql_document_cache_requests_total{result="hit"} 5
fleetcache_graphql_document_cache_requests_total{result="miss"} 3
# HELP fleetcache_graphql_request_duration_seconds Time to answer a GraphQL operation, by type, over HTTP, WebSocket and SSE: from the request (decoded) to its result (queries, mutations) or to the subscription set up and registered (subscriptions; events are not included). Requests that fail before an operation is selected are not observed.
# TYPE fleetcache_graphql_request_duration_seconds histogram
` + histogram("mutation", 0) + histogram("query", 4) + histogram("subscription", 3) + `
# HELP fleetcache_graphql_rate_limited_total Operations refused because their caller (the authenticated user, else the client address) was over a rate limit (Options.RateLimit), by limit (query, subscription).
# TYPE fleetcache_graphql_rate_limited_total counter
fleetcache_graphql_rate_limited_total{limit="query"} 0
fleetcache_graphql_rate_limited_total{limit="subscription"} 0
# HELP fleetcache_graphql_subscriptions_open Subscriptions running, by transport (websocket: graphql-transport-ws; sse: GraphQL over Server-Sent Events).
# TYPE fleetcache_graphql_subscriptions_open gauge
fleetcache_graphql_subscriptions_open{transport="sse"} 0
fleetcache_graphql_subscriptions_open{transport="websocket"} 0
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
	if _, err := New(f.ix, f.tracker, Options{Registerer: reg}); err == nil {
		t.Error("second server on one registry: no error")
	}
}
