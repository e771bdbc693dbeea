package transport

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/coder/websocket"
	"github.com/fleetcache/fleetcache/pkg/graphql"
	"github.com/google/go-cmp/cmp"
)

// TestLimitsOnEveryTransport sends the same over-limit requests over plain
// HTTP (POST, GET), SSE (POST, GET) and a WebSocket: the body size, depth,
// page size and cost limits hold on each. (MaxSubscriptionsPerConnection is a
// WebSocket limit, TestSubscriptionsPerConnection; an SSE request carries
// one operation, and MaxConnectionsPerAddress bounds the streams,
// TestConnectionsPerAddress. Rate limits: TestRateLimitTransports.)
func TestLimitsOnEveryTransport(t *testing.T) {
	f := newFixture(t)
	const maxBody = 2048
	s := newServer(t, f.ix, f.tracker, Options{MaxBodyBytes: maxBody}, graphql.Options{MaxDepth: 5, DefaultPageSize: 5, MaxPageSize: 10, MaxCost: 50})
	endpoint := serve(t, s)

	httpCodes := func(r response) outcome {
		if r.Status != http.StatusOK {
			return outcome{Status: r.Status, Codes: r.Codes}
		}
		return outcome{Codes: r.Codes}
	}
	sseCodes := func(st *sseStreamReader) outcome {
		if st.res.StatusCode != http.StatusOK {
			var body struct {
				Errors []gqlErr
			}
			_ = json.NewDecoder(st.res.Body).Decode(&body)
			return outcome{Status: st.res.StatusCode, Codes: errCodes(body.Errors)}
		}
		p := st.nextPayload()
		st.expect("complete")
		return outcome{Codes: errCodes(p.Errors)}
	}
	transports := []struct {
		name string
		send func(t *testing.T, query string) outcome
	}{
		{"HTTP POST", func(t *testing.T, query string) outcome {
			r, _ := do(t, http.MethodPost, endpoint, map[string]string{"Content-Type": "application/json"}, string(mustJSON(t, map[string]any{"query": query})))
			return httpCodes(r)
		}},
		{"HTTP GET", func(t *testing.T, query string) outcome {
			r, _ := do(t, http.MethodGet, endpoint+get(query), nil, "")
			return httpCodes(r)
		}},
		{"SSE POST", func(t *testing.T, query string) outcome {
			return sseCodes(openSSE(t, nil, endpoint, map[string]any{"query": query}))
		}},
		{"SSE GET", func(t *testing.T, query string) outcome {
			return sseCodes(openSSE(t, nil, endpoint+"?"+url.Values{"query": {query}}.Encode(), nil))
		}},
		{"WebSocket", func(t *testing.T, query string) outcome {
			c := dialWS(t, endpoint)
			c.init()
			c.subscribe("1", query, nil)
			m, err := c.readErr()
			var ce websocket.CloseError
			switch {
			case errors.As(err, &ce):
				return outcome{Status: int(ce.Code)}
			case err != nil:
				t.Fatalf("read: %v", err)
			case m.Type == msgError:
				var errs []gqlErr
				if err := json.Unmarshal(m.Payload, &errs); err != nil {
					t.Fatal(err)
				}
				return outcome{Codes: errCodes(errs)}
			case m.Type == msgNext:
				c.expect(msgComplete, "1")
				return outcome{Codes: errCodes(c.payloadOf(m).Errors)}
			}
			t.Fatalf("unexpected %s %s", m.Type, m.Payload)
			return outcome{}
		}},
	}

	tooLarge := `{ clusters { name } } #` + strings.Repeat("x", maxBody)
	for _, tc := range []struct {
		name  string
		query string
		want  map[string]outcome // by transport; "" for the others
	}{
		{name: "within the limits", query: `{ resources(first: 10) { edges { node { owners { name } } } } }`,
			want: map[string]outcome{"": {}}},
		{name: "depth", query: `{ resources { edges { node { owners { owners { name } } } } } }`,
			want: map[string]outcome{"": {Codes: []string{graphql.CodeValidationFailed}}}},
		{name: "depth of a subscription", query: `subscription { resourceEvents { resource { owners { owners { owners { name } } } } } }`,
			want: map[string]outcome{"": {Codes: []string{graphql.CodeValidationFailed}}}},
		{name: "cost", query: `{ a: resources(first: 10) { edges { node { name } } } b: resources(first: 10) { edges { node { owners { name } } } }
			c: resources(first: 10) { edges { node { children { name } } } } }`,
			want: map[string]outcome{"": {Codes: []string{graphql.CodeQueryTooComplex}}}},
		{name: "cost of a subscription", query: `subscription { resourceEvents { resource { children { a: children { name } b: children { name } } } } }`,
			want: map[string]outcome{"": {Codes: []string{graphql.CodeQueryTooComplex}},
				// Subscriptions are not served over plain HTTP.
				"HTTP POST": {Codes: []string{graphql.CodeBadRequest}}, "HTTP GET": {Codes: []string{graphql.CodeBadRequest}}}},
		{name: "page size", query: `{ resources(first: 11) { totalCount } }`,
			want: map[string]outcome{"": {Codes: []string{graphql.CodeBadUserInput}}}},
		{name: "body size", query: tooLarge, want: map[string]outcome{
			"HTTP POST": {Status: http.StatusRequestEntityTooLarge, Codes: []string{CodePayloadTooLarge}},
			"HTTP GET":  {Status: http.StatusRequestURITooLong, Codes: []string{CodePayloadTooLarge}},
			"SSE POST":  {Status: http.StatusRequestEntityTooLarge, Codes: []string{CodePayloadTooLarge}},
			"SSE GET":   {Status: http.StatusRequestURITooLong, Codes: []string{CodePayloadTooLarge}},
			"WebSocket": {Status: int(closeTooBig)},
		}},
	} {
		for _, tr := range transports {
			t.Run(tc.name+"/"+tr.name, func(t *testing.T) {
				want, ok := tc.want[tr.name]
				if !ok {
					want = tc.want[""]
				}
				if diff := cmp.Diff(want, tr.send(t, tc.query)); diff != "" {
					t.Errorf("outcome (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// outcome is how a transport answered a request: an HTTP status or a
// WebSocket close code when the request was refused as a whole, else the
// codes of the GraphQL errors it got.
type outcome struct {
	Status int
	Codes  []string
}

// TestServerOptions checks what Options reports: no rate limit unless one
// is given, a burst's default filled in.
func TestServerOptions(t *testing.T) {
	f := newFixture(t)
	o := newServer(t, f.ix, f.tracker, Options{}).Options()
	if o.RateLimit != (RateLimit{}) {
		t.Errorf("rate limit %+v, want none", o.RateLimit)
	}
	o = newServer(t, f.ix, f.tracker, Options{RateLimit: RateLimit{QueriesPerSecond: 3}}).Options()
	if want := (RateLimit{QueriesPerSecond: 3, QueryBurst: 6}); o.RateLimit != want {
		t.Errorf("rate limit %+v, want %+v", o.RateLimit, want)
	}
}
