package app_test

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/fleetcache/fleetcache/internal/app"
	"github.com/fleetcache/fleetcache/internal/browsertest"
	"github.com/fleetcache/fleetcache/internal/graphiql"
	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/graphql"
	"github.com/fleetcache/fleetcache/pkg/openapi"
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

// TestGraphiQLCompletesTypedFields types a typed query into GraphiQL in
// headless chromium, on an aggregator whose clusters' Pods are typed from
// their OpenAPI: in a Pod's spec, "con" offers containers (which only the
// typed schema has), and a misspelt field is marked as an error, with
// the schema's suggestion.
func TestGraphiQLCompletesTypedFields(t *testing.T) {
	if !graphiql.Built() {
		t.Fatal("GraphiQL is not built into this test binary: run make ui (make test does) before go test")
	}
	ctx, problems := browser(t)
	browsertest.Viewport(t, ctx, 1366, 768, false)
	opts := probeOptions()
	opts.Informers.Resources = []string{"pods"}
	opts.Schemas = openapi.Options{Interval: 300 * time.Millisecond}
	agg, url := serveClusters(t, opts, "c1")
	// The typed schema is there before GraphiQL introspects it.
	testcluster.Eventually(t, 30*time.Second, "the typed Pod in the schema", func() (bool, string) {
		res := agg.API.Execute(t.Context(), graphql.Request{Query: `{ __type(name: "PodSpec") { name } }`})
		b, _ := json.Marshal(res)
		return strings.Contains(string(b), `"PodSpec"`), string(b)
	})
	if err := chromedp.Do(ctx, chromedp.Navigate(url+"/graphql")); err != nil {
		t.Fatalf("open GraphiQL: %v", err)
	}
	testcluster.Eventually(t, 30*time.Second, "GraphiQL's editors", func() (bool, string) {
		s, raw := browsertest.ReadGraphiQL(t, ctx)
		return s.Query != "", raw
	})

	// Typing "n" after "co" in a Pod's spec: the list, filtered as the
	// user types, offers containers first once the schema is loaded.
	const prefix = "{ pods { edges { node { spec { co"
	browsertest.SetGraphiQLQuery(t, ctx, prefix)
	testcluster.Eventually(t, 30*time.Second, "containers offered for spec { con", func() (bool, string) {
		browsertest.TypeGraphiQL(t, ctx, "n")
		s, raw := browsertest.ReadGraphiQL(t, ctx)
		if len(s.Hints) == 0 || s.Hints[0] != "containers" {
			browsertest.SetGraphiQLQuery(t, ctx, prefix) // the schema may still be loading: again
			return false, raw
		}
		return true, raw
	})
	browsertest.Screenshot(t, ctx, filepath.Join(browsertest.ScreenshotDir(t), "graphiql-typed-completion.png"))

	// A typo in a nested field is underlined, with the schema's message.
	browsertest.SetGraphiQLQuery(t, ctx, "{ pods { edges { node { spec { containers { imag } } } } } }")
	testcluster.Eventually(t, 30*time.Second, "imag marked as an error", func() (bool, string) {
		s, raw := browsertest.ReadGraphiQL(t, ctx)
		return slices.Contains(s.Errors, `imag: Cannot query field "imag" on type "Container". Did you mean "image"?`), raw
	})
	// And the same query spelt right has no mark.
	browsertest.SetGraphiQLQuery(t, ctx, "{ pods { edges { node { spec { containers { image } } } } } }")
	testcluster.Eventually(t, 30*time.Second, "no error marks", func() (bool, string) {
		s, raw := browsertest.ReadGraphiQL(t, ctx)
		return len(s.Errors) == 0 && strings.Contains(s.Query, "image }"), raw
	})
	for _, p := range problems() {
		t.Errorf("page: %s", p)
	}
}
