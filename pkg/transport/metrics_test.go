package transport

import (
	"strings"
	"testing"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestMetrics checks the transports' metrics: one subscription open over
// each transport until its client goes, and every series from the start.
// (The engine's own: pkg/graphql's TestMetrics; the rate-limit counter:
// TestRateLimitTransports.)
func TestMetrics(t *testing.T) {
	f := newFixture(t)
	reg := prometheus.NewPedanticRegistry()
	s := startServer(t, f.ix, f.tracker, Options{Registerer: reg})
	endpoint := serve(t, s)
	open := func(transport string) float64 {
		return testutil.ToFloat64(s.metrics.subscriptions.WithLabelValues(transport))
	}
	ws := dialWS(t, endpoint)
	ws.init()
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

	want := `
# HELP fleetcache_graphql_rate_limited_total Operations refused because their caller (the authenticated user, else the client address) was over a rate limit (Options.RateLimit), by limit (query, subscription).
# TYPE fleetcache_graphql_rate_limited_total counter
fleetcache_graphql_rate_limited_total{limit="query"} 0
fleetcache_graphql_rate_limited_total{limit="subscription"} 0
# HELP fleetcache_graphql_subscriptions_open Subscriptions running, by transport (websocket: graphql-transport-ws; sse: GraphQL over Server-Sent Events).
# TYPE fleetcache_graphql_subscriptions_open gauge
fleetcache_graphql_subscriptions_open{transport="sse"} 0
fleetcache_graphql_subscriptions_open{transport="websocket"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("metrics lint: %v %v", problems, err)
	}
}
