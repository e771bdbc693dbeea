package app_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/fleetcache/fleetcache/internal/app"
	"github.com/fleetcache/fleetcache/internal/testcluster"
)

// playgroundState is what the playground shows, read as the user sees it.
type playgroundState struct {
	Status       string `json:"status"`
	Result       string `json:"result"`
	Errors       string `json:"errors"` // "" while the error box is hidden
	Docs         string `json:"docs"`
	TokenInvalid string `json:"tokenInvalid"`
	Stored       string `json:"stored"`     // the token in sessionStorage
	LocalToken   bool   `json:"localToken"` // whether localStorage holds the token anywhere
}

const readPlayground = `(() => {
	const stored = sessionStorage.getItem('fleetcache.playground.token') ?? '';
	const errors = document.getElementById('errors');
	return JSON.stringify({
		status: document.getElementById('status').textContent,
		result: document.getElementById('result').textContent,
		errors: errors.hidden ? '' : errors.textContent,
		docs: document.getElementById('docs-body').textContent,
		tokenInvalid: document.getElementById('token').getAttribute('aria-invalid'),
		stored,
		localToken: Object.entries(localStorage).some(([k, v]) => k.includes('token') || (stored !== '' && v.includes(stored))),
	});
})()`

func playground(t *testing.T, ctx context.Context) (playgroundState, string) {
	t.Helper()
	out, err := chromedp.Run(ctx, chromedp.Evaluate[string](readPlayground))
	if err != nil {
		t.Fatalf("read the playground: %v", err)
	}
	var s playgroundState
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("decode %s: %v", out, err)
	}
	return s, out
}

// runQuery replaces the playground's query and presses Run.
func runQuery(t *testing.T, ctx context.Context, query string) {
	t.Helper()
	set := `(() => { const q = document.getElementById('query'); q.value = ` + jsString(query) + `;
		q.dispatchEvent(new Event('input', { bubbles: true })); return true; })()`
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](set)); err != nil {
		t.Fatalf("set the query: %v", err)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#run"))); err != nil {
		t.Fatalf("run the query: %v", err)
	}
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestPlaygroundInBrowser runs a query in the playground in headless
// chromium against a real aggregator: without authentication it works with
// an empty token field; with authentication the page says that a token is
// needed and where to enter it, and once alice's token is in the Token
// field the query and the documentation's introspection succeed.
func TestPlaygroundInBrowser(t *testing.T) {
	env := testbed.Env(t)
	const query = `{ clusters { name } }`
	hasC1 := func(s playgroundState) bool {
		return strings.HasPrefix(s.Status, "200") && strings.Contains(s.Result, `"name": "c1"`) && s.Errors == ""
	}
	// The documentation lists the root types once introspection succeeded.
	schemaLoaded := func(s playgroundState) bool { return strings.Contains(s.Docs, "Root types") }

	t.Run("without authentication", func(t *testing.T) {
		ctx, problems := browser(t)
		opts := probeOptions()
		opts.Playground = app.PlaygroundBasic
		_, url := serveClusters(t, opts, "c1")
		if err := chromedp.Do(ctx, chromedp.Navigate(url+"/graphql")); err != nil {
			t.Fatalf("open the playground: %v", err)
		}
		testcluster.Eventually(t, 30*time.Second, "the schema loaded", func() (bool, string) {
			s, raw := playground(t, ctx)
			return schemaLoaded(s), raw
		})
		runQuery(t, ctx, query)
		testcluster.Eventually(t, 30*time.Second, "the result naming c1", func() (bool, string) {
			s, raw := playground(t, ctx)
			return hasC1(s) && s.TokenInvalid == "false" && s.Stored == "", raw
		})
		for _, p := range problems() {
			t.Errorf("page: %s", p)
		}
	})

	t.Run("with authentication", func(t *testing.T) {
		ctx, problems := browser(t)
		opts := probeOptions()
		opts.Playground = app.PlaygroundBasic
		opts.Auth = app.AuthOptions{Authn: app.AuthnTokenReview, AuthnConfig: env.Cluster("c1").AdminConfig()}
		_, url := serveClusters(t, opts, "c1")
		if err := chromedp.Do(ctx, chromedp.Navigate(url+"/graphql")); err != nil {
			t.Fatalf("open the playground: %v", err)
		}
		testcluster.Eventually(t, 30*time.Second, "the docs asking for a token", func() (bool, string) {
			s, raw := playground(t, ctx)
			return strings.Contains(s.Docs, "Token field") && s.TokenInvalid == "true", raw
		})

		runQuery(t, ctx, query)
		testcluster.Eventually(t, 30*time.Second, "the result saying a token is needed", func() (bool, string) {
			s, raw := playground(t, ctx)
			return strings.HasPrefix(s.Status, "401") && strings.Contains(s.Errors, "Not authenticated") &&
				strings.Contains(s.Errors, "Token field") && !strings.Contains(s.Result, "c1"), raw
		})

		if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#token"), "not-a-token")); err != nil {
			t.Fatal(err)
		}
		runQuery(t, ctx, query)
		testcluster.Eventually(t, 30*time.Second, "the result refusing the wrong token", func() (bool, string) {
			s, raw := playground(t, ctx)
			return strings.HasPrefix(s.Status, "401") && strings.Contains(s.Errors, "did not accept the token") &&
				s.TokenInvalid == "true" && !strings.Contains(s.Result, "c1"), raw
		})

		alice := token(t, "alice")
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('token').value = ''`)); err != nil {
			t.Fatal(err)
		}
		if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#token"), alice)); err != nil {
			t.Fatal(err)
		}
		// Run moves the focus out of the token field, which reloads the
		// schema with the new token.
		runQuery(t, ctx, query)
		testcluster.Eventually(t, 30*time.Second, "the result naming c1 and the schema loaded", func() (bool, string) {
			s, raw := playground(t, ctx)
			return hasC1(s) && schemaLoaded(s) && s.TokenInvalid == "false", raw
		})
		if s, raw := playground(t, ctx); s.Stored != alice || s.LocalToken {
			t.Errorf("the token is not kept in sessionStorage only: %s", raw)
		}
		for _, p := range problems() {
			t.Errorf("page: %s", p)
		}
	})
}
