package graphql

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// BenchmarkFanoutLatencyWebSocket measures what a client sees: the time
// from the start of an index apply to a graphql-transport-ws client (a Go
// client on loopback, one connection per subscriber, on the same 2 cores as
// the server) having read and decoded the event, at 1,000 changes/s.
// Subscribers that fall behind are closed with 1013 and counted.
func BenchmarkFanoutLatencyWebSocket(b *testing.B) {
	const rate, changes = 1000, 1000
	for _, tc := range []struct {
		match string
		n     int
	}{{"all", 1}, {"all", 100}, {"all", 1000}, {"1%", 1000}} {
		b.Run(fmt.Sprintf("match=%s/subscribers=%d", tc.match, tc.n), func(b *testing.B) {
			objs := benchObjects(b)
			var total latencies
			closed := 0
			for b.Loop() {
				f := newBenchFleet(b, Options{MaxConnectionsPerAddress: 2 * tc.n}, changes)
				srv := httptest.NewServer(f.s)
				clients := make([]*wsClient, tc.n)
				for i := range clients {
					clients[i] = dialWS(b, srv.URL)
					clients[i].init()
					vars := map[string]any{"f": map[string]any{"clusters": []any{"c1"}}}
					if tc.match != "all" {
						vars = map[string]any{"f": map[string]any{"namespaces": []any{fmt.Sprintf("ns-%d", i%100)}}}
					}
					clients[i].subscribe("1", benchQuery, vars)
				}
				for f.s.hub.members() < tc.n {
					time.Sleep(time.Millisecond)
				}
				want := changes
				if tc.match != "all" {
					want = changes / 100
				}
				var mu sync.Mutex
				var wg sync.WaitGroup
				for _, c := range clients {
					wg.Go(func() {
						l := new(latencies)
						defer func() { mu.Lock(); total.merge(l); mu.Unlock() }()
						for got := 0; got < want; {
							m, err := c.readErr()
							if err != nil {
								mu.Lock()
								closed++
								mu.Unlock()
								return
							}
							if m.Type == msgPing {
								c.send(`{"type":"pong"}`)
								continue
							}
							var p struct {
								Extensions struct {
									Cursor    string
									Heartbeat bool
								}
							}
							if m.Type != "next" || json.Unmarshal(m.Payload, &p) != nil || p.Extensions.Heartbeat {
								continue
							}
							_, r, err := CursorRevision(p.Extensions.Cursor)
							if err != nil {
								b.Error(err)
								return
							}
							l.add(f.latency(r))
							got++
						}
					})
				}
				f.write(objs, changes, rate, nil)
				wg.Wait()
				for _, c := range clients {
					_ = c.c.CloseNow()
				}
				srv.Close()
			}
			b.ReportMetric(float64(total.quantile(0.5))/1e6, "p50-ms")
			b.ReportMetric(float64(total.quantile(0.99))/1e6, "p99-ms")
			b.ReportMetric(float64(total.quantile(1))/1e6, "max-ms")
			b.ReportMetric(float64(closed), "closed-1013")
		})
	}
}
