package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http/httptest"
	"os"
	"runtime/debug"
	"sync"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"

	"github.com/fleetcache/fleetcache/internal/helperproc"
	"github.com/fleetcache/fleetcache/internal/procmem"
	"github.com/fleetcache/fleetcache/pkg/graphql"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index"
)

// wsClientsEnv, set in the environment of this package's test binary, makes
// it a process of idle WebSocket clients instead (see runWSClients), before
// TestMain starts any cluster. Its value is a wsClients in JSON.
const wsClientsEnv = "FLEETCACHE_WS_CLIENTS"

// wsClients is what a client process is asked to open.
type wsClients struct {
	URL         string `json:"url"`
	Connections int    `json:"connections"`
	PerConn     int    `json:"perConn"` // subscriptions per connection
}

func init() { helperproc.Serve(wsClientsEnv, runWSClients) }

// runWSClients opens the connections, each with its subscriptions (each
// its own filter, namespace ns-i for subscription i), prints "ready", and
// keeps them open, answering pings, until its standard input closes.
func runWSClients(p wsClients) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
		wg.Wait()
	}()
	for i := range p.Connections {
		conn, br, _, err := ws.Dialer{Protocols: []string{subprotocolTransportWS}}.Dial(ctx, wsURL(p.URL))
		if err != nil {
			return fmt.Errorf("dial connection %d: %w", i, err)
		}
		conns = append(conns, conn)
		rw := struct {
			io.Reader
			io.Writer
		}{conn, conn}
		if br != nil { // the server's first frames came with the handshake
			rw.Reader = io.MultiReader(br, conn)
		}
		if err := wsutil.WriteClientText(conn, []byte(`{"type":"connection_init"}`)); err != nil {
			return fmt.Errorf("connection %d: init: %w", i, err)
		}
		if msg, err := wsutil.ReadServerText(rw); err != nil || !bytes.Equal(msg, []byte(`{"type":"connection_ack"}`)) {
			return fmt.Errorf("connection %d: got %s, %v; want connection_ack", i, msg, err)
		}
		for k := range p.PerConn {
			vars := map[string]any{"f": map[string]any{"namespaces": []any{fmt.Sprintf("ns-%d", i*p.PerConn+k)}}}
			msg, _ := json.Marshal(map[string]any{"id": fmt.Sprint(k), "type": "subscribe", "payload": map[string]any{"query": benchQuery, "variables": vars}})
			if err := wsutil.WriteClientText(conn, msg); err != nil {
				return fmt.Errorf("connection %d: subscribe: %w", i, err)
			}
		}
		// ReadServerData answers pings; nothing else comes while idle
		// but heartbeats.
		wg.Go(func() {
			for {
				if _, _, err := wsutil.ReadServerData(rw); err != nil {
					return
				}
			}
		})
	}
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	return nil
}

// startWSClients starts a process of idle clients and waits until they
// have subscribed. Closing its standard input (the returned function)
// stops it.
func startWSClients(b *testing.B, p wsClients) (stop func()) {
	b.Helper()
	proc := helperproc.Start(context.Background(), b, wsClientsEnv, p)
	stop = func() { proc.Wait(b) }
	if line := proc.Line(b, "the clients' subscriptions"); line != "ready" {
		stop()
		b.Fatalf("websocket clients: got %q; want ready", line)
	}
	return stop
}

// BenchmarkIdleSubscriptionMemoryWebSocket measures what an idle
// resourceEvents subscription costs the server over WebSocket, transport
// included (each connection's reader and writer, its buffers, each
// subscription's operation goroutine): the heap and goroutine stacks, from
// runtime.MemStats after GC, and the RSS (from what is live before, to
// what it is after, at the collector's default settings), before and
// after the subscriptions are opened, divided by their number. The clients run in a
// process of their own, so that none of their memory is counted; each
// subscription has its own filter. Kernel socket buffers are not in either
// process's figures.
func BenchmarkIdleSubscriptionMemoryWebSocket(b *testing.B) {
	const n = 10000
	for _, perConn := range []int{1, 100} {
		conns := n / perConn
		b.Run(fmt.Sprintf("subscriptions=%d/per-connection=%d", n, perConn), func(b *testing.B) {
			var perSub, rssPerSub, perConnBytes float64
			for b.Loop() {
				ix := index.New(index.Options{})
				s := startServer(b, ix, health.NewTracker(ix, health.Options{}), Options{MaxConnectionsPerAddress: conns + 1})
				srv := httptest.NewServer(s)
				// Warm the document cache and the schema.
				if sub, res := s.engine.Subscribe(b.Context(), graphql.Request{Query: benchQuery}); sub != nil {
					sub.Close()
				} else {
					b.Fatalf("Subscribe: %+v", res)
				}
				before := memory()
				// Return what earlier runs freed, so that the RSS
				// counts from what is live.
				debug.FreeOSMemory()
				rssBefore, err := procmem.Read()
				if err != nil {
					b.Fatal(err)
				}
				stop := startWSClients(b, wsClients{URL: srv.URL, Connections: conns, PerConn: perConn})
				for deadline := time.Now().Add(time.Minute); s.hub.Subscribers() < n; time.Sleep(10 * time.Millisecond) {
					if time.Now().After(deadline) {
						b.Fatalf("%d of %d subscriptions after a minute", s.hub.Subscribers(), n)
					}
				}
				time.Sleep(200 * time.Millisecond) // let the connections' goroutines block
				after := memory()
				rssAfter, err := procmem.Read()
				if err != nil {
					b.Fatal(err)
				}
				perSub = float64(after.Total()-before.Total()) / n
				perConnBytes = float64(after.Total()-before.Total()) / float64(conns)
				rssPerSub = (float64(rssAfter.RSS) - float64(rssBefore.RSS)) / n
				b.Logf("heap %+d B, stacks %+d B, RSS %+d B over %d connections of %d subscriptions",
					int64(after.Heap)-int64(before.Heap), int64(after.Stack)-int64(before.Stack), int64(rssAfter.RSS)-int64(rssBefore.RSS), conns, perConn)
				stop()
				srv.Close()
			}
			b.ReportMetric(perSub, "B/subscription")
			b.ReportMetric(perConnBytes, "B/connection")
			b.ReportMetric(rssPerSub, "rss-B/subscription")
		})
	}
}
