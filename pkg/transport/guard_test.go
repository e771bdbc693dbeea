package transport

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

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

// refuser is an Impersonator that lets its caller act as bob only.
type refuser struct{}

func (refuser) Impersonate(_ context.Context, caller *authn.User, h http.Header) (*authn.User, error) {
	if h.Get("Impersonate-User") == "bob" {
		return &authn.User{Name: "bob"}, nil
	}
	return nil, apierrors.NewForbidden(schema.GroupResource{Resource: "users"}, h.Get("Impersonate-User"),
		fmt.Errorf("User %q cannot impersonate resource \"users\" in API group \"\" at the cluster scope", caller.Name))
}

// TestGuardStatus: in front of the Kubernetes API, every refusal is a
// Kubernetes Status (kubectl prints its message); every request counts
// against the caller's rates, a watch as a subscription; impersonation
// makes the impersonated user the caller, and a refused one is 403.
func TestGuardStatus(t *testing.T) {
	f := newFixture(t)
	s := newServer(t, f.ix, f.tracker, Options{
		Authenticator: usersAuthenticator{"alice-token": "alice"},
		Impersonator:  refuser{},
		RateLimit:     RateLimit{QueriesPerSecond: 1, QueryBurst: 2, SubscriptionsPerSecond: 1, SubscriptionBurst: 1},
	})
	s.limits.now = newFakeClock().now
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, _ := authn.UserFrom(r.Context())
		w.Header().Set("X-User", u.Name)
		w.WriteHeader(http.StatusNoContent)
	})
	guarded := httptest.NewServer(s.GuardStatus(next))
	t.Cleanup(guarded.Close)
	alice := map[string]string{"Authorization": "Bearer alice-token"}
	asBob := map[string]string{"Authorization": "Bearer alice-token", "Impersonate-User": "bob"}
	asCarol := map[string]string{"Authorization": "Bearer alice-token", "Impersonate-User": "carol"}
	for _, tt := range []struct {
		name, query string
		header      map[string]string
		status      int
		reason      metav1.StatusReason
		user        string
	}{
		{"no token", "", nil, http.StatusUnauthorized, metav1.StatusReasonUnauthorized, ""},
		{"a list", "", alice, http.StatusNoContent, "", "alice"},
		{"a get as bob: his own budget", "", asBob, http.StatusNoContent, "", "bob"},
		{"as carol", "", asCarol, http.StatusForbidden, metav1.StatusReasonForbidden, ""},
		{"a watch: a subscription", "?watch=true", alice, http.StatusNoContent, "", "alice"},
		{"a second watch", "?watch=true", alice, http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests, ""},
		{"the burst's second list", "", alice, http.StatusNoContent, "", "alice"},
		{"over the rate", "", alice, http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests, ""},
	} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, guarded.URL+"/clusters/c1/api/v1/pods"+tt.query, nil)
		for k, v := range tt.header {
			req.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var st metav1.Status
		_ = json.NewDecoder(res.Body).Decode(&st)
		res.Body.Close()
		if res.StatusCode != tt.status || st.Reason != tt.reason || res.Header.Get("X-User") != tt.user {
			t.Errorf("%s: %d %+v (user %q); want %d %s (user %q)", tt.name, res.StatusCode, st, res.Header.Get("X-User"), tt.status, tt.reason, tt.user)
		}
		if tt.status >= 400 && (st.Kind != "Status" || st.Code != int32(tt.status) || st.Message == "") {
			t.Errorf("%s: not a Status: %+v", tt.name, st)
		}
		if tt.status == http.StatusTooManyRequests && res.Header.Get("Retry-After") == "" {
			t.Errorf("%s: no Retry-After", tt.name)
		}
		if tt.name == "as carol" && st.Message != `users "carol" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope` {
			t.Errorf("as carol: %q", st.Message)
		}
	}
}
