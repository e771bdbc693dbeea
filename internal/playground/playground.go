package playground

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"
)

// assetParam is the query parameter that names an asset: ?asset=playground.js.
const assetParam = "asset"

// versionParam carries an asset's content hash in the page's links, so that a
// link with the current hash can be cached for good.
const versionParam = "v"

// contentSecurityPolicy allows only same-origin scripts, styles, images and
// requests, and no inline script or style.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// contentTypes maps the extensions of the embedded assets to their media types.
var contentTypes = map[string]string{
	".css": "text/css; charset=utf-8",
	".js":  "text/javascript; charset=utf-8",
	".svg": "image/svg+xml",
}

var (
	//go:embed assets
	assetFiles embed.FS

	//go:embed page.html
	pageSource string
)

// asset is one embedded file, ready to serve.
type asset struct {
	body        []byte
	contentType string
	etag        string // quoted, strong
	version     string // first hex digits of the SHA-256 of body
}

func newAsset(body []byte, contentType string) asset {
	sum := sha256.Sum256(body)
	version := hex.EncodeToString(sum[:8])
	return asset{body: body, contentType: contentType, etag: `"` + version + `"`, version: version}
}

// assets holds every file under assets/, by name.
var assets = func() map[string]asset {
	out := map[string]asset{}
	err := fs.WalkDir(assetFiles, "assets", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		contentType, ok := contentTypes[path.Ext(name)]
		if !ok {
			return fmt.Errorf("asset %s: no content type for its extension", name)
		}
		body, err := assetFiles.ReadFile(name)
		if err != nil {
			return err
		}
		out[path.Base(name)] = newAsset(body, contentType)
		return nil
	})
	if err != nil {
		panic(fmt.Sprintf("playground: load embedded assets: %v", err))
	}
	return out
}()

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{
	"asset": func(name string) (string, error) {
		a, ok := assets[name]
		if !ok {
			return "", fmt.Errorf("page links unknown asset %q", name)
		}
		return "?" + assetParam + "=" + name + "&" + versionParam + "=" + a.version, nil
	},
}).Parse(pageSource))

// Handler returns an http.Handler that serves the playground page, which
// posts queries to endpoint (a path on the same origin, such as "/graphql";
// the page's Content-Security-Policy allows requests to its own origin only).
//
// It answers GET and HEAD at whatever path it is mounted on: the page itself,
// or, with an "asset" query parameter (see IsAssetRequest), one of the
// page's scripts, style sheet or icon. Any other method gets 405 and an
// unknown asset 404. Responses carry a strict Content-Security-Policy,
// X-Content-Type-Options: nosniff and an ETag; the page is revalidated on
// every load, and assets linked with their current content hash are cached
// for good.
func Handler(endpoint string) http.Handler {
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, struct{ Endpoint string }{endpoint}); err != nil {
		// The template and its assets are embedded: this is a build defect.
		panic(fmt.Sprintf("playground: render page: %v", err))
	}
	return &handler{page: newAsset(buf.Bytes(), "text/html; charset=utf-8")}
}

// IsAssetRequest reports whether r asks for one of the page's assets (its URL
// has an "asset" query parameter). A server that mounts Handler only for
// requests that accept text/html must also send these requests to it: a
// browser asks for scripts and style sheets with other Accept headers.
func IsAssetRequest(r *http.Request) bool {
	return r.URL.Query().Has(assetParam)
}

type handler struct {
	page asset
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	header := w.Header()
	header.Set("X-Content-Type-Options", "nosniff")
	header.Set("Content-Security-Policy", contentSecurityPolicy)
	header.Set("Referrer-Policy", "same-origin")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		header.Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed: the playground page answers GET and HEAD", http.StatusMethodNotAllowed)
		return
	}

	query := r.URL.Query()
	if !query.Has(assetParam) {
		serve(w, r, h.page, "no-cache")
		return
	}
	name := query.Get(assetParam)
	a, ok := assets[name]
	if !ok {
		http.Error(w, fmt.Sprintf("no playground asset %q", strings.ToValidUTF8(name, "?")), http.StatusNotFound)
		return
	}
	cache := "no-cache"
	if query.Get(versionParam) == a.version {
		cache = "public, max-age=31536000, immutable"
	}
	serve(w, r, a, cache)
}

// serve writes a, answering conditional and HEAD requests.
func serve(w http.ResponseWriter, r *http.Request, a asset, cacheControl string) {
	header := w.Header()
	header.Set("Content-Type", a.contentType)
	header.Set("Cache-Control", cacheControl)
	header.Set("ETag", a.etag)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.body))
}
