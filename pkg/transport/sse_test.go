package transport

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetcache/fleetcache/pkg/fanout"
	"github.com/fleetcache/fleetcache/pkg/graphql"
	"github.com/fleetcache/fleetcache/pkg/graphql/cursor"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index"
)

// sseStreamReader reads the events of a text/event-stream response.
type sseStreamReader struct {
	t    testing.TB
	res  *http.Response
	r    *bufio.Reader
	stop context.CancelFunc
}

// sseEvent is one event of a stream, or a comment.
type sseEvent struct {
	Event, Data string
	Comment     bool
}

// openSSE sends a request asking for an event stream; body "" means GET
// with the request in the URL.
func openSSE(t testing.TB, client *http.Client, endpoint string, req map[string]any) *sseStreamReader {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var hr *http.Request
	var err error
	if req == nil {
		hr, err = http.NewRequestWithContext(ctx, http.MethodGet, endpoint, nil)
	} else {
		hr, err = http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(string(mustJSON(t, req))))
		hr.Header.Set("Content-Type", "application/json")
	}
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	hr.Header.Set("Accept", mediaEventStream)
	if client == nil {
		client = http.DefaultClient
	}
	res, err := client.Do(hr)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	st := &sseStreamReader{t: t, res: res, r: bufio.NewReader(res.Body), stop: cancel}
	t.Cleanup(st.close)
	return st
}

// close drops the stream, as a client that goes away.
func (st *sseStreamReader) close() {
	st.stop()
	_ = st.res.Body.Close()
}

// nextEvent reads the next event or comment; io.EOF when the stream ended.
func (st *sseStreamReader) nextEvent() (sseEvent, error) {
	var ev sseEvent
	var data []string
	for {
		line, err := st.r.ReadString('\n')
		if err != nil {
			if errors.Is(err, io.EOF) && line == "" && ev.Event == "" && data == nil {
				return ev, io.EOF
			}
			return ev, err
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			if ev.Event == "" && data == nil && !ev.Comment {
				continue
			}
			ev.Data = strings.Join(data, "\n")
			return ev, nil
		case strings.HasPrefix(line, ":"):
			ev.Comment = true
		default:
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "event":
				ev.Event = value
			case "data":
				data = append(data, value)
			}
		}
	}
}

// expect reads the next event, skipping comments, and checks its name.
func (st *sseStreamReader) expect(event string) string {
	st.t.Helper()
	for {
		ev, err := st.nextEvent()
		if err != nil {
			st.t.Fatalf("read event: %v, want %s", err, event)
		}
		if ev.Comment {
			continue
		}
		if ev.Event != event {
			st.t.Fatalf("event %s %q, want %s", ev.Event, ev.Data, event)
		}
		return ev.Data
	}
}

// nextPayload reads a next event's payload.
func (st *sseStreamReader) nextPayload() payload {
	st.t.Helper()
	data := st.expect("next")
	var p payload
	if err := json.Unmarshal([]byte(data), &p); err != nil {
		st.t.Fatalf("decode %s: %v", data, err)
	}
	return p
}

// nextEvents reads n resourceEvents payloads, skipping heartbeats.
func (st *sseStreamReader) nextEvents(n int) (events, cursors []string) {
	st.t.Helper()
	for len(events) < n {
		p := st.nextPayload()
		if p.Extensions.Heartbeat {
			continue
		}
		e, c := p.event(st.t)
		events, cursors = append(events, e), append(cursors, c)
	}
	return events, cursors
}

// expectEnd checks that the stream ends now.
func (st *sseStreamReader) expectEnd() {
	st.t.Helper()
	for {
		ev, err := st.nextEvent()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			st.t.Fatalf("read: %v, want the end of the stream", err)
		}
		if !ev.Comment {
			st.t.Fatalf("event %s %q, want the end of the stream", ev.Event, ev.Data)
		}
	}
}

func TestSSE(t *testing.T) {
	f := newFixture(t)
	s := newServer(t, f.ix, f.tracker, Options{}, graphql.Options{MaxDepth: 5, DefaultPageSize: 5, MaxPageSize: 10})
	endpoint := serve(t, s)

	t.Run("query by POST", func(t *testing.T) {
		st := openSSE(t, nil, endpoint, map[string]any{"query": clustersQuery})
		if ct := st.res.Header.Get("Content-Type"); st.res.StatusCode != http.StatusOK || ct != "text/event-stream; charset=utf-8" {
			t.Fatalf("status %d, Content-Type %q", st.res.StatusCode, ct)
		}
		if p := st.nextPayload(); string(p.Data) != `{"clusters":[{"name":"c1"},{"name":"c2"},{"name":"c3"}]}` {
			t.Errorf("payload %s", p.Data)
		}
		if data := st.expect("complete"); data != "" {
			t.Errorf("complete data %q, want none", data)
		}
		st.expectEnd()
	})

	t.Run("query by GET", func(t *testing.T) {
		q := url.Values{"query": {`query($n: String!) { cluster(name: $n) { name } }`}, "variables": {`{"n":"c2"}`}}
		st := openSSE(t, nil, endpoint+"?"+q.Encode(), nil)
		if p := st.nextPayload(); string(p.Data) != `{"cluster":{"name":"c2"}}` {
			t.Errorf("payload %s", p.Data)
		}
		st.expect("complete")
		st.expectEnd()
	})

	for _, tc := range []struct {
		name  string
		query string
		vars  map[string]any
		want  []string
		data  bool // whether the payload has data
	}{
		{name: "parse error", query: `{ clusters`, want: []string{graphql.CodeParseFailed}},
		{name: "depth limit", query: `subscription { resourceEvents { resource { owners { owners { owners { name } } } } } }`, want: []string{graphql.CodeValidationFailed}},
		{name: "page size limit", query: `{ resources(first: 11) { totalCount } }`, want: []string{graphql.CodeBadUserInput}, data: true},
		{name: "bad since", query: eventsQuery, vars: map[string]any{"since": "nope"}, want: []string{graphql.CodeBadUserInput}},
		{name: "since of another epoch", query: eventsQuery, vars: map[string]any{"since": cursor.EncodeRevision(cursor.Revision{Epoch: "other", Revision: 3})}, want: []string{graphql.CodeCursorExpired}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Errors before and during execution come as a next event,
			// then complete.
			st := openSSE(t, nil, endpoint, map[string]any{"query": tc.query, "variables": tc.vars})
			if st.res.StatusCode != http.StatusOK {
				t.Fatalf("status %d", st.res.StatusCode)
			}
			p := st.nextPayload()
			if diff := cmp.Diff(tc.want, errCodes(p.Errors)); diff != "" {
				t.Errorf("codes (-want +got):\n%s", diff)
			}
			if hasData := p.Data != nil; hasData != tc.data {
				t.Errorf("payload %+v: has data %v, want %v", p, hasData, tc.data)
			}
			st.expect("complete")
			st.expectEnd()
		})
	}

	for _, tc := range []struct {
		name, method, contentType, body string
		status                          int
		code                            string
	}{
		{name: "not JSON", method: http.MethodPost, contentType: "application/json", body: `{`, status: http.StatusBadRequest, code: graphql.CodeBadRequest},
		{name: "content type", method: http.MethodPost, contentType: "text/plain", body: `{}`, status: http.StatusUnsupportedMediaType, code: graphql.CodeBadRequest},
		{name: "no query", method: http.MethodGet, status: http.StatusBadRequest, code: graphql.CodeBadRequest},
		{name: "method", method: http.MethodPut, contentType: "application/json", body: `{"query":"{ clusters { name } }"}`, status: http.StatusMethodNotAllowed, code: graphql.CodeBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Requests that are not GraphQL requests get HTTP errors.
			h := map[string]string{"Accept": mediaEventStream}
			if tc.contentType != "" {
				h["Content-Type"] = tc.contentType
			}
			r, _ := do(t, tc.method, endpoint, h, tc.body)
			if r.Status != tc.status || len(r.Codes) != 1 || r.Codes[0] != tc.code {
				t.Errorf("response %+v, want %d %s", r, tc.status, tc.code)
			}
		})
	}

	t.Run("body too large", func(t *testing.T) {
		s := newServer(t, f.ix, f.tracker, Options{MaxBodyBytes: 100})
		r, _ := do(t, http.MethodPost, serve(t, s), map[string]string{"Accept": mediaEventStream, "Content-Type": "application/json"},
			`{"query":"{ clusters { name } }`+strings.Repeat(" ", 100)+`"}`)
		if r.Status != http.StatusRequestEntityTooLarge {
			t.Errorf("response %+v, want 413", r)
		}
	})

	t.Run("subscription replay, then the client goes", func(t *testing.T) {
		q := url.Values{"query": {eventsQuery}, "variables": {string(mustJSON(t, map[string]any{
			"since": epochCursor(s, 0), "filter": map[string]any{"clusters": []string{"c3"}, "kinds": []string{"Pod"}},
		}))}}
		st := openSSE(t, nil, endpoint+"?"+q.Encode(), nil)
		if events, _ := st.nextEvents(2); !cmp.Equal(events, []string{"ADDED web-1", "ADDED web-2"}) {
			t.Errorf("events %v", events)
		}
		if s.hub.Subscribers() != 1 {
			t.Errorf("%d hub members, want 1", s.hub.Subscribers())
		}
		st.close()
		waitFor(t, "the subscription to end", func() bool { return s.hub.Subscribers() == 0 && s.conns.count("127.0.0.1") == 0 })
	})
}

// TestSSEEvents follows live changes over SSE, with keep-alive comments.
func TestSSEEvents(t *testing.T) {
	ix := index.New(index.Options{})
	s := startServer(t, ix, health.NewTracker(ix, health.Options{}), Options{KeepAliveInterval: 10 * time.Millisecond})
	st := openSSE(t, nil, serve(t, s), map[string]any{"query": eventsQuery, "variables": map[string]any{
		"filter": map[string]any{"labelSelector": "app=web"}, "since": epochCursor(s, ix.Revision()),
	}})
	// Keep-alive comments come while nothing happens.
	for comments := 0; comments < 2; {
		ev, err := st.nextEvent()
		if err != nil {
			t.Fatal(err)
		}
		if !ev.Comment {
			t.Fatalf("event %+v, want a comment", ev)
		}
		comments++
	}
	web := map[string]string{"app": "web"}
	ix.Upsert(version(t, "c1", "ns", "a", "1", web))
	ix.Upsert(version(t, "c1", "ns", "b", "1", map[string]string{"app": "db"}))
	ix.Upsert(version(t, "c1", "ns", "a", "2", web))
	ix.Upsert(version(t, "c1", "ns", "b", "2", web))
	ix.Upsert(version(t, "c1", "ns", "a", "3", map[string]string{"app": "db"}))
	ix.Delete(version(t, "c1", "ns", "b", "3", nil).Key())
	events, _ := st.nextEvents(5)
	if diff := cmp.Diff([]string{"ADDED a", "MODIFIED a", "ADDED b", "DELETED a", "DELETED b"}, events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// countingListener hands out its connections as countConns.
type countingListener struct {
	net.Listener
	conns chan *countConn
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	cc := &countConn{Conn: c}
	l.conns <- cc
	return cc, nil
}

// TestSSEBursts: the events that are ready together go to the socket in
// one write, each still an event of its own, in order.
func TestSSEBursts(t *testing.T) {
	ix := index.New(index.Options{})
	// A long linger after each dispatch: what comes meanwhile is one burst.
	s := newServer(t, ix, health.NewTracker(ix, health.Options{}), Options{}, graphql.Options{Fanout: fanout.Options{LingerPerDelivery: 300 * time.Millisecond, MaxLinger: 300 * time.Millisecond}})
	runServer(t, s)
	srv := httptest.NewUnstartedServer(s)
	conns := make(chan *countConn, 1)
	srv.Listener = countingListener{Listener: srv.Listener, conns: conns}
	srv.Start()
	t.Cleanup(srv.Close)
	st := openSSE(t, nil, srv.URL, map[string]any{"query": eventsQuery})
	conn := <-conns
	waitFor(t, "the subscription", func() bool { return s.hub.Subscribers() == 1 })

	ix.Upsert(version(t, "c1", "ns", "first", "1", nil)) // at once
	if events, _ := st.nextEvents(1); events[0] != "ADDED first" {
		t.Fatalf("got %v, want ADDED first", events)
	}
	before := conn.writes.Load()
	var want []string
	for i := range 10 {
		ix.Upsert(version(t, "c1", "ns", fmt.Sprint(i), "1", nil))
		want = append(want, fmt.Sprintf("ADDED %d", i))
	}
	events, _ := st.nextEvents(len(want))
	if diff := cmp.Diff(want, events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if n := conn.writes.Load() - before; n != 1 {
		t.Errorf("%d events took %d writes, want 1", len(want), n)
	}
}
