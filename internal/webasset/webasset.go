// Package webasset serves the embedded files of fleetcache's built-in web
// pages (the status page, GraphiQL): a content type by
// extension, a strong ETag from the content's hash, the security headers
// every page of ours sends, conditional and HEAD requests, and gzip for
// clients that accept it (GraphiQL's script is 1.5 MB, 0.47 MB gzipped).
package webasset

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"
)

// contentTypes maps the extensions of embedded files to their media types.
var contentTypes = map[string]string{
	".css":  "text/css; charset=utf-8",
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".svg":  "image/svg+xml",
	".txt":  "text/plain; charset=utf-8",
}

// File is one file, ready to serve.
type File struct {
	Body        []byte
	ContentType string
	// Version is the first 16 hex digits of the SHA-256 of Body, and ETag
	// is it quoted (a strong validator).
	Version, ETag string
	// gz is Body gzipped, made at the first request that accepts it; nil
	// for files not worth compressing.
	gz *gzipped
}

// minGzip is the smallest body worth compressing.
const minGzip = 1024

// gzipped is a body compressed once, on first use.
type gzipped struct {
	once sync.Once
	body []byte // nil when compressing did not make it smaller
}

func (g *gzipped) get(body []byte) []byte {
	g.once.Do(func() {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression) // the level is valid
		_, _ = zw.Write(body)                                    // a bytes.Buffer does not fail
		_ = zw.Close()
		if buf.Len() < len(body) {
			g.body = buf.Bytes()
		}
	})
	return g.body
}

// New returns body as a File of contentType.
func New(body []byte, contentType string) File {
	sum := sha256.Sum256(body)
	version := hex.EncodeToString(sum[:8])
	f := File{Body: body, ContentType: contentType, Version: version, ETag: `"` + version + `"`}
	if len(body) >= minGzip {
		f.gz = &gzipped{}
	}
	return f
}

// Load returns the files of dir in fsys, by base name. Every file's
// extension must have a known content type.
func Load(fsys fs.FS, dir string) (map[string]File, error) {
	out := map[string]File{}
	err := fs.WalkDir(fsys, dir, func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		contentType, ok := contentTypes[path.Ext(name)]
		if !ok {
			return fmt.Errorf("%s: no content type for its extension", name)
		}
		body, err := fs.ReadFile(fsys, name)
		if err != nil {
			return err
		}
		out[path.Base(name)] = New(body, contentType)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load embedded files: %w", err)
	}
	return out, nil
}

// Begin sets the headers of every response of a page (nosniff, the
// Content-Security-Policy csp, Referrer-Policy) and answers a method other
// than GET and HEAD with 405, naming what answers them; it returns false
// when it answered.
func Begin(w http.ResponseWriter, r *http.Request, csp, what string) bool {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", csp)
	h.Set("Referrer-Policy", "same-origin")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed: "+what+" answers GET and HEAD", http.StatusMethodNotAllowed)
		return false
	}
	return true
}

// Serve writes f with the Cache-Control cacheControl, answering
// conditional and HEAD requests; gzipped, with an ETag of its own, when the
// request accepts gzip and the file is worth compressing.
func (f File) Serve(w http.ResponseWriter, r *http.Request, cacheControl string) {
	h := w.Header()
	h.Set("Content-Type", f.ContentType)
	h.Set("Cache-Control", cacheControl)
	body, etag := f.Body, f.ETag
	if f.gz != nil {
		h.Add("Vary", "Accept-Encoding")
		if acceptsGzip(r.Header.Values("Accept-Encoding")) {
			if gz := f.gz.get(f.Body); gz != nil {
				body, etag = gz, `"`+f.Version+`-gzip"`
				h.Set("Content-Encoding", "gzip")
			}
		}
	}
	h.Set("ETag", etag)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
}

// acceptsGzip reports whether Accept-Encoding header values accept gzip:
// they name gzip (or *) without q=0.
func acceptsGzip(values []string) bool {
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
			name = strings.ToLower(strings.TrimSpace(name))
			if name != "gzip" && name != "*" {
				continue
			}
			q := strings.ReplaceAll(strings.ToLower(params), " ", "")
			if q == "q=0" || q == "q=0.0" || q == "q=0.00" || q == "q=0.000" {
				return false
			}
			return true
		}
	}
	return false
}

// AssetParam is the query parameter that names one of a Page's assets
// (?asset=name), and versionParam the content hash that a link with the
// current version carries (&v=…), so that it can be cached for good.
const (
	AssetParam   = "asset"
	versionParam = "v"
)

// IsAssetRequest reports whether r asks for one of a Page's assets (its URL
// has the AssetParam query parameter). A server that mounts a Page only for
// requests that accept text/html must also send these requests to it: a
// browser asks for scripts and style sheets with other Accept headers.
func IsAssetRequest(r *http.Request) bool {
	return r.URL.Query().Has(AssetParam)
}

// AssetLink returns the relative link of the asset name of assets,
// "?asset=name&v=version", for a page's template.
func AssetLink(assets map[string]File, name string) (string, error) {
	a, ok := assets[name]
	if !ok {
		return "", fmt.Errorf("page links unknown asset %q", name)
	}
	return "?" + AssetParam + "=" + name + "&" + versionParam + "=" + a.Version, nil
}

// Page serves a page and its assets at one path (a built-in page mounted
// on the GraphQL endpoint): GET and HEAD, the page itself, or with
// AssetParam one of Assets, 404 for an unknown one. Every response carries
// the Content-Security-Policy CSP; the page is revalidated on every load,
// and an asset linked with its current version is cached for good.
type Page struct {
	Page   File
	Assets map[string]File
	CSP    string
	What   string // names the page in errors: "GraphiQL"
}

// ServeHTTP implements http.Handler.
func (p *Page) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !Begin(w, r, p.CSP, p.What) {
		return
	}
	query := r.URL.Query()
	if !query.Has(AssetParam) {
		p.Page.Serve(w, r, "no-cache")
		return
	}
	name := query.Get(AssetParam)
	a, ok := p.Assets[name]
	if !ok {
		http.Error(w, fmt.Sprintf("%s has no asset %q", p.What, strings.ToValidUTF8(name, "?")), http.StatusNotFound)
		return
	}
	cache := "no-cache"
	if query.Get(versionParam) == a.Version {
		cache = "public, max-age=31536000, immutable"
	}
	a.Serve(w, r, cache)
}
