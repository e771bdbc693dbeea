package statuspage

import (
	"embed"
	"fmt"
	"net/http"
	"strings"

	"github.com/fleetcache/fleetcache/internal/webasset"
)

// AssetPrefix is the path under which Handler serves the page's script and
// style sheet: mount Handler there as well as at "/".
const AssetPrefix = "/statuspage/"

// contentSecurityPolicy allows same-origin scripts, styles and requests
// only, and no inline script or style: the page shows text that clusters
// and their API servers chose (names, error messages).
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; " +
	"img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

//go:embed assets
var assetFiles embed.FS

// files maps request paths to the embedded files: "/" to the page, the
// assets to AssetPrefix+name.
var files = func() map[string]webasset.File {
	loaded, err := webasset.Load(assetFiles, "assets")
	if err != nil {
		panic(fmt.Sprintf("statuspage: %v", err))
	}
	out := map[string]webasset.File{FaviconPath: webasset.New(favicon, "image/x-icon")}
	for name, f := range loaded {
		if name == "index.html" {
			out["/"] = f
		} else {
			out[AssetPrefix+name] = f
		}
	}
	return out
}()

// Handler returns the handler of the status page. It answers GET and HEAD
// for "/" (the page), for the assets under AssetPrefix and for FaviconPath
// (mount it there too: browsers ask every page's origin for it); other paths get
// 404 and other methods 405. Every response carries a strict
// Content-Security-Policy and an ETag, and is revalidated on each load, so
// a new binary's page never runs with an old script.
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !webasset.Begin(w, r, contentSecurityPolicy, "the status page") {
			return
		}
		f, ok := files[r.URL.Path]
		if !ok {
			http.Error(w, fmt.Sprintf("no status page file %q", strings.ToValidUTF8(r.URL.Path, "?")), http.StatusNotFound)
			return
		}
		f.Serve(w, r, "no-cache")
	})
}
