package transport

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/go-cmp/cmp"

	"github.com/fleetcache/fleetcache/pkg/fanout"
	"github.com/fleetcache/fleetcache/pkg/graphql"
	"github.com/fleetcache/fleetcache/pkg/graphql/cursor"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index"
)

// wsTimeout bounds each read and write of the test clients.
const wsTimeout = 10 * time.Second

// wsClient is a graphql-transport-ws client for tests, written against the
// protocol with a coder/websocket connection.
type wsClient struct {
	t testing.TB
	c *websocket.Conn
}

// wsIn is a message from the server.
type wsIn struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

func wsURL(endpoint string) string { return "ws" + strings.TrimPrefix(endpoint, "http") }

// dialWS connects to endpoint with the graphql-transport-ws subprotocol.
func dialWS(t testing.TB, endpoint string) *wsClient {
	t.Helper()
	return dialWSWith(t, endpoint, &websocket.DialOptions{Subprotocols: []string{subprotocolTransportWS}})
}

func dialWSWith(t testing.TB, endpoint string, opts *websocket.DialOptions) *wsClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wsTimeout)
	defer cancel()
	c, _, err := websocket.Dial(ctx, wsURL(endpoint), opts)
	if err != nil {
		t.Fatalf("dial %s: %v", endpoint, err)
	}
	c.SetReadLimit(-1)
	t.Cleanup(func() { _ = c.CloseNow() })
	return &wsClient{t: t, c: c}
}

// with returns the client reporting to t, for subtests.
func (c *wsClient) with(t testing.TB) *wsClient { return &wsClient{t: t, c: c.c} }

func (c *wsClient) send(msg string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wsTimeout)
	defer cancel()
	if err := c.c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
		c.t.Fatalf("send %s: %v", msg, err)
	}
}

func (c *wsClient) sendJSON(v any) { c.t.Helper(); c.send(string(mustJSON(c.t, v))) }

// subscribe sends a subscribe message.
func (c *wsClient) subscribe(id, query string, vars map[string]any) {
	c.t.Helper()
	c.sendJSON(map[string]any{"id": id, "type": "subscribe", "payload": map[string]any{"query": query, "variables": vars}})
}

// readRaw reads the next message, undecoded.
func (c *wsClient) readRaw() ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), wsTimeout)
	defer cancel()
	_, b, err := c.c.Read(ctx)
	return b, err
}

// readErr reads the next message.
func (c *wsClient) readErr() (wsIn, error) {
	b, err := c.readRaw()
	if err != nil {
		return wsIn{}, err
	}
	var m wsIn
	if err := json.Unmarshal(b, &m); err != nil {
		return wsIn{}, fmt.Errorf("decode %s: %w", b, err)
	}
	return m, nil
}

// read reads the next message, which must come; server pings are answered
// and skipped.
func (c *wsClient) read() wsIn {
	c.t.Helper()
	for {
		m, err := c.readErr()
		if err != nil {
			c.t.Fatalf("read: %v", err)
		}
		if m.Type == msgPing {
			c.send(`{"type":"pong"}`)
			continue
		}
		return m
	}
}

// expect reads the next message and checks its type and id.
func (c *wsClient) expect(typ, id string) wsIn {
	c.t.Helper()
	m := c.read()
	if m.Type != typ || m.ID != id {
		c.t.Fatalf("got %s %q (payload %s), want %s %q", m.Type, m.ID, m.Payload, typ, id)
	}
	return m
}

// init sends connection_init and waits for connection_ack.
func (c *wsClient) init() {
	c.t.Helper()
	c.send(`{"type":"connection_init"}`)
	c.expect(msgConnectionAck, "")
}

// alive checks that the connection still answers a ping, and that no other
// message came before the pong.
func (c *wsClient) alive() {
	c.t.Helper()
	c.send(`{"type":"ping","payload":{"probe":true}}`)
	m := c.expect(msgPong, "")
	if string(m.Payload) != `{"probe":true}` {
		c.t.Fatalf("pong payload = %s", m.Payload)
	}
}

// expectClose reads until the connection closes and checks the close code;
// it returns the reason.
func (c *wsClient) expectClose(code websocket.StatusCode) string {
	c.t.Helper()
	for {
		m, err := c.readErr()
		if err == nil {
			if m.Type == msgPing {
				continue
			}
			c.t.Logf("message before the close: %s %q %s", m.Type, m.ID, m.Payload)
			continue
		}
		var ce websocket.CloseError
		if !errors.As(err, &ce) {
			c.t.Fatalf("connection ended with %v, want close code %d", err, code)
		}
		if ce.Code != code {
			c.t.Fatalf("close code %d (%q), want %d", ce.Code, ce.Reason, code)
		}
		return ce.Reason
	}
}

// closeCode reads, in a goroutine, until the connection ends, and sends
// its close code (-1 if it ended without a close frame). Until then, the
// client is not to be used.
func (c *wsClient) closeCode() <-chan websocket.StatusCode {
	out := make(chan websocket.StatusCode, 1)
	go func() {
		for {
			if _, err := c.readRaw(); err != nil {
				out <- websocket.CloseStatus(err)
				return
			}
		}
	}()
	return out
}

// payload is a next message's payload.
type payload struct {
	Data       json.RawMessage
	Errors     []gqlErr
	Extensions struct {
		Cursor    string
		Heartbeat bool
	}
}

type gqlErr struct {
	Message    string
	Extensions struct{ Code string }
}

func errCodes(errs []gqlErr) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Extensions.Code)
	}
	return out
}

// nextPayload reads a next message for id.
func (c *wsClient) nextPayload(id string) payload {
	c.t.Helper()
	m := c.expect(msgNext, id)
	var p payload
	if err := json.Unmarshal(m.Payload, &p); err != nil {
		c.t.Fatalf("decode payload %s: %v", m.Payload, err)
	}
	return p
}

// event is a resourceEvents payload, as "TYPE name".
func (p payload) event(t testing.TB) (string, string) {
	t.Helper()
	if len(p.Errors) > 0 {
		t.Fatalf("payload has errors: %+v", p.Errors)
	}
	var d struct {
		ResourceEvents struct {
			Type, Cursor string
			Resource     struct{ Name string }
		}
	}
	if err := json.Unmarshal(p.Data, &d); err != nil {
		t.Fatalf("decode %s: %v", p.Data, err)
	}
	return d.ResourceEvents.Type + " " + d.ResourceEvents.Resource.Name, d.ResourceEvents.Cursor
}

// nextEvents reads n resourceEvents payloads of id, skipping heartbeats.
func (c *wsClient) nextEvents(id string, n int) (events, cursors []string) {
	c.t.Helper()
	for len(events) < n {
		p := c.nextPayload(id)
		if p.Extensions.Heartbeat {
			continue
		}
		e, cur := p.event(c.t)
		events, cursors = append(events, e), append(cursors, cur)
	}
	return events, cursors
}

// errorPayload reads an error message for id and returns its codes.
func (c *wsClient) errorPayload(id string) []string {
	c.t.Helper()
	m := c.expect(msgError, id)
	var errs []gqlErr
	if err := json.Unmarshal(m.Payload, &errs); err != nil {
		c.t.Fatalf("decode error payload %s: %v", m.Payload, err)
	}
	if len(errs) == 0 {
		c.t.Fatal("error message without errors")
	}
	for _, e := range errs {
		if e.Message == "" {
			c.t.Errorf("error without message: %+v", e)
		}
	}
	return errCodes(errs)
}

func TestWebSocketCloseCodes(t *testing.T) {
	f := newFixture(t)
	// A subscription that replays the fixture's first change, then waits.
	sub := func(id string) string {
		return string(mustJSON(t, map[string]any{"id": id, "type": "subscribe", "payload": map[string]any{
			"query":     `subscription($since: String) { resourceEvents(since: $since, filter: {kinds: ["Deployment"]}) { type } }`,
			"variables": map[string]any{"since": cursor.EncodeRevision(cursor.Revision{Epoch: f.ix.Epoch(), Revision: 0})},
		}}))
	}
	for _, tc := range []struct {
		name      string
		opts      Options
		protocols []string // default graphql-transport-ws
		noInit    bool     // do not start with connection_init
		send      []string
		await     string // then wait for a next message of this id
		send2     []string
		code      websocket.StatusCode
		reason    string // a part of it
	}{
		{name: "malformed JSON", send: []string{`{"type":`}, code: 4400, reason: "not a JSON object"},
		{name: "not an object", send: []string{`["connection_init"]`}, code: 4400, reason: "not a JSON object"},
		{name: "no type", send: []string{`{"id":"1"}`}, code: 4400, reason: "no type"},
		{name: "type not a string", send: []string{`{"type":1}`}, code: 4400, reason: "not a string"},
		{name: "unknown type", send: []string{`{"type":"start","id":"1","payload":{}}`}, code: 4400, reason: `unknown message type "start"`},
		{name: "server message", send: []string{`{"type":"next","id":"1","payload":{}}`}, code: 4400, reason: "only servers send it"},
		{name: "subscribe without id", send: []string{`{"type":"subscribe","payload":{"query":"{ clusters { name } }"}}`}, code: 4400, reason: "no id"},
		{name: "subscribe with empty id", send: []string{`{"type":"subscribe","id":"","payload":{"query":"{ clusters { name } }"}}`}, code: 4400, reason: "id is empty"},
		{name: "subscribe id not a string", send: []string{`{"type":"subscribe","id":1,"payload":{"query":"{ clusters { name } }"}}`}, code: 4400, reason: "not a string"},
		{name: "subscribe without payload", send: []string{`{"type":"subscribe","id":"1"}`}, code: 4400, reason: "payload is not an object"},
		{name: "subscribe payload not an object", send: []string{`{"type":"subscribe","id":"1","payload":"{ clusters { name } }"}`}, code: 4400, reason: "payload is not an object"},
		{name: "subscribe without query", send: []string{`{"type":"subscribe","id":"1","payload":{}}`}, code: 4400, reason: "no query"},
		{name: "subscribe query not a string", send: []string{`{"type":"subscribe","id":"1","payload":{"query":1}}`}, code: 4400, reason: "query must be a string"},
		{name: "subscribe variables not an object", send: []string{`{"type":"subscribe","id":"1","payload":{"query":"{ clusters { name } }","variables":[]}}`},
			code: 4400, reason: "variables must be a JSON object"},
		{name: "id too long", send: []string{`{"type":"complete","id":"` + strings.Repeat("x", 257) + `"}`}, code: 4400, reason: "longer than 256 bytes"},
		{name: "complete without id", send: []string{`{"type":"complete"}`}, code: 4400, reason: "no id"},
		{name: "init payload not an object", noInit: true, send: []string{`{"type":"connection_init","payload":"token"}`}, code: 4400, reason: "payload is not an object"},
		{name: "ping payload not an object", send: []string{`{"type":"ping","payload":[]}`}, code: 4400, reason: "payload is not an object"},
		{name: "subscribe before init", noInit: true, send: []string{sub("1")}, code: 4401, reason: "Unauthorized"},
		{name: "no subprotocol", protocols: []string{}, noInit: true, code: 4406, reason: "Subprotocol not acceptable"},
		{name: "legacy subscriptions-transport-ws", protocols: []string{"graphql-ws"}, noInit: true, code: 4406, reason: "Subprotocol not acceptable"},
		{name: "other subprotocol", protocols: []string{"mqtt"}, noInit: true, code: 4406, reason: "Subprotocol not acceptable"},
		{name: "init timeout", opts: Options{ConnectionInitTimeout: 50 * time.Millisecond}, noInit: true, code: 4408, reason: "Connection initialisation timeout"},
		{name: "duplicate id", send: []string{sub("a")}, await: "a", send2: []string{sub("a")}, code: 4409, reason: "Subscriber for a already exists"},
		{name: "second init", send: []string{`{"type":"connection_init"}`}, code: 4429, reason: "Too many initialisation requests"},
		{name: "message too big", opts: Options{MaxBodyBytes: 1024}, send: []string{`{"type":"ping","payload":{"pad":"` + strings.Repeat("x", 1024) + `"}}`},
			code: websocket.StatusMessageTooBig, reason: "larger than the limit of 1024 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, f.ix, f.tracker, tc.opts)
			protocols := tc.protocols
			if protocols == nil {
				protocols = []string{subprotocolTransportWS}
			}
			c := dialWSWith(t, serve(t, s), &websocket.DialOptions{Subprotocols: protocols})
			if !tc.noInit {
				c.init()
			}
			for _, m := range tc.send {
				c.send(m)
			}
			if tc.await != "" {
				c.expect(msgNext, tc.await)
			}
			for _, m := range tc.send2 {
				c.send(m)
			}
			if reason := c.expectClose(tc.code); !strings.Contains(reason, tc.reason) {
				t.Errorf("close reason %q, want it to contain %q", reason, tc.reason)
			}
		})
	}
}

// TestWebSocketLegacyProtocolNegotiation: the server offers only
// graphql-transport-ws, whatever else the client lists.
func TestWebSocketProtocolNegotiation(t *testing.T) {
	f := newFixture(t)
	c := dialWSWith(t, serve(t, newServer(t, f.ix, f.tracker, Options{})),
		&websocket.DialOptions{Subprotocols: []string{"graphql-ws", subprotocolTransportWS}})
	if got := c.c.Subprotocol(); got != subprotocolTransportWS {
		t.Fatalf("subprotocol %q, want %q", got, subprotocolTransportWS)
	}
	c.init()
	c.alive()
}

func TestWebSocketPingPong(t *testing.T) {
	f := newFixture(t)
	s := newServer(t, f.ix, f.tracker, Options{KeepAliveInterval: 20 * time.Millisecond})
	c := dialWS(t, serve(t, s))

	// Pings are answered before connection_init too, without a payload
	// when there is none.
	c.send(`{"type":"ping"}`)
	if m := c.expect(msgPong, ""); m.Payload != nil {
		t.Errorf("pong payload %s, want none", m.Payload)
	}
	c.send(`{"type":"ping","payload":null}`)
	if m := c.expect(msgPong, ""); m.Payload != nil {
		t.Errorf("pong payload %s, want none", m.Payload)
	}
	c.init()
	c.alive()
	// A pong is no request: nothing answers it.
	c.send(`{"type":"pong","payload":{"x":1}}`)
	// The server pings an idle connection.
	for range 2 {
		m, err := c.readErr()
		if err != nil {
			t.Fatal(err)
		}
		if m.Type != msgPing || m.Payload != nil {
			t.Fatalf("got %+v, want a ping", m)
		}
		c.send(`{"type":"pong"}`)
	}
}

func TestWebSocketOperations(t *testing.T) {
	f := newFixture(t)
	s := newServer(t, f.ix, f.tracker, Options{}, graphql.Options{MaxDepth: 5, DefaultPageSize: 5, MaxPageSize: 10})
	c := dialWS(t, serve(t, s))
	c.init()

	t.Run("query", func(t *testing.T) {
		c := c.with(t)
		c.subscribe("q", clustersQuery, nil)
		p := c.nextPayload("q")
		if diff := cmp.Diff(`{"clusters":[{"name":"c1"},{"name":"c2"},{"name":"c3"}]}`, string(p.Data)); diff != "" || p.Errors != nil {
			t.Errorf("payload (-want +got):\n%s\nerrors: %+v", diff, p.Errors)
		}
		c.expect(msgComplete, "q")
		// The id is free again once complete.
		c.subscribe("q", `query($n: String!) { cluster(name: $n) { name } }`, map[string]any{"n": "c2"})
		if p := c.nextPayload("q"); string(p.Data) != `{"cluster":{"name":"c2"}}` {
			t.Errorf("payload %s, want cluster c2", p.Data)
		}
		c.expect(msgComplete, "q")
	})

	for _, tc := range []struct {
		name, query string
		vars        map[string]any
		want        []string // the error message's codes
	}{
		{name: "parse error", query: `{ clusters { name }`, want: []string{graphql.CodeParseFailed}},
		{name: "unknown field", query: `{ clusters { nope } }`, want: []string{graphql.CodeValidationFailed}},
		{name: "depth limit", query: `{ resources { edges { node { owners { owners { name } } } } } }`, want: []string{graphql.CodeValidationFailed}},
		{name: "depth limit in a subscription", query: `subscription { resourceEvents { resource { owners { owners { owners { name } } } } } }`,
			want: []string{graphql.CodeValidationFailed}},
		{name: "variables", query: `query($n: String!) { cluster(name: $n) { name } }`, vars: map[string]any{}, want: []string{graphql.CodeBadUserInput}},
		{name: "two root fields", query: `subscription { resourceEvents { type } clusterHealth { name } }`, want: []string{graphql.CodeValidationFailed}},
		{name: "bad since", query: eventsQuery, vars: map[string]any{"since": "nope"}, want: []string{graphql.CodeBadUserInput}},
		{name: "bad filter", query: eventsQuery, vars: map[string]any{"filter": map[string]any{"labelSelector": "a in (("}}, want: []string{graphql.CodeBadUserInput}},
		{name: "since of another epoch", query: eventsQuery, vars: map[string]any{"since": cursor.EncodeRevision(cursor.Revision{Epoch: "other", Revision: 1})}, want: []string{graphql.CodeCursorExpired}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := c.with(t)
			c.subscribe("e", tc.query, tc.vars)
			if diff := cmp.Diff(tc.want, c.errorPayload("e")); diff != "" {
				t.Errorf("codes (-want +got):\n%s", diff)
			}
			// No complete follows an error; the connection goes on.
			c.alive()
		})
	}

	t.Run("page size limit", func(t *testing.T) {
		c := c.with(t)
		c.subscribe("p", `{ resources(first: 11) { totalCount } }`, nil)
		p := c.nextPayload("p")
		if diff := cmp.Diff([]string{graphql.CodeBadUserInput}, errCodes(p.Errors)); diff != "" {
			t.Errorf("codes (-want +got):\n%s", diff)
		}
		c.expect(msgComplete, "p")
	})

	t.Run("subscription replay and client complete", func(t *testing.T) {
		c := c.with(t)
		vars := map[string]any{"since": epochCursor(s, 0), "filter": map[string]any{"clusters": []string{"c2"}, "kinds": []string{"Pod"}}}
		c.subscribe("s", eventsQuery, vars)
		events, cursors := c.nextEvents("s", 2)
		if diff := cmp.Diff([]string{"ADDED web-1", "ADDED web-2"}, events); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
		// The client completes it: no message follows, and the id can
		// be used again, here to resume after the first event.
		c.sendJSON(map[string]any{"id": "s", "type": "complete"})
		c.alive()
		vars["since"] = cursors[0]
		c.subscribe("s", eventsQuery, vars)
		if events, _ := c.nextEvents("s", 1); events[0] != "ADDED web-2" {
			t.Errorf("resumed with %v, want ADDED web-2", events)
		}
		c.sendJSON(map[string]any{"id": "s", "type": "complete"})
		// Completing an unknown id is no error.
		c.sendJSON(map[string]any{"id": "unknown", "type": "complete"})
		c.alive()
	})

	t.Run("subscription over plain HTTP", func(t *testing.T) {
		r, _ := do(t, http.MethodPost, serve(t, s), map[string]string{"Content-Type": "application/json", "Accept": mediaGraphQLResponse},
			`{"query":"subscription { resourceEvents { type } }"}`)
		if r.Status != http.StatusBadRequest || len(r.Codes) != 1 || r.Codes[0] != graphql.CodeBadRequest {
			t.Errorf("response %+v, want 400 BAD_REQUEST", r)
		}
	})
}

// TestWebSocketEvents follows live changes: ADDED, MODIFIED, DELETED, and
// objects entering and leaving the filter by label changes.
func TestWebSocketEvents(t *testing.T) {
	ix := index.New(index.Options{})
	s := startServer(t, ix, health.NewTracker(ix, health.Options{}), Options{})
	c := dialWS(t, serve(t, s))
	c.init()
	c.subscribe("web", eventsQuery, map[string]any{"filter": map[string]any{"labelSelector": "app=web"}, "since": epochCursor(s, ix.Revision())})
	c.subscribe("all", eventsQuery, map[string]any{"since": epochCursor(s, ix.Revision())})

	web := map[string]string{"app": "web"}
	ix.Upsert(version(t, "c1", "ns", "a", "1", web))
	ix.Upsert(version(t, "c1", "ns", "b", "1", map[string]string{"app": "db"}))
	ix.Upsert(version(t, "c1", "ns", "a", "2", web))
	ix.Upsert(version(t, "c1", "ns", "b", "2", web))                            // enters
	ix.Upsert(version(t, "c1", "ns", "a", "3", map[string]string{"app": "db"})) // leaves
	ix.Delete(version(t, "c1", "ns", "b", "3", nil).Key())

	want := map[string][]string{
		"web": {"ADDED a", "MODIFIED a", "ADDED b", "DELETED a", "DELETED b"},
		"all": {"ADDED a", "ADDED b", "MODIFIED a", "MODIFIED b", "MODIFIED a", "DELETED b"},
	}
	got := readInterleaved(t, c, map[string]int{"web": len(want["web"]), "all": len(want["all"])})
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// readInterleaved reads resourceEvents payloads of several subscriptions
// until each got its count, skipping heartbeats.
func readInterleaved(t testing.TB, c *wsClient, counts map[string]int) map[string][]string {
	t.Helper()
	got := map[string][]string{}
	for remaining := sum(counts); remaining > 0; {
		m := c.read()
		if m.Type != msgNext {
			t.Fatalf("got %s %q %s, want next", m.Type, m.ID, m.Payload)
		}
		var p payload
		if err := json.Unmarshal(m.Payload, &p); err != nil {
			t.Fatal(err)
		}
		if p.Extensions.Heartbeat {
			continue
		}
		e, _ := p.event(t)
		got[m.ID] = append(got[m.ID], e)
		remaining--
	}
	return got
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// TestWebSocketInternalError: a message the server cannot encode closes
// the connection with 4500. No request makes one, so the test sends it
// through the connection's own send.
func TestWebSocketInternalError(t *testing.T) {
	f := newFixture(t)
	s := newServer(t, f.ix, f.tracker, Options{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wc, ok := s.upgrade(w, r, s.opts.Logger)
		if !ok {
			t.Error("upgrade failed")
			return
		}
		if wc.send(wc.opsCtx, wsOut{ID: "1", Type: msgNext, Payload: func() {}}) {
			t.Error("send of an unencodable message succeeded")
		}
		wc.run(r.Context())
	})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c := dialWS(t, srv.URL)
	if reason := c.expectClose(4500); reason != "Internal server error" {
		t.Errorf("reason %q", reason)
	}
}

// countingHijacker hijacks the connection as a countConn.
type countingHijacker struct {
	http.ResponseWriter
	conn *countConn
}

func (w *countingHijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	w.conn = &countConn{Conn: c}
	return w.conn, brw, nil
}

// countConn counts the writes to a connection.
type countConn struct {
	net.Conn
	writes atomic.Int64
}

func (c *countConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// TestWebSocketCoalescing: messages that wait for the writer together go
// to the socket in one write, and a real client reads each intact, in
// order, as a message of its own.
func TestWebSocketCoalescing(t *testing.T) {
	f := newFixture(t)
	s := newServer(t, f.ix, f.tracker, Options{})
	const id = `op "1"` // escaped in the messages
	var results []*graphql.Result
	// Sizes to 80 KB: every frame length encoding.
	for i, size := range []int{10, 5000, 0, 100, 10000, 1} {
		results = append(results, &graphql.Result{Executed: true, Data: map[string]any{"i": i, "s": strings.Repeat("x\"\n€", size)}})
	}
	// As a shared payload, encoded already.
	results = append(results, &graphql.Result{Executed: true, Data: json.RawMessage(`{"shared":true}`), Extensions: map[string]any{"cursor": "c"}})
	conns := make(chan *countConn, 1)
	done := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(done)
		counter := &countingHijacker{ResponseWriter: w}
		wc, ok := s.upgrade(counter, r, s.opts.Logger)
		if !ok {
			t.Error("upgrade failed")
			return
		}
		// Queued before the writer starts: it takes them as one batch.
		for _, res := range results {
			if !wc.sendNext(wc.opsCtx, id, nextPrefix(id), res) {
				t.Error("sendNext failed")
			}
		}
		conns <- counter.conn
		wc.run(r.Context())
	})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c := dialWS(t, srv.URL)
	conn := <-conns
	for i, res := range results {
		m := c.read()
		want, err := res.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if m.Type != msgNext || m.ID != id || string(m.Payload) != string(want) {
			t.Fatalf("message %d: %s %q %.100s, want next %q %.100s", i, m.Type, m.ID, m.Payload, id, want)
		}
	}
	if n := conn.writes.Load(); n != 1 {
		t.Errorf("%d messages took %d writes, want 1", len(results), n)
	}
	if err := c.c.Close(websocket.StatusNormalClosure, ""); err != nil {
		t.Error(err)
	}
	<-done
}

// TestWebSocketWriteTimeout: a client that stops reading, with room left in
// its subscription's buffer, is disconnected once a write has waited for
// Options.WriteTimeout, without a close frame; the events go on to another
// subscriber meanwhile (runSlowConsumer).
func TestWebSocketWriteTimeout(t *testing.T) {
	r := runSlowConsumer(t, Options{WriteTimeout: 300 * time.Millisecond}, graphql.Options{Fanout: fanout.Options{Buffer: 100000}})
	if st := websocket.CloseStatus(r.end); st != -1 {
		t.Errorf("slow client: %v, want the connection cut", r.end)
	}
}
