package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/go-cmp/cmp"

	"github.com/fleetcache/fleetcache/internal/app"
	"github.com/fleetcache/fleetcache/pkg/graphql"
	"github.com/fleetcache/fleetcache/pkg/transport"
)

// limitsResponse is what the tests of this file read of an answer.
type limitsResponse struct {
	status  int
	codes   []string
	message string
}

// postQuery posts a query to the aggregator at addr with a bearer token
// ("": none).
func postQuery(t *testing.T, addr, token, query string) limitsResponse {
	t.Helper()
	r, err := tryQuery(t.Context(), addr, token, query)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// tryQuery is postQuery for other goroutines than the test's.
func tryQuery(ctx context.Context, addr, token, query string) (limitsResponse, error) {
	body, err := json.Marshal(map[string]string{"query": query})
	if err != nil {
		return limitsResponse{}, err
	}
	status, b, err := send(ctx, http.MethodPost, "http://"+addr+"/graphql", token, body)
	if err != nil {
		return limitsResponse{}, err
	}
	var r struct {
		Errors []struct {
			Message    string
			Extensions struct{ Code string }
		}
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return limitsResponse{}, fmt.Errorf("decode %s: %w", b, err)
	}
	out := limitsResponse{status: status}
	for _, e := range r.Errors {
		out.codes = append(out.codes, e.Extensions.Code)
		out.message += e.Message
	}
	return out, nil
}

// wsOperation runs one operation over a new WebSocket as the owner of
// token and returns the codes of its errors: of the error message, or of
// the first next message's payload.
func wsOperation(t *testing.T, addr, token, query string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws://"+addr+"/graphql", &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	c.SetReadLimit(-1)
	init := `{"type":"connection_init"}`
	if token != "" {
		init = fmt.Sprintf(`{"type":"connection_init","payload":{"authorization":"Bearer %s"}}`, token)
	}
	sub, _ := json.Marshal(map[string]any{"type": "subscribe", "id": "1", "payload": map[string]string{"query": query}})
	for _, msg := range []string{init, string(sub)} {
		if err := c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
			t.Fatal(err)
		}
	}
	for {
		_, data, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		var m struct {
			Type    string
			Payload json.RawMessage
		}
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		type gqlError struct{ Extensions struct{ Code string } }
		var errs []gqlError
		switch m.Type {
		case "error":
			if err := json.Unmarshal(m.Payload, &errs); err != nil {
				t.Fatal(err)
			}
		case "next":
			var p struct{ Errors []gqlError }
			if err := json.Unmarshal(m.Payload, &p); err != nil {
				t.Fatal(err)
			}
			errs = p.Errors
		default:
			continue // connection_ack, ping
		}
		codes := []string{}
		for _, e := range errs {
			codes = append(codes, e.Extensions.Code)
		}
		return codes
	}
}

// startAuthenticated runs an aggregator over c1 with the options of the
// command line args, authenticating by c1.
func startAuthenticated(t *testing.T, args ...string) (string, app.Options) {
	t.Helper()
	env := testbed.Env(t)
	cfg, err := app.ParseArgs(args, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	opts := cfg.Options()
	kubeconfig := filepath.Join(t.TempDir(), "config")
	if err := env.WriteKubeconfig(kubeconfig, "admin", env.Cluster("c1")); err != nil {
		t.Fatal(err)
	}
	opts.Kubeconfigs = []string{kubeconfig}
	if opts.Auth.Authn == app.AuthnTokenReview {
		opts.Auth.AuthnConfig = env.Cluster("c1").AdminConfig()
	}
	return startRun(t, opts), opts
}

func userToken(tb testing.TB, user string) string {
	return testbed.Env(tb).Cluster("c1").UserConfig(user).BearerToken
}

// TestRateLimitPerUserThroughAggregator runs the command's rate limits on
// a real aggregator whose callers a real cluster authenticates.
func TestRateLimitPerUserThroughAggregator(t *testing.T) {
	const query = `{ clusters { name } }`

	t.Run("each user has a budget", func(t *testing.T) {
		// A query every 100 s: the burst of 3 is all a user has here.
		addr, _ := startAuthenticated(t, "--rate-limit-queries-per-second", "0.01", "--rate-limit-query-burst", "3")
		for _, user := range []string{"alice", "bob"} {
			for i := range 3 {
				if r := postQuery(t, addr, userToken(t, user), query); r.status != http.StatusOK || len(r.codes) > 0 {
					t.Fatalf("%s's query %d: %+v", user, i+1, r)
				}
			}
			r := postQuery(t, addr, userToken(t, user), query)
			if r.status != http.StatusTooManyRequests || !cmp.Equal(r.codes, []string{transport.CodeRateLimited}) || !strings.Contains(r.message, "this user may send") {
				t.Errorf("%s's fourth query: %+v, want 429 %s for the user", user, r, transport.CodeRateLimited)
			}
			// The budget is the user's over a WebSocket too.
			if diff := cmp.Diff([]string{transport.CodeRateLimited}, wsOperation(t, addr, userToken(t, user), query)); diff != "" {
				t.Errorf("%s's query over a WebSocket (-want +got):\n%s", user, diff)
			}
		}
		// carol, from the same address, still has her whole budget.
		if diff := cmp.Diff([]string{}, wsOperation(t, addr, userToken(t, "carol"), query)); diff != "" {
			t.Errorf("carol's query over a WebSocket (-want +got):\n%s", diff)
		}
	})

	t.Run("a portal backend at 2,000 queries a second", func(t *testing.T) {
		addr, opts := startAuthenticated(t)
		// The configuration: at least 2,000 a second, and a second's worth
		// at once.
		if l := opts.Transport.RateLimit; l.QueriesPerSecond < 2000 || l.QueryBurst < 2000 {
			t.Fatalf("the command's rate limit %+v throttles a user at 2,000 queries/s", l)
		}
		// The running server: 2,000 queries of one user as fast as they
		// go, a second's worth whatever the machine's speed, none refused.
		const queries, workers = 2000, 4
		var mu sync.Mutex
		refused := map[string]int{} // by status and codes, or error
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for range queries / workers {
					r, err := tryQuery(t.Context(), addr, userToken(t, "alice"), query)
					if err != nil || r.status != http.StatusOK || len(r.codes) > 0 {
						mu.Lock()
						refused[fmt.Sprint(r.status, r.codes, err)]++
						mu.Unlock()
					}
				}
			})
		}
		wg.Wait()
		if len(refused) > 0 {
			t.Errorf("of %d queries of one user, refused: %v", queries, refused)
		}
	})

	t.Run("without authentication, no limit unless configured", func(t *testing.T) {
		cfg, err := app.ParseArgs([]string{"--authn=none"}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		agg, err := app.New(cfg.Options())
		if err != nil {
			t.Fatal(err)
		}
		if l := agg.Transport.Options().RateLimit; l != (transport.RateLimit{}) {
			t.Errorf("the unauthenticated server's rate limit: %+v, want none", l)
		}
		// Configured, it applies per client address.
		addr, _ := startAuthenticated(t, "--authn=none", "--rate-limit-queries-per-second", "0.01", "--rate-limit-query-burst", "2")
		for i := range 2 {
			if r := postQuery(t, addr, "", query); r.status != http.StatusOK {
				t.Fatalf("query %d: %+v", i+1, r)
			}
		}
		if r := postQuery(t, addr, "", query); r.status != http.StatusTooManyRequests || !strings.Contains(r.message, "this client address may send") {
			t.Errorf("third query: %+v, want 429 for the address", r)
		}
	})
}

// TestQueryTooComplexThroughAggregator sends the hundred pages to a
// real aggregator: refused before it runs, over HTTP and WebSocket, while a
// page within the cost runs.
func TestQueryTooComplexThroughAggregator(t *testing.T) {
	addr, _ := startAuthenticated(t)
	var b strings.Builder
	b.WriteString("{")
	for i := range 100 {
		fmt.Fprintf(&b, " a%d: resources(first: 1000) { edges { node { object } } }", i)
	}
	b.WriteString(" }")
	hundredPages := b.String()

	r := postQuery(t, addr, userToken(t, "admin"), hundredPages)
	if !cmp.Equal(r.codes, []string{graphql.CodeQueryTooComplex}) || !strings.Contains(r.message, "100,000 objects, over the limit of 10,000") {
		t.Errorf("hundred pages over HTTP: %+v, want %s with the cost and the limit", r, graphql.CodeQueryTooComplex)
	}
	if diff := cmp.Diff([]string{graphql.CodeQueryTooComplex}, wsOperation(t, addr, userToken(t, "admin"), hundredPages)); diff != "" {
		t.Errorf("hundred pages over a WebSocket (-want +got):\n%s", diff)
	}
	// One event holds 1 + 5 + 25 + … + 5⁶ = 19,531 objects by the cost's
	// estimate of children.
	subscription := `subscription { resourceEvents { resource { children { children { children { children { children { children { name } } } } } } } } }`
	if diff := cmp.Diff([]string{graphql.CodeQueryTooComplex}, wsOperation(t, addr, userToken(t, "admin"), subscription)); diff != "" {
		t.Errorf("a subscription over the cost (-want +got):\n%s", diff)
	}
	if r := postQuery(t, addr, userToken(t, "admin"), `{ a: resources(first: 1000) { edges { node { object } } } }`); r.status != http.StatusOK || len(r.codes) > 0 {
		t.Errorf("one page: %+v", r)
	}
}
