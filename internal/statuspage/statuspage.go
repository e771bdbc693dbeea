package statuspage

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"net/http"
	"path"
	"strings"
	"time"
)

// AssetPrefix is the path under which Handler serves the page's script and
// style sheet: mount Handler there as well as at "/".
const AssetPrefix = "/statuspage/"

// contentSecurityPolicy allows same-origin scripts, styles and requests
// only, and no inline script or style: the page shows text that clusters
// and their API servers chose (names, error messages).
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; " +
	"img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
}

//go:embed assets
var assetFiles embed.FS

// file is one embedded file, ready to serve.
type file struct {
	body        []byte
	contentType string
	etag        string
}

// files maps request paths to the embedded files: "/" to the page, the
// assets to AssetPrefix+name.
var files = func() map[string]file {
	entries, err := assetFiles.ReadDir("assets")
	if err != nil {
		panic(fmt.Sprintf("statuspage: read embedded assets: %v", err))
	}
	out := map[string]file{}
	for _, e := range entries {
		body, err := assetFiles.ReadFile("assets/" + e.Name())
		if err != nil {
			panic(fmt.Sprintf("statuspage: read embedded %s: %v", e.Name(), err))
		}
		ct, ok := contentTypes[path.Ext(e.Name())]
		if !ok {
			panic(fmt.Sprintf("statuspage: no content type for %s", e.Name()))
		}
		sum := sha256.Sum256(body)
		f := file{body: body, contentType: ct, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		if e.Name() == "index.html" {
			out["/"] = f
		} else {
			out[AssetPrefix+e.Name()] = f
		}
	}
	return out
}()

// Handler returns the handler of the status page. It answers GET and HEAD
// for "/" (the page) and for the assets under AssetPrefix; other paths get
// 404 and other methods 405. Every response carries a strict
// Content-Security-Policy and an ETag, and is revalidated on each load, so
// a new binary's page never runs with an old script.
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("Referrer-Policy", "same-origin")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed: the status page answers GET and HEAD", http.StatusMethodNotAllowed)
			return
		}
		f, ok := files[r.URL.Path]
		if !ok {
			http.Error(w, fmt.Sprintf("no status page file %q", strings.ToValidUTF8(r.URL.Path, "?")), http.StatusNotFound)
			return
		}
		h.Set("Content-Type", f.contentType)
		h.Set("Cache-Control", "no-cache")
		h.Set("ETag", f.etag)
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(f.body))
	})
}
