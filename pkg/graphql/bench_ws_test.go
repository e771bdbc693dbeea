package graphql

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index"
)

// BenchmarkFanoutLatencyWebSocket measures what a client sees: the time
// from the start of an index apply to a graphql-transport-ws client (a Go
// client on loopback, one connection per subscriber, on the same 2 cores as
// the server) having read the event and its cursor, at 1,000 changes/s.
// Each client checks that it got exactly the revisions its filter selects,
// in order. Subscribers that fall behind are closed with 1013 and counted.
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
				// Change k (from 1) is revision base+k, of an object in
				// namespace ns-(k%100).
				want, step := changes, uint64(1)
				first := func(int) uint64 { return f.base + 1 }
				if tc.match != "all" {
					want, step = changes/100, 100
					first = func(i int) uint64 { return f.base + uint64((i+99)%100+1) }
				}
				var mu sync.Mutex
				var wg sync.WaitGroup
				for i, c := range clients {
					wg.Go(func() {
						l := new(latencies)
						defer func() { mu.Lock(); total.merge(l); mu.Unlock() }()
						next := first(i)
						var buf bytes.Buffer
						for got := 0; got < want; {
							msg, err := readInto(c.c, &buf)
							if err != nil {
								mu.Lock()
								closed++
								mu.Unlock()
								return
							}
							cursor, ok := nextCursor(msg)
							if !ok {
								if bytes.Equal(msg, []byte(`{"type":"ping"}`)) {
									c.send(`{"type":"pong"}`)
								}
								continue // a heartbeat
							}
							_, r, err := CursorRevision(cursor)
							if err != nil {
								b.Error(err)
								return
							}
							if r != next {
								b.Errorf("subscriber %d got revision %d, want %d", i, r, next)
								return
							}
							next += step
							l.add(f.latency(r))
							got++
						}
					})
				}
				f.write(objs, changes, rate, nil)
				// The clients read without a deadline, which costs them
				// a timer per message: a stuck one is cut here instead.
				done := make(chan struct{})
				go func() { wg.Wait(); close(done) }()
				select {
				case <-done:
				case <-time.After(time.Minute):
					for _, c := range clients {
						_ = c.c.CloseNow()
					}
					<-done
				}
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

// readInto reads the next message into buf, without a deadline.
func readInto(c *websocket.Conn, buf *bytes.Buffer) ([]byte, error) {
	_, r, err := c.Reader(context.Background())
	if err != nil {
		return nil, err
	}
	buf.Reset()
	if _, err := buf.ReadFrom(r); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// nextCursor returns the cursor of a resourceEvents next message, read from
// its end (…"extensions":{"cursor":"<cursor>"}}}) without decoding it, as
// a client that keeps up with a million messages a second on shared cores
// must. ok is false for other messages, heartbeats among them (their
// extensions hold "heartbeat" after "cursor"). TestNextCursor checks the
// shape against what the server sends.
func nextCursor(msg []byte) (cursor string, ok bool) {
	const key, end = `"extensions":{"cursor":"`, `"}}}`
	body, ok := bytes.CutSuffix(msg, []byte(end))
	if !ok {
		return "", false
	}
	i := bytes.LastIndex(body, []byte(key))
	if i < 0 || bytes.IndexByte(body[i+len(key):], '"') >= 0 {
		return "", false
	}
	return string(body[i+len(key):]), true
}

// TestNextCursor: nextCursor finds the cursor of the benchmark's events
// as a full decoding does, and skips heartbeats and other messages.
func TestNextCursor(t *testing.T) {
	ix := index.New(index.Options{})
	s := startServer(t, ix, health.NewTracker(ix, health.Options{}), Options{HeartbeatInterval: 50 * time.Millisecond})
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	c := dialWS(t, srv.URL)
	c.init()
	c.subscribe("1", benchQuery, map[string]any{"f": map[string]any{"clusters": []any{"c1"}}})
	waitFor(t, "the subscription", func() bool { return s.hub.members() == 1 })
	ix.Upsert(version(t, "c1", "ns", "cm", "1", nil))
	var events, heartbeats int
	for events == 0 || heartbeats == 0 {
		raw, err := c.readRaw()
		if err != nil {
			t.Fatal(err)
		}
		var m wsIn
		var p payload
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("decode %s: %v", raw, err)
		}
		if m.Type == msgNext {
			if err := json.Unmarshal(m.Payload, &p); err != nil {
				t.Fatalf("decode %s: %v", m.Payload, err)
			}
		}
		cursor, ok := nextCursor(raw)
		switch {
		case m.Type == msgNext && !p.Extensions.Heartbeat:
			events++
			if !ok || cursor != p.Extensions.Cursor {
				t.Errorf("nextCursor(%s) = %q, %t; want %q", raw, cursor, ok, p.Extensions.Cursor)
			}
		default:
			if m.Type == msgNext {
				heartbeats++
			}
			if ok {
				t.Errorf("nextCursor(%s) = %q, want none", raw, cursor)
			}
		}
	}
	for _, msg := range []string{`{"type":"ping"}`, `{"id":"1","type":"complete"}`, `"}}}`, `{"extensions":{"cursor":"a"b"}}}`} {
		if cursor, ok := nextCursor([]byte(msg)); ok {
			t.Errorf("nextCursor(%s) = %q, want none", msg, cursor)
		}
	}
}
