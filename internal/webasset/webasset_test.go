package webasset

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"
)

func TestLoad(t *testing.T) {
	fsys := fstest.MapFS{
		"assets/page.js":       {Data: []byte("let x;")},
		"assets/sub/style.css": {Data: []byte("p{}")},
	}
	files, err := Load(fsys, "assets")
	if err != nil {
		t.Fatal(err)
	}
	js, css := files["page.js"], files["style.css"]
	if string(js.Body) != "let x;" || js.ContentType != "text/javascript; charset=utf-8" || len(js.Version) != 16 || js.ETag != `"`+js.Version+`"` {
		t.Errorf("page.js: %+v", js)
	}
	if css.ContentType != "text/css; charset=utf-8" || css.Version == js.Version {
		t.Errorf("style.css: %+v", css)
	}

	fsys["assets/data.bin"] = &fstest.MapFile{Data: []byte{0}}
	if _, err := Load(fsys, "assets"); err == nil || !strings.Contains(err.Error(), "data.bin") {
		t.Errorf("Load with a file of unknown type: %v, want an error naming it", err)
	}
}

func TestServe(t *testing.T) {
	f := New([]byte("body"), "text/plain")
	serve := func(method string, header map[string]string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, "/", nil)
		for k, v := range header {
			r.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		if Begin(w, r, "default-src 'none'", "the test page") {
			f.Serve(w, r, "no-cache")
		}
		return w
	}
	w := serve(http.MethodGet, nil)
	h := w.Header()
	if w.Code != http.StatusOK || w.Body.String() != "body" || h.Get("ETag") != f.ETag || h.Get("Cache-Control") != "no-cache" ||
		h.Get("Content-Security-Policy") != "default-src 'none'" || h.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("GET: %d %q %v", w.Code, w.Body, h)
	}
	if w := serve(http.MethodGet, map[string]string{"If-None-Match": f.ETag}); w.Code != http.StatusNotModified {
		t.Errorf("GET with the ETag: %d, want 304", w.Code)
	}
	if w := serve(http.MethodHead, nil); w.Code != http.StatusOK || w.Body.Len() != 0 {
		t.Errorf("HEAD: %d with %d bytes", w.Code, w.Body.Len())
	}
	w = serve(http.MethodPost, nil)
	if w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != "GET, HEAD" || !strings.Contains(w.Body.String(), "the test page answers GET and HEAD") {
		t.Errorf("POST: %d %q %v", w.Code, w.Body, w.Header())
	}
}

func TestServeGzip(t *testing.T) {
	big := New([]byte(strings.Repeat("console.log('graphiql');\n", 200)), "text/javascript; charset=utf-8")
	small := New([]byte("let x;"), "text/javascript; charset=utf-8")
	serve := func(f File, header map[string]string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		for k, v := range header {
			r.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		f.Serve(w, r, "no-cache")
		return w
	}
	tests := []struct {
		name           string
		file           File
		acceptEncoding string
		wantGzip       bool
	}{
		{name: "gzip accepted", file: big, acceptEncoding: "gzip, deflate, br", wantGzip: true},
		{name: "gzip with a weight", file: big, acceptEncoding: "br;q=1.0, gzip;q=0.8", wantGzip: true},
		{name: "any encoding", file: big, acceptEncoding: "*", wantGzip: true},
		{name: "gzip refused", file: big, acceptEncoding: "gzip;q=0, br"},
		{name: "no header", file: big},
		{name: "identity only", file: big, acceptEncoding: "identity"},
		{name: "too small to compress", file: small, acceptEncoding: "gzip"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := serve(tt.file, map[string]string{"Accept-Encoding": tt.acceptEncoding})
			body := w.Body.Bytes()
			if got := w.Header().Get("Content-Encoding") == "gzip"; got != tt.wantGzip {
				t.Fatalf("gzipped %v, want %v (headers %v)", got, tt.wantGzip, w.Header())
			}
			etag := w.Header().Get("ETag")
			if tt.wantGzip {
				zr, err := gzip.NewReader(bytes.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				if body, err = io.ReadAll(zr); err != nil {
					t.Fatal(err)
				}
				if etag == tt.file.ETag || len(w.Body.Bytes()) >= len(tt.file.Body) {
					t.Errorf("gzip variant: ETag %s (identity's %s), %d bytes of %d", etag, tt.file.ETag, w.Body.Len(), len(tt.file.Body))
				}
			} else if etag != tt.file.ETag {
				t.Errorf("ETag %s, want %s", etag, tt.file.ETag)
			}
			if !bytes.Equal(body, tt.file.Body) {
				t.Errorf("body differs from the file's")
			}
			if tt.file.gz != nil && w.Header().Get("Vary") != "Accept-Encoding" {
				t.Errorf("Vary %q, want Accept-Encoding", w.Header().Get("Vary"))
			}
			// The variant's own ETag revalidates it.
			again := serve(tt.file, map[string]string{"Accept-Encoding": tt.acceptEncoding, "If-None-Match": etag})
			if again.Code != http.StatusNotModified {
				t.Errorf("GET with the ETag %s: %d, want 304", etag, again.Code)
			}
		})
	}
}
