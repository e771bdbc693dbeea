package demo

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/fleetcache/fleetcache/internal/browsertest"
	"github.com/fleetcache/fleetcache/internal/graphiql"
	"github.com/fleetcache/fleetcache/internal/testcluster"
)

// testGraphiQL opens GraphiQL on the running demo in headless chromium:
// typing in the query editor offers the schema's fields to complete, a
// query runs, and a resourceEvents subscription shows the churn's events
// one after the other, over graphql-ws.
func testGraphiQL(t *testing.T, base string) {
	if !graphiql.Built() {
		t.Fatal("GraphiQL is not built into this test binary: run make ui (make test does) before go test")
	}
	ctx, problems := browsertest.New(t)
	browsertest.Viewport(t, ctx, 1400, 900, false)
	shots := browsertest.ScreenshotDir(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/graphql")); err != nil {
		t.Fatalf("open GraphiQL: %v", err)
	}
	testcluster.Eventually(t, 30*time.Second, "GraphiQL's editors", func() (bool, string) {
		s, raw := browsertest.ReadGraphiQL(t, ctx)
		return strings.Contains(s.Query, "clusters"), raw
	})

	// Autocompletion: typing "clu" at the top level offers "clusters",
	// which needs the schema GraphiQL introspected; Enter takes it.
	browsertest.SetGraphiQLQuery(t, ctx, "{\n  ")
	testcluster.Eventually(t, 30*time.Second, "completions of the typed field name", func() (bool, string) {
		// Typing again until the list shows: the schema may still be loading.
		if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS(".graphiql-query-editor .CodeMirror textarea"), "c")); err != nil {
			t.Fatalf("type: %v", err)
		}
		s, raw := browsertest.ReadGraphiQL(t, ctx)
		if len(s.Hints) == 0 {
			browsertest.SetGraphiQLQuery(t, ctx, "{\n  ")
		}
		return len(s.Hints) > 0, raw
	})
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS(".graphiql-query-editor .CodeMirror textarea"), "lu")); err != nil {
		t.Fatalf("type: %v", err)
	}
	testcluster.Eventually(t, 10*time.Second, `"cluster" and "clusters" offered for "clu"`, func() (bool, string) {
		s, raw := browsertest.ReadGraphiQL(t, ctx)
		return slices.Equal(s.Hints, []string{"cluster", "clusters"}), raw
	})
	browsertest.Screenshot(t, ctx, filepath.Join(shots, "graphiql-autocomplete.png"))
	// The second entry, clusters, taken with the keyboard.
	if err := chromedp.Do(ctx, chromedp.KeyEvent(kb.ArrowDown), chromedp.KeyEvent("\r")); err != nil {
		t.Fatalf("take the completion: %v", err)
	}
	testcluster.Eventually(t, 10*time.Second, "the completion in the editor", func() (bool, string) {
		s, raw := browsertest.ReadGraphiQL(t, ctx)
		return strings.Contains(s.Query, "  clusters"), raw
	})

	browsertest.SetGraphiQLQuery(t, ctx, "{ clusters { name status objectCount } }")
	browsertest.RunGraphiQL(t, ctx)
	testcluster.Eventually(t, 30*time.Second, "the demo clusters in the response", func() (bool, string) {
		s, raw := browsertest.ReadGraphiQL(t, ctx)
		return strings.Contains(s.Response, `"prod-eu"`) && strings.Contains(s.Response, `"staging"`) && strings.Contains(s.Response, "SYNCED"), raw
	})

	// A subscription over graphql-ws: the response shows each event as it
	// comes, so it changes while the churn goes on.
	browsertest.SetGraphiQLQuery(t, ctx, `subscription { resourceEvents(filter: {kinds: ["Pod", "ConfigMap", "Widget"]}) { type cursor resource { cluster kind name } } }`)
	browsertest.RunGraphiQL(t, ctx)
	seen := map[string]bool{}
	testcluster.Eventually(t, 60*time.Second, "three different live events in the response", func() (bool, string) {
		s, raw := browsertest.ReadGraphiQL(t, ctx)
		if strings.Contains(s.Response, `"resourceEvents"`) && strings.Contains(s.Response, `"cursor"`) {
			seen[s.Response] = true
		}
		return len(seen) >= 3 && s.Running, raw
	})
	browsertest.Screenshot(t, ctx, filepath.Join(shots, "graphiql-subscription.png"))
	browsertest.RunGraphiQL(t, ctx) // stops it
	testcluster.Eventually(t, 10*time.Second, "the subscription stopped", func() (bool, string) {
		s, raw := browsertest.ReadGraphiQL(t, ctx)
		return !s.Running, raw
	})
	for _, p := range problems() {
		t.Errorf("page: %s", p)
	}
}
