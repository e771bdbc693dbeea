package transport

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"

	"github.com/fleetcache/fleetcache/internal/graphqltest"
	"github.com/fleetcache/fleetcache/pkg/fanout"
	"github.com/fleetcache/fleetcache/pkg/graphql"
	"github.com/fleetcache/fleetcache/pkg/graphql/cursor"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index"
)

// BenchmarkFanoutLatencyWebSocket measures what a client sees: the time
// from the start of an index apply to a graphql-transport-ws client (a Go
// client on loopback, on the same 2 cores as the server) having read the
// event, at 1,000 changes/s. Each subscriber has a connection of its own,
// except at 10,000, which are 100 connections of 100 subscriptions (a
// process has too few file descriptors for 10,000 connections at both
// ends). Each client checks that every subscription got exactly the
// revisions its filter selects, in order. Subscribers that fall behind are
// closed with 1013 and counted.
func BenchmarkFanoutLatencyWebSocket(b *testing.B) {
	const rate, changes = 1000, 1000
	for _, tc := range []struct {
		match      string
		n, perConn int
	}{{"all", 1, 1}, {"all", 100, 1}, {"all", 1000, 1}, {"1%", 1000, 1}, {"1%", 10000, 100}} {
		b.Run(fmt.Sprintf("match=%s/subscribers=%d", tc.match, tc.n), func(b *testing.B) {
			objs := benchObjects(b)
			var total latencies
			closed := 0
			for b.Loop() {
				f := newBenchFleet(b, Options{MaxConnectionsPerAddress: 2 * tc.n / tc.perConn}, changes)
				srv := httptest.NewServer(f.s)
				// Subscriber i is subscription i%perConn of client
				// i/perConn, its id the decimal i%perConn.
				clients := make([]*leanClient, tc.n/tc.perConn)
				for i := range tc.n {
					vars := map[string]any{"f": map[string]any{"clusters": []any{"c1"}}}
					if tc.match != "all" {
						vars = map[string]any{"f": map[string]any{"namespaces": []any{fmt.Sprintf("ns-%d", i%100)}}}
					}
					if i%tc.perConn == 0 {
						clients[i/tc.perConn] = dialLean(b, srv.URL)
					}
					clients[i/tc.perConn].subscribe(fmt.Sprint(i%tc.perConn), benchQuery, vars)
				}
				// How the event of each revision ends, to compare each
				// message with, bytes to bytes.
				epoch := f.Index.Epoch()
				ends := make([][]byte, changes+101)
				for k := range ends {
					ends[k] = eventEnd(cursor.EncodeRevision(cursor.Revision{Epoch: epoch, Revision: f.Base + uint64(k)}))
				}
				for f.s.hub.Subscribers() < tc.n {
					time.Sleep(time.Millisecond)
				}
				// Change k (from 1) is revision base+k, of an object in
				// namespace ns-(k%100).
				want, step := changes, uint64(1)
				first := func(int) uint64 { return f.Base + 1 }
				if tc.match != "all" {
					want, step = changes/100, 100
					first = func(i int) uint64 { return f.Base + uint64((i+99)%100+1) }
				}
				var mu sync.Mutex
				var wg sync.WaitGroup
				for ci, c := range clients {
					wg.Go(func() {
						l := new(latencies)
						defer func() { mu.Lock(); total.Merge(l); mu.Unlock() }()
						next := make([]uint64, tc.perConn) // by subscription
						for k := range next {
							next[k] = first(ci*tc.perConn + k)
						}
						for got := 0; got < want*tc.perConn; {
							msg, err := c.read()
							if err != nil {
								mu.Lock()
								closed++
								mu.Unlock()
								return
							}
							switch k, ok := messageID(msg); {
							case isHeartbeat(msg):
							case bytes.Equal(msg, []byte(`{"type":"ping"}`)):
								c.send(`{"type":"pong"}`)
							case ok && k < tc.perConn && bytes.HasSuffix(msg, ends[next[k]-f.Base]):
								l.Add(f.Latency(next[k]))
								next[k] += step
								got++
							default:
								b.Errorf("client %d got %s, want the events of revisions %v", ci, msg, next)
								return
							}
						}
					})
				}
				f.Write(objs, changes, rate, nil)
				// The clients read without a deadline, which costs them
				// a timer per message: a stuck one is cut here instead.
				done := make(chan struct{})
				go func() { wg.Wait(); close(done) }()
				select {
				case <-done:
				case <-time.After(time.Minute):
					for _, c := range clients {
						_ = c.conn.Close()
					}
					<-done
				}
				for _, c := range clients {
					_ = c.conn.Close()
				}
				srv.Close()
			}
			b.ReportMetric(float64(total.Quantile(0.5))/1e6, "p50-ms")
			b.ReportMetric(float64(total.Quantile(0.99))/1e6, "p99-ms")
			b.ReportMetric(float64(total.Quantile(1))/1e6, "max-ms")
			b.ReportMetric(float64(closed), "closed-1013")
		})
	}
}

// messageID returns the id of a next message whose id is a small decimal
// number, as the benchmark's are.
func messageID(msg []byte) (int, bool) {
	rest, ok := bytes.CutPrefix(msg, []byte(`{"id":"`))
	if !ok {
		return 0, false
	}
	n, digits := 0, 0
	for ; digits < len(rest) && digits < 6 && rest[digits] >= '0' && rest[digits] <= '9'; digits++ {
		n = n*10 + int(rest[digits]-'0')
	}
	return n, digits > 0 && digits < len(rest) && rest[digits] == '"'
}

// eventEnd returns how the next message of the resourceEvents event with
// the given cursor ends, as the server encodes it; the benchmark's clients
// compare the end of each message with it rather than decode a million
// messages a second on the server's cores. TestEventEnd checks the shape.
func eventEnd(cursor string) []byte {
	return []byte(`"extensions":{"cursor":"` + cursor + `"}}}`)
}

// isHeartbeat reports whether msg is a resourceEvents heartbeat.
func isHeartbeat(msg []byte) bool {
	return bytes.HasSuffix(msg, []byte(`,"heartbeat":true}}}`))
}

// TestEventEnd: the benchmark's clients tell events (by eventEnd) and
// heartbeats (isHeartbeat) as a full decoding does.
func TestEventEnd(t *testing.T) {
	ix := index.New(index.Options{})
	s := startServer(t, ix, health.NewTracker(ix, health.Options{}), Options{}, graphql.Options{Fanout: fanout.Options{HeartbeatInterval: 50 * time.Millisecond}})
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	c := dialLean(t, srv.URL)
	c.subscribe("1", benchQuery, map[string]any{"f": map[string]any{"clusters": []any{"c1"}}})
	waitFor(t, "the subscription", func() bool { return s.hub.Subscribers() == 1 })
	ix.Upsert(version(t, "c1", "ns", "cm", "1", nil))
	var events, heartbeats int
	for events == 0 || heartbeats == 0 {
		raw, err := c.read()
		if err != nil {
			t.Fatal(err)
		}
		var m wsIn
		var p payload
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("decode %s: %v", raw, err)
		}
		if m.Type != msgNext {
			t.Fatalf("got %s, want next messages", raw)
		}
		if err := json.Unmarshal(m.Payload, &p); err != nil {
			t.Fatalf("decode %s: %v", m.Payload, err)
		}
		if p.Extensions.Heartbeat {
			heartbeats++
		} else {
			events++
		}
		if got := bytes.HasSuffix(raw, eventEnd(p.Extensions.Cursor)); got == p.Extensions.Heartbeat {
			t.Errorf("%s ends as an event: %t", raw, got)
		}
		if got := isHeartbeat(raw); got != p.Extensions.Heartbeat {
			t.Errorf("isHeartbeat(%s) = %t", raw, got)
		}
	}
	for _, msg := range []string{`{"type":"ping"}`, `{"id":"1","type":"complete"}`, `"heartbeat":true}}}`} {
		if isHeartbeat([]byte(msg)) {
			t.Errorf("isHeartbeat(%s) = true", msg)
		}
	}
}

// leanClient is the benchmark's graphql-transport-ws client: gobwas/ws
// frames, read from a buffer with no lock or allocation per message, so
// that the clients, which share the server's cores, take as little of
// them as a client can.
type leanClient struct {
	tb   testing.TB
	conn net.Conn
	r    *bufio.Reader
	buf  []byte
	hdr  [ws.MaxHeaderSize - 2]byte
	// pongs are the payloads of the pongs read.
	pongs []string
}

// errCloseFrame is read's error for a close frame.
var errCloseFrame = errors.New("close frame")

// dialLean connects, initialises and waits for the ack.
func dialLean(tb testing.TB, endpoint string) *leanClient {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wsTimeout)
	defer cancel()
	conn, br, _, err := ws.Dialer{Protocols: []string{subprotocolTransportWS}}.Dial(ctx, wsURL(endpoint))
	if err != nil {
		tb.Fatalf("dial %s: %v", endpoint, err)
	}
	if br == nil {
		br = bufio.NewReaderSize(conn, 32<<10)
	}
	c := &leanClient{tb: tb, conn: conn, r: br}
	tb.Cleanup(func() { _ = conn.Close() })
	c.send(`{"type":"connection_init"}`)
	if msg, err := c.read(); err != nil || !bytes.Equal(msg, []byte(`{"type":"connection_ack"}`)) {
		tb.Fatalf("connection_init: got %s, %v; want connection_ack", msg, err)
	}
	return c
}

// subscribe sends a subscribe message.
func (c *leanClient) subscribe(id, query string, vars map[string]any) {
	c.send(string(mustJSON(c.tb, map[string]any{"id": id, "type": "subscribe", "payload": map[string]any{"query": query, "variables": vars}})))
}

func (c *leanClient) send(msg string) {
	if err := wsutil.WriteClientText(c.conn, []byte(msg)); err != nil {
		c.tb.Errorf("send %s: %v", msg, err)
	}
}

// read returns the next text message, valid until the next read. It
// records pongs, skips other control frames, and fails with errCloseFrame
// on a close frame.
func (c *leanClient) read() ([]byte, error) {
	for {
		op, p, err := c.readFrame()
		switch {
		case err != nil:
			return nil, err
		case op == ws.OpClose:
			return nil, fmt.Errorf("%w: %q", errCloseFrame, p)
		case op == ws.OpText:
			return p, nil
		}
	}
}

// readFrame reads the next frame: a control frame, or a whole text
// message; pongs are recorded. The payload is valid until the next read.
func (c *leanClient) readFrame() (ws.OpCode, []byte, error) {
	h, err := ws.ReadHeaderBuffer(c.r, c.hdr[:])
	if err != nil {
		return 0, nil, err
	}
	if h.Length > 1<<20 {
		return 0, nil, fmt.Errorf("frame of %d bytes", h.Length)
	}
	if int64(cap(c.buf)) < h.Length {
		c.buf = make([]byte, h.Length)
	}
	p := c.buf[:h.Length]
	if _, err := io.ReadFull(c.r, p); err != nil {
		return 0, nil, err
	}
	switch {
	case h.OpCode == ws.OpPong:
		c.pongs = append(c.pongs, string(p))
	case h.OpCode.IsControl():
	case h.OpCode != ws.OpText || !h.Fin || h.Masked:
		return 0, nil, fmt.Errorf("unexpected frame %+v", h)
	}
	return h.OpCode, p, nil
}

// benchFleet is an index with a started engine and transport over it and
// a writer that upserts synthetic ConfigMaps.
type benchFleet struct {
	*graphqltest.Writer
	s *testServer
}

func newBenchFleet(b *testing.B, opts Options, changes int) *benchFleet {
	ix := index.New(index.Options{})
	s := startServer(b, ix, health.NewTracker(ix, health.Options{}), opts)
	return &benchFleet{Writer: graphqltest.NewWriter(ix, changes), s: s}
}
