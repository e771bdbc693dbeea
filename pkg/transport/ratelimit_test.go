package transport

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/fleetcache/fleetcache/pkg/authn"
)

// fakeClock is a clock tests move by hand; safe for concurrent use.
type fakeClock struct{ ns atomic.Int64 }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.ns.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	return c
}

func (c *fakeClock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

func TestRateLimiter(t *testing.T) {
	type step struct {
		advance time.Duration
		// addr is the client address of an unauthenticated caller; user
		// names an authenticated one instead.
		addr, user string
		kind       operationKind
		// wait is the Retry-After a refused operation gets; 0: allowed.
		wait time.Duration
	}
	for _, tc := range []struct {
		name  string
		limit RateLimit
		steps []step
	}{
		{
			name:  "burst, then the rate",
			limit: RateLimit{QueriesPerSecond: 2, QueryBurst: 3},
			steps: []step{
				{addr: "a"}, {addr: "a"}, {addr: "a"},
				{addr: "a", wait: 500 * time.Millisecond},
				{advance: 200 * time.Millisecond, addr: "a", wait: 300 * time.Millisecond},
				{advance: 300 * time.Millisecond, addr: "a"},
				{addr: "a", wait: 500 * time.Millisecond},
			},
		},
		{
			name:  "addresses apart",
			limit: RateLimit{QueriesPerSecond: 1, QueryBurst: 1},
			steps: []step{
				{addr: "a"}, {addr: "a", wait: time.Second}, {addr: "b"}, {addr: "b", wait: time.Second},
			},
		},
		{
			name:  "users apart, and apart from addresses",
			limit: RateLimit{QueriesPerSecond: 1, QueryBurst: 1},
			steps: []step{
				{user: "alice"}, {user: "alice", wait: time.Second}, {user: "bob"}, {user: "bob", wait: time.Second},
				{addr: "alice"}, {addr: "alice", wait: time.Second},
			},
		},
		{
			name:  "kinds apart",
			limit: RateLimit{QueriesPerSecond: 1, QueryBurst: 1, SubscriptionsPerSecond: 0.5, SubscriptionBurst: 1},
			steps: []step{
				{addr: "a", kind: kindSubscription},
				{addr: "a", kind: kindSubscription, wait: 2 * time.Second},
				{addr: "a", kind: kindQuery},
				{addr: "a", kind: kindQuery, wait: time.Second},
				{advance: time.Second, addr: "a", kind: kindSubscription, wait: time.Second},
				{addr: "a", kind: kindQuery},
			},
		},
		{
			name:  "burst defaults to twice the rate",
			limit: RateLimit{SubscriptionsPerSecond: 1},
			steps: []step{
				{addr: "a", kind: kindSubscription}, {addr: "a", kind: kindSubscription},
				{addr: "a", kind: kindSubscription, wait: time.Second},
			},
		},
		{
			name:  "a kind without a rate is not limited",
			limit: RateLimit{SubscriptionsPerSecond: 1, SubscriptionBurst: 1},
			steps: []step{{addr: "a"}, {addr: "a"}, {addr: "a"}},
		},
		{
			name:  "an idle client is back to its burst",
			limit: RateLimit{QueriesPerSecond: 10, QueryBurst: 2},
			steps: []step{
				{addr: "a"}, {addr: "a"}, {addr: "a", wait: 100 * time.Millisecond},
				{advance: time.Hour, addr: "a"}, {addr: "a"}, {addr: "a", wait: 100 * time.Millisecond},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rl, err := newRateLimiter(tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			clock := newFakeClock()
			rl.now = clock.now
			for i, s := range tc.steps {
				clock.advance(s.advance)
				caller := addressCaller(s.addr)
				if s.user != "" {
					caller = userCaller(&authn.User{Name: s.user})
				}
				wait, err := rl.allow(caller, s.kind)
				if wait != s.wait || (err != nil) != (s.wait != 0) {
					t.Fatalf("step %d %+v: wait %v, err %v; want wait %v", i, s, wait, err, s.wait)
				}
				if err != nil && !strings.Contains(err.Error(), "retry in") {
					t.Errorf("step %d: error %q does not say when to retry", i, err)
				}
			}
		})
	}
}

func TestRateLimiterOff(t *testing.T) {
	rl, err := newRateLimiter(RateLimit{})
	if err != nil || rl != nil {
		t.Fatalf("a zero RateLimit: %v, %v; want no limiter", rl, err)
	}
	// A nil limiter allows everything.
	if _, err := rl.allow(addressCaller("a"), kindQuery); err != nil {
		t.Error(err)
	}
}

// TestRateLimiterBounded checks that the limiters of many addresses take
// bounded memory: the least recently seen are forgotten.
func TestRateLimiterBounded(t *testing.T) {
	rl, err := newRateLimiter(RateLimit{QueriesPerSecond: 1, QueryBurst: 1})
	if err != nil {
		t.Fatal(err)
	}
	for i := range maxRateLimitedClients + 1000 {
		if _, err := rl.allow(addressCaller(fmt.Sprintf("10.0.%d.%d", i/256, i%256)), kindQuery); err != nil {
			t.Fatalf("address %d: %v", i, err)
		}
	}
	if n := rl.clients.Len(); n != maxRateLimitedClients {
		t.Errorf("limiters kept: %d, want the bound %d", n, maxRateLimitedClients)
	}
}

// TestRateLimitTransports trips the limits over every transport (HTTP,
// WebSocket, SSE) and checks that they recover: queries over HTTP and over
// the WebSocket share one budget, subscriptions over the WebSocket and SSE
// another.
func TestRateLimitTransports(t *testing.T) {
	f := newFixture(t)
	s := newServer(t, f.ix, f.tracker, Options{RateLimit: RateLimit{QueriesPerSecond: 1, QueryBurst: 3, SubscriptionsPerSecond: 0.5, SubscriptionBurst: 2}})
	clock := newFakeClock()
	s.limits.now = clock.now
	endpoint := serve(t, s)
	post := func() (response, []byte) {
		return do(t, http.MethodPost, endpoint, map[string]string{"Content-Type": "application/json"}, `{"query":"{ clusters { name } }"}`)
	}
	ws := dialWS(t, endpoint)
	ws.init()
	subVars := map[string]any{"since": epochCursor(s, 0), "filter": map[string]any{"kinds": []string{"Deployment"}}}

	// Queries: three over HTTP GET, POST and the WebSocket, the burst.
	if r, body := do(t, http.MethodGet, endpoint+get(clustersQuery), nil, ""); r.Status != http.StatusOK {
		t.Fatalf("GET: %+v %s", r, body)
	}
	if r, body := post(); r.Status != http.StatusOK {
		t.Fatalf("POST: %+v %s", r, body)
	}
	ws.subscribe("q1", clustersQuery, nil)
	ws.nextPayload("q1")
	ws.expect(msgComplete, "q1")

	// The fourth trips the limit, whatever the transport.
	r, body := post()
	if r.Status != http.StatusTooManyRequests || !cmp.Equal(r.Codes, []string{CodeRateLimited}) {
		t.Fatalf("POST over the rate: %+v %s; want 429 %s", r, body, CodeRateLimited)
	}
	if !strings.Contains(string(body), "retry in 1s") {
		t.Errorf("429 body does not say when to retry: %s", body)
	}
	checkRetryAfter(t, endpoint, "1")
	ws.subscribe("q2", clustersQuery, nil)
	if diff := cmp.Diff([]string{CodeRateLimited}, ws.errorPayload("q2")); diff != "" {
		t.Errorf("WebSocket query over the rate (-want +got):\n%s", diff)
	}
	st := openSSE(t, nil, endpoint, map[string]any{"query": clustersQuery})
	if st.res.StatusCode != http.StatusTooManyRequests || st.res.Header.Get("Retry-After") != "1" {
		t.Errorf("SSE query over the rate: %d, Retry-After %q; want 429, 1", st.res.StatusCode, st.res.Header.Get("Retry-After"))
	}
	// The connection survives, and subscriptions have a budget of their own.
	ws.alive()
	ws.subscribe("s1", eventsQuery, subVars)
	ws.nextEvents("s1", 1)
	sse := openSSE(t, nil, endpoint, map[string]any{"query": eventsQuery, "variables": subVars})
	if sse.res.StatusCode != http.StatusOK {
		t.Fatalf("SSE subscription within the burst: %d", sse.res.StatusCode)
	}
	sse.nextEvents(1)
	ws.subscribe("s2", eventsQuery, subVars)
	if diff := cmp.Diff([]string{CodeRateLimited}, ws.errorPayload("s2")); diff != "" {
		t.Errorf("WebSocket subscription over the rate (-want +got):\n%s", diff)
	}
	st = openSSE(t, nil, endpoint, map[string]any{"query": eventsQuery, "variables": subVars})
	if st.res.StatusCode != http.StatusTooManyRequests || st.res.Header.Get("Retry-After") != "2" {
		t.Errorf("SSE subscription over the rate: %d, Retry-After %q; want 429, 2", st.res.StatusCode, st.res.Header.Get("Retry-After"))
	}
	ws.alive()

	// Recovery: a second later one query is due, two seconds later one
	// subscription.
	clock.advance(time.Second)
	if r, body := post(); r.Status != http.StatusOK {
		t.Fatalf("POST after a second: %+v %s", r, body)
	}
	ws.subscribe("q3", clustersQuery, nil)
	if diff := cmp.Diff([]string{CodeRateLimited}, ws.errorPayload("q3")); diff != "" {
		t.Errorf("second query after a second (-want +got):\n%s", diff)
	}
	clock.advance(time.Second)
	ws.subscribe("q3", clustersQuery, nil) // the refused id is free
	ws.nextPayload("q3")
	ws.expect(msgComplete, "q3")
	ws.subscribe("s2", eventsQuery, subVars)
	ws.nextEvents("s2", 1)

	// Every refusal is counted, by limit.
	for kind, want := range map[operationKind]float64{kindQuery: 5, kindSubscription: 2} {
		if got := testutil.ToFloat64(s.metrics.rateLimited.WithLabelValues(kind.String())); got != want {
			t.Errorf("refused %ss counted: %v, want %v", kind, got, want)
		}
	}
}

// TestRateLimitPerUser checks that an authenticating server counts
// operations against the user, over every transport: two users from one
// address each have their own budget, and a user's budget is the same over
// HTTP, SSE and its WebSockets.
func TestRateLimitPerUser(t *testing.T) {
	f := newFixture(t)
	s := newServer(t, f.ix, f.tracker, Options{
		Authenticator: usersAuthenticator{"alice-token": "alice", "bob-token": "bob"},
		RateLimit:     RateLimit{QueriesPerSecond: 1, QueryBurst: 2, SubscriptionsPerSecond: 0.5, SubscriptionBurst: 1},
	})
	clock := newFakeClock()
	s.limits.now = clock.now
	endpoint := serve(t, s)
	post := func(token string) (response, []byte) {
		return do(t, http.MethodPost, endpoint, map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + token},
			`{"query":"{ clusters { name } }"}`)
	}
	sse := func(token string, req map[string]any) *sseStreamReader {
		return openSSE(t, &http.Client{Transport: bearer(token)}, endpoint, req)
	}
	ws := func(token string) *wsClient {
		c := dialWS(t, endpoint)
		c.send(`{"type":"connection_init","payload":{"authorization":"Bearer ` + token + `"}}`)
		c.expect(msgConnectionAck, "")
		return c
	}
	subVars := map[string]any{"since": epochCursor(s, 0), "filter": map[string]any{"kinds": []string{"Deployment"}}}

	// alice spends her burst of two queries over HTTP and her WebSocket.
	if r, body := post("alice-token"); r.Status != http.StatusOK {
		t.Fatalf("alice's POST: %+v %s", r, body)
	}
	alice := ws("alice-token")
	alice.subscribe("q1", clustersQuery, nil)
	alice.nextPayload("q1")
	alice.expect(msgComplete, "q1")
	r, body := post("alice-token")
	if r.Status != http.StatusTooManyRequests || !cmp.Equal(r.Codes, []string{CodeRateLimited}) || !strings.Contains(string(body), "this user may send 1 queries per second") {
		t.Fatalf("alice's third query: %+v %s; want 429 %s naming the user's limit", r, body, CodeRateLimited)
	}
	if st := sse("alice-token", map[string]any{"query": clustersQuery}); st.res.StatusCode != http.StatusTooManyRequests {
		t.Errorf("alice's query over SSE: %d, want 429", st.res.StatusCode)
	}

	// bob, from the same address, has a budget of his own, and spends it
	// over SSE and a WebSocket.
	st := sse("bob-token", map[string]any{"query": clustersQuery})
	if st.res.StatusCode != http.StatusOK {
		t.Fatalf("bob's query over SSE: %d", st.res.StatusCode)
	}
	if p := st.nextPayload(); len(p.Errors) > 0 {
		t.Fatalf("bob's query over SSE: %+v", p.Errors)
	}
	bob := ws("bob-token")
	bob.subscribe("q1", clustersQuery, nil)
	bob.nextPayload("q1")
	bob.expect(msgComplete, "q1")
	bob.subscribe("q2", clustersQuery, nil)
	if diff := cmp.Diff([]string{CodeRateLimited}, bob.errorPayload("q2")); diff != "" {
		t.Errorf("bob's third query (-want +got):\n%s", diff)
	}

	// Subscriptions: one each, whatever the transport.
	alice.subscribe("s1", eventsQuery, subVars)
	alice.nextEvents("s1", 1)
	if st := sse("alice-token", map[string]any{"query": eventsQuery, "variables": subVars}); st.res.StatusCode != http.StatusTooManyRequests {
		t.Errorf("alice's second subscription, over SSE: %d, want 429", st.res.StatusCode)
	}
	bobSub := sse("bob-token", map[string]any{"query": eventsQuery, "variables": subVars})
	if bobSub.res.StatusCode != http.StatusOK {
		t.Fatalf("bob's first subscription, over SSE: %d", bobSub.res.StatusCode)
	}
	bobSub.nextEvents(1)

	// A second later, each has one query again.
	clock.advance(time.Second)
	for _, token := range []string{"alice-token", "bob-token"} {
		if r, body := post(token); r.Status != http.StatusOK {
			t.Errorf("POST with %s after a second: %+v %s", token, r, body)
		}
	}
}

// usersAuthenticator maps bearer tokens to user names.
type usersAuthenticator map[string]string

func (a usersAuthenticator) Authenticate(_ context.Context, token string) (*authn.User, error) {
	name, ok := a[token]
	if !ok {
		return nil, authn.ErrUnauthenticated
	}
	return &authn.User{Name: name}, nil
}

// bearer is an http.RoundTripper that sends a bearer token.
type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// checkRetryAfter checks the Retry-After header of a refused query.
func checkRetryAfter(t *testing.T, endpoint, want string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, endpoint, strings.NewReader(`{"query":"{ clusters { name } }"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") != want {
		t.Errorf("status %d, Retry-After %q; want 429, %s", res.StatusCode, res.Header.Get("Retry-After"), want)
	}
}

// TestRateLimitRecoversInRealTime trips the query limit with the real clock
// and waits for it to let queries through again.
func TestRateLimitRecoversInRealTime(t *testing.T) {
	f := newFixture(t)
	s := newServer(t, f.ix, f.tracker, Options{RateLimit: RateLimit{QueriesPerSecond: 5, QueryBurst: 1}})
	endpoint := serve(t, s)
	status := func() int {
		r, _ := do(t, http.MethodGet, endpoint+get(clustersQuery), nil, "")
		return r.Status
	}
	tripped := false
	for range 10 { // 10 queries faster than 5 a second cannot all pass
		if status() == http.StatusTooManyRequests {
			tripped = true
			break
		}
	}
	if !tripped {
		t.Fatal("10 queries in a row all passed a limit of 5/s with a burst of 1")
	}
	waitFor(t, "a query to pass again", func() bool { return status() == http.StatusOK })
}

func TestWebSocketOrigin(t *testing.T) {
	f := newFixture(t)
	s := newServer(t, f.ix, f.tracker, Options{AllowedOrigins: []string{"https://portal.example.com", "http://[::1]:3000"}})
	endpoint := serve(t, s)
	host := strings.TrimPrefix(strings.TrimSuffix(endpoint, "/graphql"), "http://")
	for _, tc := range []struct {
		name, origin string
		allowed      bool
	}{
		{name: "no Origin (not a browser)", origin: "", allowed: true},
		{name: "same origin", origin: "http://" + host, allowed: true},
		{name: "allowed origin", origin: "https://portal.example.com", allowed: true},
		{name: "allowed origin, IPv6 host", origin: "http://[::1]:3000", allowed: true},
		{name: "other origin", origin: "https://evil.example.com", allowed: false},
		{name: "allowed host, other scheme", origin: "http://portal.example.com", allowed: false},
		{name: "allowed host, other port", origin: "https://portal.example.com:8443", allowed: false},
		{name: "suffix of an allowed origin", origin: "https://portal.example.com.evil.example", allowed: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			if tc.origin != "" {
				h.Set("Origin", tc.origin)
			}
			ctx, cancel := context.WithTimeout(t.Context(), wsTimeout)
			defer cancel()
			c, res, err := websocket.Dial(ctx, wsURL(endpoint), &websocket.DialOptions{Subprotocols: []string{subprotocolTransportWS}, HTTPHeader: h})
			if !tc.allowed {
				if err == nil || res == nil || res.StatusCode != http.StatusForbidden {
					t.Fatalf("dial: %v, %+v; want 403", err, res)
				}
				return
			}
			if err != nil {
				t.Fatalf("dial: %v", err)
			}
			defer c.CloseNow()
			wc := &wsClient{t: t, c: c}
			wc.init()
			wc.alive()
		})
	}
}
