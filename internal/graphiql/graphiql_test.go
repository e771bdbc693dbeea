package graphiql

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/fleetcache/fleetcache/internal/webasset"
)

// testBundle stands in for make ui's files, so that these tests do not
// depend on whether the bundle was built. GraphiQL itself is tested in a
// browser against the demo (internal/demo/graphiql_test.go).
func testBundle() map[string]webasset.File {
	return map[string]webasset.File{
		"graphiql.js":           webasset.New([]byte("console.log('graphiql')"), "text/javascript; charset=utf-8"),
		"graphiql.css":          webasset.New([]byte(".graphiql-container{}"), "text/css; charset=utf-8"),
		"graphiql.js.LEGAL.txt": webasset.New([]byte("MIT"), "text/plain; charset=utf-8"),
	}
}

func get(t *testing.T, h http.Handler, method, target string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, target, nil))
	return rec
}

func TestHandler(t *testing.T) {
	files := testBundle()
	h := newHandler(files, "/graphql")
	page := get(t, h, http.MethodGet, "/graphql")
	if page.Code != http.StatusOK || page.Header().Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("page: %d %q", page.Code, page.Header().Get("Content-Type"))
	}
	body := page.Body.String()
	if !strings.Contains(body, `<meta name="graphql-endpoint" content="/graphql">`) {
		t.Errorf("the page does not name the endpoint:\n%s", body)
	}
	links := regexp.MustCompile(`(?:src|href)="(\?asset=[^"]+)"`).FindAllStringSubmatch(body, -1)
	if len(links) != 2 {
		t.Fatalf("the page links %d assets, want the script and the style sheet:\n%s", len(links), body)
	}
	for _, l := range links {
		target := "/graphql" + strings.ReplaceAll(l[1], "&amp;", "&")
		rec := get(t, h, http.MethodGet, target)
		if rec.Code != http.StatusOK || !strings.Contains(rec.Header().Get("Cache-Control"), "immutable") {
			t.Errorf("%s: %d, Cache-Control %q; want 200 and immutable", target, rec.Code, rec.Header().Get("Cache-Control"))
		}
	}

	tests := []struct {
		name, method, target string
		wantStatus           int
		wantCache            string
	}{
		{name: "licenses", method: http.MethodGet, target: "/graphql?asset=graphiql.js.LEGAL.txt", wantStatus: 200, wantCache: "no-cache"},
		{name: "old version", method: http.MethodGet, target: "/graphql?asset=graphiql.js&v=0000", wantStatus: 200, wantCache: "no-cache"},
		{name: "head", method: http.MethodHead, target: "/graphql", wantStatus: 200, wantCache: "no-cache"},
		{name: "unknown asset", method: http.MethodGet, target: "/graphql?asset=BUILD.txt", wantStatus: 404},
		{name: "post", method: http.MethodPost, target: "/graphql", wantStatus: 405},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := get(t, h, tt.method, tt.target)
			if rec.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d", rec.Code, tt.wantStatus)
			}
			if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self';") {
				t.Errorf("Content-Security-Policy %q lets scripts from elsewhere run", csp)
			}
			if tt.wantCache != "" && rec.Header().Get("Cache-Control") != tt.wantCache {
				t.Errorf("Cache-Control %q, want %q", rec.Header().Get("Cache-Control"), tt.wantCache)
			}
		})
	}
}

// TestHandlerWithoutBundle: a binary built without make ui says how to
// build GraphiQL, on the page and for its assets.
func TestHandlerWithoutBundle(t *testing.T) {
	files := testBundle()
	delete(files, "graphiql.css")
	h := newHandler(files, "/graphql")
	page := get(t, h, http.MethodGet, "/graphql")
	if page.Code != http.StatusOK || !strings.Contains(page.Body.String(), "make build") {
		t.Errorf("page: %d %s", page.Code, page.Body)
	}
	if rec := get(t, h, http.MethodGet, "/graphql?asset=graphiql.js"); rec.Code != http.StatusNotFound {
		t.Errorf("an asset of an incomplete bundle: %d, want 404", rec.Code)
	}
}
