package playground

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"net/http"

	"github.com/fleetcache/fleetcache/internal/webasset"
)

// contentSecurityPolicy allows only same-origin scripts, styles, images and
// requests, and no inline script or style.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

var (
	//go:embed assets
	assetFiles embed.FS

	//go:embed page.html
	pageSource string
)

// assets holds every file under assets/, by name.
var assets = func() map[string]webasset.File {
	out, err := webasset.Load(assetFiles, "assets")
	if err != nil {
		panic(fmt.Sprintf("playground: %v", err))
	}
	return out
}()

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{
	"asset": func(name string) (string, error) { return webasset.AssetLink(assets, name) },
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
	return &webasset.Page{Page: webasset.New(buf.Bytes(), "text/html; charset=utf-8"), Assets: assets,
		CSP: contentSecurityPolicy, What: "the playground page"}
}

// IsAssetRequest reports whether r asks for one of the page's assets (its URL
// has an "asset" query parameter). A server that mounts Handler only for
// requests that accept text/html must also send these requests to it: a
// browser asks for scripts and style sheets with other Accept headers.
func IsAssetRequest(r *http.Request) bool { return webasset.IsAssetRequest(r) }
