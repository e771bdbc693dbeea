package transport

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetcache/fleetcache/pkg/authn"
)

// TestGuard: what Guard puts in front of another protocol is what /graphql
// asks of a plain request: a token (401 without one, with
// WWW-Authenticate), the caller in the context, and each POST counted
// against the caller's query rate (429 over it), shared with /graphql.
func TestGuard(t *testing.T) {
	f := newFixture(t)
	s := newServer(t, f.ix, f.tracker, Options{
		Authenticator: usersAuthenticator{"alice-token": "alice"},
		RateLimit:     RateLimit{QueriesPerSecond: 1, QueryBurst: 2},
	})
	s.limits.now = newFakeClock().now
	var seen []string
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, _ := authn.UserFrom(r.Context())
		seen = append(seen, r.Method+" "+u.Name)
		w.WriteHeader(http.StatusNoContent)
	})
	guarded := httptest.NewServer(s.Guard(next))
	t.Cleanup(guarded.Close)
	graphql := serve(t, s)
	alice := map[string]string{"Authorization": "Bearer alice-token", "Content-Type": "application/json"}

	for _, tt := range []struct {
		name, method, url string
		header            map[string]string
		status            int
		codes             []string
	}{
		{"no token", http.MethodPost, guarded.URL, nil, http.StatusUnauthorized, []string{CodeUnauthenticated}},
		{"a bad token", http.MethodPost, guarded.URL, map[string]string{"Authorization": "Bearer nope"}, http.StatusUnauthorized, []string{CodeUnauthenticated}},
		{"a POST", http.MethodPost, guarded.URL, alice, http.StatusNoContent, nil},
		{"a GET is not counted", http.MethodGet, guarded.URL, alice, http.StatusNoContent, nil},
		{"a query on /graphql, the second of the burst", http.MethodPost, graphql, alice, http.StatusOK, nil},
		{"a POST over the rate", http.MethodPost, guarded.URL, alice, http.StatusTooManyRequests, []string{CodeRateLimited}},
	} {
		body := `{}`
		if tt.url == graphql {
			body = `{"query":"{ clusters { name } }"}`
		}
		r, b := do(t, tt.method, tt.url, tt.header, body)
		if r.Status != tt.status || !cmp.Equal(r.Codes, tt.codes) {
			t.Errorf("%s: %+v %s; want %d %v", tt.name, r, b, tt.status, tt.codes)
		}
	}
	if diff := cmp.Diff([]string{"POST alice", "GET alice"}, seen); diff != "" {
		t.Errorf("requests that reached the handler (-want +got):\n%s", diff)
	}
}
