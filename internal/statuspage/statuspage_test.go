package statuspage_test

import (
	"bytes"
	"encoding/binary"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/fleetcache/fleetcache/internal/statuspage"
)

// The page's behaviour in a browser is tested in internal/app against
// real clusters; this tests what the handler serves.
func TestHandler(t *testing.T) {
	tests := []struct {
		name        string
		method      string
		path        string
		wantStatus  int
		wantType    string
		wantContain string
	}{
		{name: "page", method: http.MethodGet, path: "/", wantStatus: 200, wantType: "text/html; charset=utf-8", wantContain: `<div id="clusters"`},
		{name: "page has the token form", method: http.MethodGet, path: "/", wantStatus: 200, wantType: "text/html; charset=utf-8", wantContain: `<input id="token" name="token" type="password"`},
		{name: "page head", method: http.MethodHead, path: "/", wantStatus: 200, wantType: "text/html; charset=utf-8"},
		{name: "script", method: http.MethodGet, path: statuspage.AssetPrefix + "status.js", wantStatus: 200, wantType: "text/javascript; charset=utf-8", wantContain: "clusterHealth"},
		{name: "style sheet", method: http.MethodGet, path: statuspage.AssetPrefix + "status.css", wantStatus: 200, wantType: "text/css; charset=utf-8", wantContain: ".badge-disconnected"},
		{name: "page under the asset prefix", method: http.MethodGet, path: statuspage.AssetPrefix + "index.html", wantStatus: 404},
		{name: "unknown asset", method: http.MethodGet, path: statuspage.AssetPrefix + "nope.js", wantStatus: 404},
		{name: "post", method: http.MethodPost, path: "/", wantStatus: 405},
	}
	h := statuspage.Handler()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(tt.method, tt.path, nil))
			if rec.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", rec.Code, tt.wantStatus, rec.Body)
			}
			if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
				t.Errorf("Content-Security-Policy %q does not restrict scripts to the origin", csp)
			}
			if tt.wantStatus != 200 {
				return
			}
			if got := rec.Header().Get("Content-Type"); got != tt.wantType {
				t.Errorf("Content-Type %q, want %q", got, tt.wantType)
			}
			if !strings.Contains(rec.Body.String(), tt.wantContain) {
				t.Errorf("body does not contain %q", tt.wantContain)
			}
		})
	}
}

func TestConditionalGet(t *testing.T) {
	h := statuspage.Handler()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	etag := rec.Header().Get("ETag")
	if etag == "" {
		t.Fatal("no ETag")
	}
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Header.Set("If-None-Match", etag)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusNotModified {
		t.Errorf("status %d with the current ETag, want 304", rec.Code)
	}
}

// TestNoHTMLFromData guards the page's escaping rule: the script builds
// the table with textContent; nothing may parse server text as HTML.
func TestNoHTMLFromData(t *testing.T) {
	rec := httptest.NewRecorder()
	statuspage.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, statuspage.AssetPrefix+"status.js", nil))
	js, _ := io.ReadAll(rec.Body)
	for _, sink := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("} {
		if strings.Contains(string(js), sink) {
			t.Errorf("status.js uses %s", sink)
		}
	}
}

// TestTokenStaysInTab guards where the page keeps the bearer token: in
// sessionStorage, which ends with the tab, and in the Authorization header,
// never in localStorage or a URL (URLs reach logs and histories).
func TestTokenStaysInTab(t *testing.T) {
	rec := httptest.NewRecorder()
	statuspage.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, statuspage.AssetPrefix+"status.js", nil))
	js := rec.Body.String()
	for _, want := range []string{"sessionStorage.setItem(TOKEN_KEY", "Authorization: `Bearer ${token}`"} {
		if !strings.Contains(js, want) {
			t.Errorf("status.js lacks %s", want)
		}
	}
	for _, bad := range []string{"localStorage", "URLSearchParams", "?token", "&token"} {
		if strings.Contains(js, bad) {
			t.Errorf("status.js uses %s", bad)
		}
	}
}

// TestFavicon checks /favicon.ico, which browsers ask of every page: an
// ICO holding one 32×32 PNG.
func TestFavicon(t *testing.T) {
	rec := httptest.NewRecorder()
	statuspage.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, statuspage.FaviconPath, nil))
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "image/x-icon" {
		t.Fatalf("status %d, Content-Type %q; want 200 and image/x-icon", rec.Code, rec.Header().Get("Content-Type"))
	}
	b := rec.Body.Bytes()
	if len(b) < 22 || binary.LittleEndian.Uint16(b[2:]) != 1 || binary.LittleEndian.Uint16(b[4:]) != 1 ||
		int(binary.LittleEndian.Uint32(b[14:])) != len(b)-22 || binary.LittleEndian.Uint32(b[18:]) != 22 {
		t.Fatalf("not an ICO of one image: % x", b[:min(len(b), 22)])
	}
	img, err := png.Decode(bytes.NewReader(b[22:]))
	if err != nil {
		t.Fatal(err)
	}
	if got := img.Bounds().Size(); got.X != int(b[6]) || got.Y != int(b[7]) || got.X != 32 {
		t.Errorf("PNG of %v, directory says %dx%d; want 32x32", got, b[6], b[7])
	}
}
