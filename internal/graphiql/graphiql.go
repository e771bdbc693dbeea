package graphiql

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"net/http"

	"github.com/fleetcache/fleetcache/internal/webasset"
)

// contentSecurityPolicy allows same-origin scripts and requests only (the
// WebSocket too: 'self' covers ws: and wss: to the same host). GraphiQL's
// components set inline styles and insert <style> elements, hence
// 'unsafe-inline' for styles; its fonts are data: URLs.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"font-src 'self' data:; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; " +
	"frame-ancestors 'none'"

// bundle names the files that make ui writes to dist/.
var bundle = []string{"graphiql.js", "graphiql.css", "graphiql.js.LEGAL.txt"}

var (
	//go:embed dist
	distFiles embed.FS

	//go:embed page.html
	pageSource string

	//go:embed unbuilt.html
	unbuiltPage []byte
)

// assets holds the bundle's files, by name; empty when the binary was built
// without it.
var assets = func() map[string]webasset.File {
	loaded, err := webasset.Load(distFiles, "dist")
	if err != nil {
		panic(fmt.Sprintf("graphiql: %v", err))
	}
	out := map[string]webasset.File{}
	for _, name := range bundle {
		if f, ok := loaded[name]; ok {
			out[name] = f
		}
	}
	return out
}()

// Built reports whether the binary holds the GraphiQL bundle (make ui ran
// before it was built).
func Built() bool { return complete(assets) }

// complete reports whether files hold every file of the bundle.
func complete(files map[string]webasset.File) bool {
	for _, name := range bundle {
		if _, ok := files[name]; !ok {
			return false
		}
	}
	return true
}

// Handler returns an http.Handler that serves GraphiQL, which sends queries
// to endpoint (a path on the same origin, such as "/graphql") and
// subscriptions to the same path over WebSocket. Without the bundle
// (Built is false) it serves, at every path, a page that says how to build
// it.
//
// It answers GET and HEAD: the page, or, with an "asset" query parameter
// (see IsAssetRequest), the bundle's script, style sheet and licenses. Any
// other method gets 405 and an unknown asset 404. Responses carry a
// Content-Security-Policy, X-Content-Type-Options: nosniff and an ETag; the
// page is revalidated on every load, and assets linked with their current
// content hash are cached for good.
func Handler(endpoint string) http.Handler { return newHandler(assets, endpoint) }

// newHandler returns the Handler of the bundle's files.
func newHandler(files map[string]webasset.File, endpoint string) http.Handler {
	if !complete(files) {
		return &webasset.Page{Page: webasset.New(unbuiltPage, "text/html; charset=utf-8"), CSP: contentSecurityPolicy, What: "GraphiQL"}
	}
	tmpl := template.Must(template.New("page").Funcs(template.FuncMap{
		"asset": func(name string) (string, error) { return webasset.AssetLink(files, name) },
	}).Parse(pageSource))
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, struct{ Endpoint string }{endpoint}); err != nil {
		// The template and its assets are embedded: this is a build defect.
		panic(fmt.Sprintf("graphiql: render page: %v", err))
	}
	return &webasset.Page{Page: webasset.New(buf.Bytes(), "text/html; charset=utf-8"), Assets: files,
		CSP: contentSecurityPolicy, What: "GraphiQL"}
}

// IsAssetRequest reports whether r asks for one of the page's assets (its URL
// has an "asset" query parameter). A server that mounts Handler only for
// requests that accept text/html must also send these requests to it: a
// browser asks for scripts and style sheets with other Accept headers.
func IsAssetRequest(r *http.Request) bool { return webasset.IsAssetRequest(r) }
