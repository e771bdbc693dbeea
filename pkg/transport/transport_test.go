package transport

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/go-chi/chi/v5"
	"github.com/google/go-cmp/cmp"

	"github.com/fleetcache/fleetcache/pkg/fanout"
	"github.com/fleetcache/fleetcache/pkg/graphql"
	"github.com/fleetcache/fleetcache/pkg/graphql/cursor"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index"
)

func TestSubscriptionsPerConnection(t *testing.T) {
	f := newFixture(t)
	s := newServer(t, f.ix, f.tracker, Options{MaxSubscriptionsPerConnection: 2})
	c := dialWS(t, serve(t, s))
	c.init()
	// Two subscriptions that stay: each replays one change, then waits.
	vars := map[string]any{"since": epochCursor(s, 0), "filter": map[string]any{"kinds": []string{"Deployment"}}}
	for _, id := range []string{"1", "2"} {
		c.subscribe(id, eventsQuery, vars)
		c.nextEvents(id, 1)
	}
	c.subscribe("3", eventsQuery, vars)
	if diff := cmp.Diff([]string{CodeTooManySubscriptions}, c.errorPayload("3")); diff != "" {
		t.Errorf("codes (-want +got):\n%s", diff)
	}
	c.alive()
	// Completing one makes room.
	c.sendJSON(map[string]any{"id": "1", "type": "complete"})
	c.subscribe("3", clustersQuery, nil)
	c.nextPayload("3")
	c.expect(msgComplete, "3")
}

func TestConnectionsPerAddress(t *testing.T) {
	f := newFixture(t)
	s := newServer(t, f.ix, f.tracker, Options{MaxConnectionsPerAddress: 2})
	endpoint := serve(t, s)
	ws := dialWS(t, endpoint)
	sse := openSSE(t, nil, endpoint, map[string]any{"query": eventsQuery})
	if sse.res.StatusCode != http.StatusOK {
		t.Fatalf("SSE status %d", sse.res.StatusCode)
	}
	waitFor(t, "two connections", func() bool { return s.conns.count("127.0.0.1") == 2 })

	// A third is refused before the upgrade, and before the stream.
	ctx, cancel := context.WithTimeout(t.Context(), wsTimeout)
	defer cancel()
	_, res, err := websocket.Dial(ctx, wsURL(endpoint), &websocket.DialOptions{Subprotocols: []string{subprotocolTransportWS}})
	if err == nil || res == nil || res.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("third WebSocket: %v, %+v; want 429", err, res)
	}
	r, body := do(t, http.MethodPost, endpoint, map[string]string{"Accept": mediaEventStream, "Content-Type": "application/json"}, `{"query":"{ clusters { name } }"}`)
	if r.Status != http.StatusTooManyRequests || len(r.Codes) != 1 || r.Codes[0] != CodeTooManyConnections {
		t.Fatalf("third SSE stream: %+v %s; want 429 %s", r, body, CodeTooManyConnections)
	}
	t.Logf("429 body: %s", body)
	// Plain HTTP requests are not connections that count.
	if r, _ := do(t, http.MethodGet, endpoint+get(clustersQuery), nil, ""); r.Status != http.StatusOK {
		t.Errorf("plain GET: %+v", r)
	}

	// Closing one frees its slot.
	_ = ws.c.Close(websocket.StatusNormalClosure, "")
	waitFor(t, "the WebSocket's slot", func() bool { return s.conns.count("127.0.0.1") == 1 })
	dialWS(t, endpoint).init()
	sse.close()
	waitFor(t, "the stream's slot", func() bool { return s.conns.count("127.0.0.1") == 1 })
	st := openSSE(t, nil, endpoint, map[string]any{"query": clustersQuery})
	st.nextPayload()
	st.expect("complete")
}

// smallBuffers serves handler with socket buffers of a few KiB, and returns
// a client whose sockets' receive buffers are as small: a client that stops
// reading holds up the server's writes after a few messages.
func smallBuffers(t testing.TB, handler http.Handler) (endpoint string, client *http.Client) {
	t.Helper()
	const size = 4 << 10
	srv := httptest.NewUnstartedServer(handler)
	srv.Listener = smallBufferListener{srv.Listener, size}
	srv.Start()
	t.Cleanup(srv.Close)
	d := &net.Dialer{}
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err == nil {
			err = c.(*net.TCPConn).SetReadBuffer(size)
		}
		return c, err
	}}
	t.Cleanup(tr.CloseIdleConnections)
	return srv.URL + "/graphql", &http.Client{Transport: tr}
}

type smallBufferListener struct {
	net.Listener
	size int
}

func (l smallBufferListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		err = c.(*net.TCPConn).SetWriteBuffer(l.size)
	}
	return c, err
}

func router(s *testServer) http.Handler {
	r := chi.NewRouter()
	r.Handle("/graphql", s)
	return r
}

// produceUntil upserts ConfigMaps cm-0000, cm-0001, … four at a time,
// each batch read by the fast subscriber before the next, until done
// holds (at most max changes). It returns the events, as "ADDED name".
func produceUntil(t *testing.T, ix *index.Index, fast *wsClient, max int, done func() bool) []string {
	t.Helper()
	var want []string
	for len(want) < max && !done() {
		for range 4 {
			name := fmt.Sprintf("cm-%04d", len(want))
			ix.Upsert(version(t, "c1", "ns", name, "1", nil))
			want = append(want, "ADDED "+name)
		}
		if events, _ := fast.nextEvents("fast", 4); !cmp.Equal(events, want[len(want)-4:]) {
			t.Fatalf("the fast subscriber got %v, want %v", events, want[len(want)-4:])
		}
	}
	if !done() {
		t.Fatalf("after %d changes, the slow subscription is still there", len(want))
	}
	return want
}

// TestWebSocketSlowConsumer: a client that stops reading is closed with
// 1013 once its subscription's buffer overflows, after the events that
// were on their way, in order; another subscriber goes on.
func TestWebSocketSlowConsumer(t *testing.T) {
	r := runSlowConsumer(t, Options{}, graphql.Options{Fanout: fanout.Options{Buffer: 8}})
	if st := websocket.CloseStatus(r.end); st != websocket.StatusTryAgainLater {
		t.Fatalf("slow client: %v, want close 1013", r.end)
	}
	// The other subscriber goes on.
	r.ix.Upsert(version(t, "c1", "ns", "after", "1", nil))
	if events, _ := r.fast.nextEvents("fast", 1); events[0] != "ADDED after" {
		t.Errorf("the fast subscriber got %v", events)
	}
}

// slowConsumer is what runSlowConsumer saw.
type slowConsumer struct {
	ix   *index.Index
	fast *wsClient
	// end is how the slow client's connection ended.
	end error
}

// runSlowConsumer serves two WebSocket clients subscribed to the same
// events, a slow one over small socket buffers, which reads nothing, and a
// fast one, and makes changes until the slow one's subscription is gone
// (produceUntil). Then the slow client reads: it must get a prefix of the
// changes, in order, before its connection ends.
func runSlowConsumer(t *testing.T, opts Options, engine graphql.Options) slowConsumer {
	t.Helper()
	ix := index.New(index.Options{})
	s := startServer(t, ix, health.NewTracker(ix, health.Options{}), opts, engine)
	endpoint, client := smallBuffers(t, router(s))
	since := map[string]any{"since": epochCursor(s, ix.Revision())}
	slow := dialWSWith(t, endpoint, &websocket.DialOptions{Subprotocols: []string{subprotocolTransportWS}, HTTPClient: client})
	slow.init()
	slow.subscribe("slow", eventsQuery, since)
	fast := dialWS(t, endpoint)
	fast.init()
	fast.subscribe("fast", eventsQuery, since)
	waitFor(t, "two subscriptions", func() bool { return s.hub.Subscribers() == 2 })

	// The slow client reads nothing while the changes come.
	want := produceUntil(t, ix, fast, 20000, func() bool { return s.hub.Subscribers() == 1 })

	// Now it reads: the events that were on their way, then the end.
	var got []string
	var end error
	for {
		m, err := slow.readErr()
		if err != nil {
			end = err
			break
		}
		if m.Type != msgNext || m.ID != "slow" {
			t.Fatalf("got %s %q", m.Type, m.ID)
		}
		e, _ := slow.payloadOf(m).event(t)
		got = append(got, e)
	}
	if len(got) == 0 || !cmp.Equal(got, want[:len(got)]) {
		t.Errorf("the slow client got %d events before the end, want a prefix of the %d changes: %v", len(got), len(want), got)
	}
	t.Logf("the slow client got %d of %d events, then %v", len(got), len(want), end)
	return slowConsumer{ix: ix, fast: fast, end: end}
}

func (c *wsClient) payloadOf(m wsIn) payload {
	c.t.Helper()
	var p payload
	if err := json.Unmarshal(m.Payload, &p); err != nil {
		c.t.Fatalf("decode payload %s: %v", m.Payload, err)
	}
	return p
}

// TestSSESlowConsumer: a stream whose client stops reading ends with a
// SLOW_CONSUMER error and no complete, so that the graphql-sse client
// retries; another subscriber goes on.
func TestSSESlowConsumer(t *testing.T) {
	ix := index.New(index.Options{})
	s := startServer(t, ix, health.NewTracker(ix, health.Options{}), Options{}, graphql.Options{Fanout: fanout.Options{Buffer: 8}})
	endpoint, client := smallBuffers(t, router(s))
	since := map[string]any{"since": epochCursor(s, ix.Revision())}
	slow := openSSE(t, client, endpoint, map[string]any{"query": eventsQuery, "variables": since})
	fast := dialWS(t, endpoint)
	fast.init()
	fast.subscribe("fast", eventsQuery, since)
	waitFor(t, "two subscriptions", func() bool { return s.hub.Subscribers() == 2 })

	want := produceUntil(t, ix, fast, 20000, func() bool { return s.hub.Subscribers() == 1 })
	var got []string
	for {
		p := slow.nextPayload()
		if len(p.Errors) > 0 {
			if diff := cmp.Diff([]string{CodeSlowConsumer}, errCodes(p.Errors)); diff != "" {
				t.Errorf("codes (-want +got):\n%s", diff)
			}
			t.Logf("after %d of %d events: %s", len(got), len(want), p.Errors[0].Message)
			break
		}
		e, _ := p.event(t)
		got = append(got, e)
	}
	slow.expectEnd()
	if len(got) == 0 || !cmp.Equal(got, want[:len(got)]) {
		t.Errorf("the slow client got %d events, want a prefix of the %d changes: %v", len(got), len(want), got)
	}
	fast.alive()
}

// TestServerStop: when Start returns, WebSockets have been closed with
// 1001 (the clients answered the close handshake) and event streams have
// ended without complete (clients reconnect and resume); no connection is
// left, and new ones get 503.
func TestServerStop(t *testing.T) {
	ix := index.New(index.Options{})
	const grace = time.Minute
	s := newServer(t, ix, health.NewTracker(ix, health.Options{}), Options{ShutdownGrace: grace})
	stop := runServer(t, s)
	endpoint := serve(t, s)
	idle := dialWS(t, endpoint)
	idle.init()
	busy := dialWS(t, endpoint)
	busy.init()
	busy.subscribe("1", eventsQuery, nil)
	st := openSSE(t, nil, endpoint, map[string]any{"query": eventsQuery})
	waitFor(t, "two subscriptions", func() bool { return s.hub.Subscribers() == 2 })

	// The clients read while the server stops, and so answer its close.
	idleClosed, busyClosed := idle.closeCode(), busy.closeCode()
	start := time.Now()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took >= grace {
		t.Errorf("Start returned after %s: the connections were dropped, not closed", took)
	}
	if n := s.conns.count("127.0.0.1"); n != 0 {
		t.Errorf("%d connections left when Start returned, want 0", n)
	}
	for name, closed := range map[string]<-chan websocket.StatusCode{"idle": idleClosed, "busy": busyClosed} {
		if code := <-closed; code != websocket.StatusGoingAway {
			t.Errorf("%s WebSocket closed with %d, want 1001", name, code)
		}
	}
	st.expectEnd()
	ctx, cancel := context.WithTimeout(t.Context(), wsTimeout)
	defer cancel()
	if _, res, err := websocket.Dial(ctx, wsURL(endpoint), &websocket.DialOptions{Subprotocols: []string{subprotocolTransportWS}}); err == nil ||
		res == nil || res.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("WebSocket after the stop: %v, %+v; want 503", err, res)
	}
}

// TestServerStopDropsSilentClients: a WebSocket client that never answers
// the close handshake is dropped after Options.ShutdownGrace, and Start
// returns with no connection left, well before the handshake's own 5s
// bound.
func TestServerStopDropsSilentClients(t *testing.T) {
	ix := index.New(index.Options{})
	s := newServer(t, ix, health.NewTracker(ix, health.Options{}), Options{ShutdownGrace: 200 * time.Millisecond})
	stop := runServer(t, s)
	endpoint := serve(t, s)
	silent := dialWS(t, endpoint)
	silent.init()
	silent.subscribe("1", eventsQuery, nil)
	waitFor(t, "the subscription", func() bool { return s.hub.Subscribers() == 1 })

	expectDropped(t, s, stop) // silent reads nothing from here on
}

// TestServerStopCutsBlockedStreams: an event stream whose client reads
// nothing, and whose write therefore blocks, is cut after
// Options.ShutdownGrace, long before its WriteTimeout.
func TestServerStopCutsBlockedStreams(t *testing.T) {
	ix := index.New(index.Options{})
	s := newServer(t, ix, health.NewTracker(ix, health.Options{}),
		Options{ShutdownGrace: 200 * time.Millisecond, WriteTimeout: time.Minute})
	stop := runServer(t, s)
	endpoint := serve(t, s)
	openSSE(t, nil, endpoint, map[string]any{"query": eventsQuery}) // never read
	waitFor(t, "the subscription", func() bool { return s.hub.Subscribers() == 1 })
	// 400 events of 64 KiB each: more than the socket buffers on both
	// sides hold.
	big := map[string]string{"big": strings.Repeat("x", 64<<10)}
	for i := range 400 {
		ix.Upsert(version(t, "c1", "ns", fmt.Sprintf("cm-%03d", i), "1", big))
	}
	// The writer is blocked once deliveries wait and stop moving.
	last, since := -1, time.Now()
	waitFor(t, "the stream's write to block", func() bool {
		n := s.hub.Queued()
		if n != last {
			last, since = n, time.Now()
		}
		return n > 0 && time.Since(since) > 300*time.Millisecond
	})

	expectDropped(t, s, stop)
}

// expectDropped stops s, whose ShutdownGrace is 200ms, with a connection
// that cannot end by itself, and checks that Start returns soon after the
// grace, with no connection left.
func expectDropped(t *testing.T, s *testServer, stop func() error) {
	t.Helper()
	start := time.Now()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("Start returned %s after its context ended, want about the grace of 200ms", took)
	}
	if n := s.conns.count("127.0.0.1"); n != 0 {
		t.Errorf("%d connections left when Start returned, want 0", n)
	}
}

// TestDroppedSubscriptions opens 1,000 subscriptions over 100 WebSockets
// and 100 more over SSE streams, drops every connection without a close
// handshake, and checks that the goroutines and the heap return to where
// they were. The first round warms up what the runtime keeps for reuse
// (goroutine descriptors, pools); the second is measured.
func TestDroppedSubscriptions(t *testing.T) {
	conns, perConn, streams := 100, 10, 100
	if testing.Short() { // make test-unit: a third of the connections and streams
		conns, streams = 30, 30
	}
	ix := index.New(index.Options{})
	for i := range 100 {
		ix.Upsert(version(t, "c1", "ns", fmt.Sprintf("cm-%03d", i), "1", map[string]string{"app": strconv.Itoa(i % perConn)}))
	}
	s := startServer(t, ix, health.NewTracker(ix, health.Options{}), Options{MaxConnectionsPerAddress: conns + streams})
	endpoint := serve(t, s)

	// round opens the subscriptions, checks they work, and drops them; it
	// returns the goroutines and heap while they ran.
	round := func(live int) (int, uint64) {
		var clients []*websocket.Conn
		var cancels []context.CancelFunc
		defer func() {
			for _, c := range clients {
				_ = c.CloseNow()
			}
			for _, cancel := range cancels {
				cancel()
			}
		}()
		for range conns {
			ctx, cancel := context.WithTimeout(t.Context(), wsTimeout)
			c, _, err := websocket.Dial(ctx, wsURL(endpoint), &websocket.DialOptions{Subprotocols: []string{subprotocolTransportWS}})
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			clients = append(clients, c)
			wc := &wsClient{t: t, c: c}
			wc.init()
			for i := range perConn {
				wc.subscribe(strconv.Itoa(i), eventsQuery, map[string]any{
					"filter": map[string]any{"labelSelector": "app=" + strconv.Itoa(i)}, "since": epochCursor(s, 0)})
			}
		}
		for range streams {
			ctx, cancel := context.WithCancel(t.Context())
			cancels = append(cancels, cancel)
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(string(mustJSON(t, map[string]any{"query": eventsQuery}))))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", mediaEventStream)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			if res.StatusCode != http.StatusOK {
				t.Fatalf("SSE status %d", res.StatusCode)
			}
		}
		waitFor(t, "every subscription", func() bool { return s.hub.Subscribers() == conns*perConn+streams })
		// Each subscription replays its 10 objects, and gets a live change.
		ix.Upsert(version(t, "c1", "ns", "cm-000", strconv.Itoa(live), map[string]string{"app": "0"}))
		want := map[string]int{"0": 11}
		for i := 1; i < perConn; i++ {
			want[strconv.Itoa(i)] = 10
		}
		for _, c := range clients {
			got := readInterleaved(t, &wsClient{t: t, c: c}, want)
			if len(got["0"]) != 11 || got["0"][10] != "MODIFIED cm-000" {
				t.Fatalf("subscription 0 got %v", got["0"])
			}
		}
		return runtime.NumGoroutine(), heapInUse()
	}

	round(2)
	waitFor(t, "the first round to end", func() bool { return s.hub.Subscribers() == 0 && s.conns.count("127.0.0.1") == 0 })
	goroutines, heap := settle(t, 0)
	t.Logf("after a first round: %d goroutines, %d KiB heap", goroutines, heap>>10)

	g, h := round(3) // drops every connection when it returns
	t.Logf("with %d subscriptions: %d goroutines, %d KiB heap", conns*perConn+streams, g, h>>10)
	waitFor(t, "every subscription to leave the hub", func() bool { return s.hub.Subscribers() == 0 })
	waitFor(t, "every connection to end", func() bool { return s.conns.count("127.0.0.1") == 0 })
	afterG, afterH := settle(t, goroutines)
	t.Logf("after the drop: %d goroutines, %d KiB heap", afterG, afterH>>10)
	if afterG > goroutines {
		t.Errorf("%d goroutines after the drop, %d before", afterG, goroutines)
	}
	if limit := heap + (h-heap)/20; afterH > limit {
		t.Errorf("heap %d KiB after the drop, %d KiB before, %d KiB with the subscriptions", afterH>>10, heap>>10, h>>10)
	}
}

// settle waits until no more than want goroutines run (want 0: until
// their number stops changing), and returns it with the heap in use.
func settle(t *testing.T, want int) (int, uint64) {
	t.Helper()
	http.DefaultClient.CloseIdleConnections()
	deadline := time.Now().Add(10 * time.Second)
	last, stable := -1, 0
	for {
		runtime.GC()
		n := runtime.NumGoroutine()
		switch {
		case want > 0 && n <= want:
			return n, heapInUse()
		case want == 0 && n == last:
			if stable++; stable == 5 {
				return n, heapInUse()
			}
		default:
			stable = 0
		}
		last = n
		if time.Now().After(deadline) {
			return n, heapInUse()
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// heapInUse returns the bytes of live heap objects, after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// FuzzDecodeMessage checks that the decoder of client messages never
// panics, accepts only the messages a client sends, and returns what the
// protocol requires of each.
func FuzzDecodeMessage(f *testing.F) {
	for _, seed := range []string{
		`{"type":"connection_init"}`,
		`{"type":"connection_init","payload":{"token":"x"}}`,
		`{"type":"ping","payload":null}`,
		`{"type":"pong"}`,
		`{"type":"subscribe","id":"1","payload":{"query":"{ clusters { name } }"}}`,
		`{"type":"subscribe","id":"a","payload":{"query":"subscription($s: String) { resourceEvents(since: $s) { type } }","variables":{"s":"x"},"operationName":null,"extensions":{}}}`,
		`{"type":"complete","id":"1"}`,
		`{"type":"next","id":"1","payload":{}}`,
		`{"type":"subscribe","id":"","payload":{"query":""}}`,
		`{"type":"subscribe","id":1,"payload":[]}`,
		`{"type":null}`,
		`[]`, `null`, `"connection_init"`, `{`, ``, "\xff",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := decodeMessage(data)
		if err != nil {
			if err.Error() == "" {
				t.Error("error without message")
			}
			return
		}
		switch m.Type {
		case msgConnectionInit, msgPing, msgPong:
			if m.Payload != nil && !isObject(m.Payload) {
				t.Errorf("%s payload %s is not an object", m.Type, m.Payload)
			}
		case msgSubscribe, msgComplete:
			if m.ID == "" || len(m.ID) > maxOperationID {
				t.Errorf("%s with id %q", m.Type, m.ID)
			}
		default:
			t.Errorf("accepted a %q message", m.Type)
		}
	})
}

// TestHeartbeats: an idle subscription's heartbeats reach the client as
// next payloads without data, carrying a cursor to resume from.
func TestHeartbeats(t *testing.T) {
	ix := index.New(index.Options{})
	s := startServer(t, ix, health.NewTracker(ix, health.Options{}), Options{}, graphql.Options{Fanout: fanout.Options{HeartbeatInterval: 20 * time.Millisecond}})
	endpoint := serve(t, s)
	ix.Upsert(version(t, "c1", "ns", "a", "1", nil))
	c := dialWS(t, endpoint)
	c.init()
	c.subscribe("1", eventsQuery, nil)
	st := openSSE(t, nil, endpoint, map[string]any{"query": eventsQuery})
	for name, p := range map[string]payload{"WebSocket": c.nextPayload("1"), "SSE": st.nextPayload()} {
		if !p.Extensions.Heartbeat || p.Data != nil || p.Errors != nil {
			t.Errorf("%s: payload %+v, want a heartbeat", name, p)
		}
		if c, err := cursor.DecodeRevision(p.Extensions.Cursor); err != nil || c.Revision != ix.Revision() {
			t.Errorf("%s: heartbeat cursor %q: %d, %v; want revision %d", name, p.Extensions.Cursor, c.Revision, err, ix.Revision())
		}
	}
}

// TestRouting: which transport serves a request at /graphql.
func TestRouting(t *testing.T) {
	f := newFixture(t)
	endpoint := serve(t, newServer(t, f.ix, f.tracker, Options{}))
	for _, tc := range []struct {
		name   string
		header map[string]string
		status int
		ct     string // the response's Content-Type, up to ";"
	}{
		{name: "JSON", header: map[string]string{"Accept": "application/json"}, status: http.StatusOK, ct: mediaJSON},
		{name: "event stream", header: map[string]string{"Accept": mediaEventStream}, status: http.StatusOK, ct: mediaEventStream},
		{name: "event stream preferred", header: map[string]string{"Accept": "application/json;q=0.5, text/event-stream"}, status: http.StatusOK, ct: mediaEventStream},
		{name: "JSON preferred", header: map[string]string{"Accept": "application/json, text/event-stream;q=0.5"}, status: http.StatusOK, ct: mediaJSON},
		{name: "any", header: map[string]string{"Accept": "*/*"}, status: http.StatusOK, ct: mediaJSON},
		{name: "browser", header: map[string]string{"Accept": browser}, status: http.StatusOK, ct: mediaHTML},
		// An upgrade goes to the WebSocket handshake, which wants its
		// headers.
		{name: "WebSocket upgrade", header: map[string]string{"Connection": "keep-alive, Upgrade", "Upgrade": "websocket"}, status: http.StatusBadRequest, ct: "text/plain"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, body := do(t, http.MethodGet, endpoint+get(clustersQuery), tc.header, "")
			if ct, _, _ := strings.Cut(r.ContentType, ";"); r.Status != tc.status || ct != tc.ct {
				t.Errorf("status %d, Content-Type %q, want %d %s; body %.200s", r.Status, r.ContentType, tc.status, tc.ct, body)
			}
		})
	}
}
