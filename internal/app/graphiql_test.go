package app_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/fleetcache/fleetcache/internal/app"
	"github.com/fleetcache/fleetcache/internal/browsertest"
	"github.com/fleetcache/fleetcache/internal/graphiql"
	"github.com/fleetcache/fleetcache/internal/testcluster"
)

// TestGraphiQLWithAuthentication opens GraphiQL on an aggregator that
// authenticates callers, in headless chromium: without a token the page
// says the server needs one; with alice's token entered in the Token field
// a query answers over HTTP and a clusterHealth subscription over
// WebSocket (the token in connection_init), and the token is kept in
// sessionStorage only. (GraphiQL without authentication, autocompletion and
// live events: internal/demo's TestRun/graphiql.)
func TestGraphiQLWithAuthentication(t *testing.T) {
	env := testbed.Env(t)
	if !graphiql.Built() {
		t.Fatal("GraphiQL is not built into this test binary: run make ui (make test does) before go test")
	}
	ctx, problems := browser(t)
	opts := probeOptions()
	opts.Auth = app.AuthOptions{Authn: app.AuthnTokenReview, AuthnConfig: env.Cluster("c1").AdminConfig()}
	_, url := serveClusters(t, opts, "c1")
	if err := chromedp.Do(ctx, chromedp.Navigate(url+"/graphql")); err != nil {
		t.Fatalf("open GraphiQL: %v", err)
	}
	// GraphiQL introspects the schema at once: the server refuses it.
	testcluster.Eventually(t, 30*time.Second, "the page asking for a token", func() (bool, string) {
		s, raw := browsertest.ReadGraphiQL(t, ctx)
		return strings.Contains(s.TokenHint, "needs a bearer token (HTTP 401)"), raw
	})

	alice := token(t, "alice")
	if err := chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS("#fc-token"), "Bearer "+alice),
		chromedp.Click(chromedp.CSS(".fc-token button[type=submit]")),
	); err != nil {
		t.Fatalf("enter the token: %v", err)
	}
	browsertest.SetGraphiQLQuery(t, ctx, "{ clusters { name status } }")
	browsertest.RunGraphiQL(t, ctx)
	testcluster.Eventually(t, 30*time.Second, "c1 in the response, with alice's token", func() (bool, string) {
		s, raw := browsertest.ReadGraphiQL(t, ctx)
		return strings.Contains(s.Response, `"name": "c1"`) && strings.Contains(s.TokenHint, "token is set"), raw
	})

	browsertest.SetGraphiQLQuery(t, ctx, "subscription { clusterHealth { name status } }")
	browsertest.RunGraphiQL(t, ctx)
	testcluster.Eventually(t, 30*time.Second, "c1's health from the subscription", func() (bool, string) {
		s, raw := browsertest.ReadGraphiQL(t, ctx)
		return s.Running && strings.Contains(s.Response, `"clusterHealth"`) && strings.Contains(s.Response, `"c1"`), raw
	})
	browsertest.RunGraphiQL(t, ctx) // stops it
	if s, raw := browsertest.ReadGraphiQL(t, ctx); s.StoredToken != alice || s.LocalToken {
		t.Errorf("the token is not kept in sessionStorage only: %s", raw)
	}
	for _, p := range problems() {
		t.Errorf("page: %s", p)
	}
}
