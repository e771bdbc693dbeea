package webasset

import (
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
