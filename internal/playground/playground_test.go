package playground

import (
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const endpoint = "/graphql"

// get sends one request to a fresh Handler(endpoint).
func get(t *testing.T, method, target string, header http.Header) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequestWithContext(t.Context(), method, target, nil)
	for k, v := range header {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	Handler(endpoint).ServeHTTP(rec, req)
	return rec
}

// headers picks the named headers of a response, for cmp.Diff.
func headers(rec *httptest.ResponseRecorder, names ...string) map[string]string {
	out := map[string]string{}
	for _, n := range names {
		out[n] = rec.Header().Get(n)
	}
	return out
}

func pageBody(t *testing.T) string {
	t.Helper()
	rec := get(t, http.MethodGet, endpoint, nil)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET %s: status %d, want 200", endpoint, rec.Code)
	}
	return rec.Body.String()
}

func TestPage(t *testing.T) {
	rec := get(t, http.MethodGet, endpoint, http.Header{"Accept": {"text/html"}})
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d, want 200", rec.Code)
	}
	want := map[string]string{
		"Content-Type":            "text/html; charset=utf-8",
		"Cache-Control":           "no-cache",
		"X-Content-Type-Options":  "nosniff",
		"Content-Security-Policy": contentSecurityPolicy,
	}
	if diff := cmp.Diff(want, headers(rec, "Content-Type", "Cache-Control", "X-Content-Type-Options", "Content-Security-Policy")); diff != "" {
		t.Errorf("headers (-want +got):\n%s", diff)
	}
	if rec.Header().Get("ETag") == "" {
		t.Error("no ETag")
	}
	csp := rec.Header().Get("Content-Security-Policy")
	for _, directive := range []string{"default-src 'self'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, directive+";") && !strings.HasSuffix(csp, directive) {
			t.Errorf("Content-Security-Policy %q lacks %q", csp, directive)
		}
	}
	for _, loose := range []string{"unsafe-inline", "unsafe-eval", "*", "data:", "http:", "https:"} {
		if strings.Contains(csp, loose) {
			t.Errorf("Content-Security-Policy %q allows %q", csp, loose)
		}
	}

	body := rec.Body.String()
	for _, s := range []string{
		`<meta name="graphql-endpoint" content="/graphql">`,
		`<textarea id="query"`,
		`<textarea id="variables"`,
		`<button id="run"`,
		`<label for="token">Token</label>`,
		`<input id="token" type="password"`,
	} {
		if !strings.Contains(body, s) {
			t.Errorf("page lacks %s", s)
		}
	}
}

// TestPageObeysItsPolicy checks what the Content-Security-Policy would block:
// inline scripts, event handler attributes and style attributes.
func TestPageObeysItsPolicy(t *testing.T) {
	body := pageBody(t)
	for _, m := range regexp.MustCompile(`(?is)<script([^>]*)>(.*?)</script>`).FindAllStringSubmatch(body, -1) {
		if !strings.Contains(m[1], "src=") || strings.TrimSpace(m[2]) != "" {
			t.Errorf("inline script: %s", m[0])
		}
	}
	for _, re := range []*regexp.Regexp{
		regexp.MustCompile(`(?i)<[^>]*\son[a-z]+\s*=`),
		regexp.MustCompile(`(?i)<[^>]*\sstyle\s*=`),
		regexp.MustCompile(`(?i)<style`),
		regexp.MustCompile(`(?i)javascript:`),
	} {
		if m := re.FindString(body); m != "" {
			t.Errorf("page has %q, which the policy blocks", m)
		}
	}
}

func TestEndpointIsEscaped(t *testing.T) {
	rec := httptest.NewRecorder()
	Handler(`/q?a="><script>alert(1)</script>`).ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/q", nil))
	body := rec.Body.String()
	if strings.Contains(body, "<script>alert") {
		t.Fatalf("endpoint not escaped:\n%s", body)
	}
	if !strings.Contains(body, `content="/q?a=&#34;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"`) {
		t.Errorf("endpoint not in the meta element as expected:\n%s", body)
	}
}

func TestAssets(t *testing.T) {
	tests := []struct {
		name        string
		contentType string
	}{
		{name: "playground.js", contentType: "text/javascript; charset=utf-8"},
		{name: "logic.js", contentType: "text/javascript; charset=utf-8"},
		{name: "playground.css", contentType: "text/css; charset=utf-8"},
		{name: "favicon.svg", contentType: "image/svg+xml"},
	}
	if len(tests) != len(assets) {
		t.Errorf("the table lists %d assets, the package embeds %d", len(tests), len(assets))
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, ok := assets[tt.name]
			if !ok {
				t.Fatalf("asset %s not embedded", tt.name)
			}
			for _, c := range []struct {
				query, cache string
			}{
				{query: "?asset=" + tt.name + "&v=" + a.Version, cache: "public, max-age=31536000, immutable"},
				{query: "?asset=" + tt.name, cache: "no-cache"},
				{query: "?asset=" + tt.name + "&v=stale", cache: "no-cache"},
			} {
				rec := get(t, http.MethodGet, endpoint+c.query, http.Header{"Accept": {"*/*"}})
				if rec.Code != http.StatusOK {
					t.Fatalf("GET %s: status %d, want 200", c.query, rec.Code)
				}
				want := map[string]string{
					"Content-Type":           tt.contentType,
					"Cache-Control":          c.cache,
					"X-Content-Type-Options": "nosniff",
					"ETag":                   a.ETag,
				}
				if diff := cmp.Diff(want, headers(rec, "Content-Type", "Cache-Control", "X-Content-Type-Options", "ETag")); diff != "" {
					t.Errorf("GET %s: headers (-want +got):\n%s", c.query, diff)
				}
				if rec.Body.String() != string(a.Body) {
					t.Errorf("GET %s: body differs from the embedded file", c.query)
				}
			}
		})
	}
}

// linkRE finds the values of src and href attributes.
var linkRE = regexp.MustCompile(`(?i)\s(?:src|href)\s*=\s*["']([^"']*)["']`)

func TestPageLinksResolve(t *testing.T) {
	body := pageBody(t)
	var linked []string
	for _, m := range linkRE.FindAllStringSubmatch(body, -1) {
		link := strings.ReplaceAll(m[1], "&amp;", "&")
		rec := get(t, http.MethodGet, endpoint+link, nil)
		if rec.Code != http.StatusOK {
			t.Errorf("page links %q: status %d", link, rec.Code)
		}
		if !strings.Contains(rec.Header().Get("Cache-Control"), "immutable") {
			t.Errorf("page links %q without its current version", link)
		}
		linked = append(linked, strings.TrimPrefix(strings.SplitN(link, "&", 2)[0], "?asset="))
	}
	var embedded []string
	for name := range assets {
		embedded = append(embedded, name)
	}
	slices.Sort(linked)
	slices.Sort(embedded)
	if diff := cmp.Diff(embedded, linked); diff != "" {
		t.Errorf("assets the page links (-embedded +linked):\n%s", diff)
	}
}

// svgNamespace is an XML namespace name in favicon.svg: an identifier that
// nothing fetches.
const svgNamespace = `xmlns="http://www.w3.org/2000/svg"`

func TestNoExternalReferences(t *testing.T) {
	files := map[string]string{"page": pageBody(t)}
	for name, a := range assets {
		files[name] = string(a.Body)
	}
	var (
		absolute = regexp.MustCompile(`(?i)\b[a-z][a-z0-9+.-]*://`)
		// A protocol-relative reference: //host after a quote, parenthesis or =.
		protocolRelative = regexp.MustCompile(`["'(=]\s*//[^/\s]`)
		cssURL           = regexp.MustCompile(`(?i)url\(\s*["']?([^"')]*)`)
		cssImport        = regexp.MustCompile(`(?i)@import`)
		jsImport         = regexp.MustCompile(`\bimport\s*\(|\bimport\s[^;\n]*\bfrom\b|\bimportScripts\b|\bnew\s+(?:Shared)?Worker\b|\bEventSource\b|\bWebSocket\b`)
	)
	for name, body := range files {
		t.Run(name, func(t *testing.T) {
			text := strings.ReplaceAll(body, svgNamespace, "")
			if m := absolute.FindString(text); m != "" {
				t.Errorf("has an absolute URL (%q)", m)
			}
			if m := protocolRelative.FindString(text); m != "" {
				t.Errorf("has a protocol-relative URL (%q)", m)
			}
			for _, m := range linkRE.FindAllStringSubmatch(text, -1) {
				if !strings.HasPrefix(m[1], "?asset=") && !strings.HasPrefix(m[1], "#") {
					t.Errorf("links %q, not one of its own assets", m[1])
				}
			}
			for _, m := range cssURL.FindAllStringSubmatch(text, -1) {
				if !strings.HasPrefix(m[1], "?asset=") && !strings.HasPrefix(m[1], "#") {
					t.Errorf("has url(%s), not one of its own assets", m[1])
				}
			}
			if m := cssImport.FindString(text); m != "" {
				t.Errorf("has %q", m)
			}
			if strings.HasSuffix(name, ".js") {
				if m := jsImport.FindString(text); m != "" {
					t.Errorf("loads code or opens a connection (%q)", m)
				}
			}
		})
	}
}

func TestUnknownAsset(t *testing.T) {
	for _, target := range []string{
		"?asset=",
		"?asset=nope.js",
		"?asset=page.html",
		"?asset=assets/logic.js",
		"?asset=../playground.go",
		"?asset=%00",
	} {
		t.Run(target, func(t *testing.T) {
			rec := get(t, http.MethodGet, endpoint+target, nil)
			if rec.Code != http.StatusNotFound {
				t.Errorf("status %d, want 404", rec.Code)
			}
			if got := rec.Header().Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("X-Content-Type-Options %q, want nosniff", got)
			}
		})
	}
}

func TestMethods(t *testing.T) {
	tests := []struct {
		name   string
		method string
		target string
		status int
		allow  string
	}{
		{name: "GET page", method: http.MethodGet, target: endpoint, status: http.StatusOK},
		{name: "HEAD page", method: http.MethodHead, target: endpoint, status: http.StatusOK},
		{name: "HEAD asset", method: http.MethodHead, target: endpoint + "?asset=playground.js", status: http.StatusOK},
		{name: "POST", method: http.MethodPost, target: endpoint, status: http.StatusMethodNotAllowed, allow: "GET, HEAD"},
		{name: "POST asset", method: http.MethodPost, target: endpoint + "?asset=playground.js", status: http.StatusMethodNotAllowed, allow: "GET, HEAD"},
		{name: "PUT", method: http.MethodPut, target: endpoint, status: http.StatusMethodNotAllowed, allow: "GET, HEAD"},
		{name: "DELETE", method: http.MethodDelete, target: endpoint, status: http.StatusMethodNotAllowed, allow: "GET, HEAD"},
		{name: "OPTIONS", method: http.MethodOptions, target: endpoint, status: http.StatusMethodNotAllowed, allow: "GET, HEAD"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := get(t, tt.method, tt.target, nil)
			if rec.Code != tt.status {
				t.Errorf("status %d, want %d", rec.Code, tt.status)
			}
			if got := rec.Header().Get("Allow"); got != tt.allow {
				t.Errorf("Allow %q, want %q", got, tt.allow)
			}
			if tt.method == http.MethodHead {
				if rec.Body.Len() != 0 {
					t.Errorf("HEAD answered with a %d-byte body", rec.Body.Len())
				}
				if rec.Header().Get("Content-Length") == "" {
					t.Error("HEAD answered without Content-Length")
				}
			}
		})
	}
}

func TestConditionalGet(t *testing.T) {
	for _, target := range []string{endpoint, endpoint + "?asset=logic.js"} {
		t.Run(target, func(t *testing.T) {
			first := get(t, http.MethodGet, target, nil)
			etag := first.Header().Get("ETag")
			rec := get(t, http.MethodGet, target, http.Header{"If-None-Match": {etag}})
			if rec.Code != http.StatusNotModified {
				t.Errorf("If-None-Match %s: status %d, want 304", etag, rec.Code)
			}
			if rec.Body.Len() != 0 {
				t.Errorf("304 with a %d-byte body", rec.Body.Len())
			}
		})
	}
}

func TestIsAssetRequest(t *testing.T) {
	tests := []struct {
		name   string
		target string
		want   bool
	}{
		{name: "page", target: "/graphql", want: false},
		{name: "GraphQL GET", target: "/graphql?query=%7Ba%7D&operationName=A", want: false},
		{name: "asset", target: "/graphql?asset=playground.js&v=1", want: true},
		{name: "empty asset", target: "/graphql?asset=", want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequestWithContext(t.Context(), http.MethodGet, tt.target, nil)
			if got := IsAssetRequest(req); got != tt.want {
				t.Errorf("IsAssetRequest(%s) = %v, want %v", tt.target, got, tt.want)
			}
		})
	}
}

// TestScriptElementIDs checks that every element playground.js looks up by
// id exists in the page.
func TestScriptElementIDs(t *testing.T) {
	body := pageBody(t)
	ids := map[string]bool{}
	for _, m := range regexp.MustCompile(`\sid="([^"]+)"`).FindAllStringSubmatch(body, -1) {
		ids[m[1]] = true
	}
	script := string(assets["playground.js"].Body)
	lookups := regexp.MustCompile(`\$\('([^']+)'\)`).FindAllStringSubmatch(script, -1)
	if len(lookups) == 0 {
		t.Fatal("found no $('id') lookups in playground.js")
	}
	for _, m := range lookups {
		if !ids[m[1]] {
			t.Errorf("playground.js looks up #%s, which the page lacks", m[1])
		}
	}
}

// node returns the path of the node binary, failing the test when there is
// none: the JavaScript checks are part of this package's tests.
func node(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node (Node.js 20 or newer) is needed to check the playground's JavaScript; make testdeps installs it with apt: %v", err)
	}
	return path
}

func TestJavaScriptParses(t *testing.T) {
	bin := node(t)
	for name := range assets {
		if !strings.HasSuffix(name, ".js") {
			continue
		}
		t.Run(name, func(t *testing.T) {
			out, err := exec.CommandContext(t.Context(), bin, "--check", filepath.Join("assets", name)).CombinedOutput()
			if err != nil {
				t.Errorf("node --check %s: %v\n%s", name, err, out)
			}
		})
	}
}

func TestJavaScriptLogic(t *testing.T) {
	cmd := exec.CommandContext(t.Context(), node(t), "--test", "--test-reporter=spec", filepath.Join("testdata", "logic.test.js"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test testdata/logic.test.js: %v\n%s", err, out)
	}
	if testing.Verbose() {
		t.Logf("%s", out)
	}
}

// TestTokenStaysInTab guards where the page keeps the bearer token: in
// sessionStorage, which ends with the tab, never in localStorage (the
// storage helper named storage) or a URL; it is sent only as a header.
func TestTokenStaysInTab(t *testing.T) {
	script := string(assets["playground.js"].Body)
	for _, want := range []string{"window.sessionStorage.setItem(key, value)", "tabStorage.set(TOKEN_KEY", "L.authHeaders(token)"} {
		if !strings.Contains(script, want) {
			t.Errorf("playground.js lacks %s", want)
		}
	}
	if m := regexp.MustCompile(`\bstorage\.\w+\(TOKEN_KEY|localStorage[^\n]*TOKEN_KEY|[?&]token=`).FindString(script); m != "" {
		t.Errorf("playground.js keeps or sends the token elsewhere: %q", m)
	}
}
