// Package webasset serves the embedded files of fleetcache's built-in web
// pages (the status page, the GraphQL playground): a content type by
// extension, a strong ETag from the content's hash, the security headers
// every page of ours sends, and conditional and HEAD requests.
package webasset

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"time"
)

// contentTypes maps the extensions of embedded files to their media types.
var contentTypes = map[string]string{
	".css":  "text/css; charset=utf-8",
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".svg":  "image/svg+xml",
}

// File is one file, ready to serve.
type File struct {
	Body        []byte
	ContentType string
	// Version is the first 16 hex digits of the SHA-256 of Body, and ETag
	// is it quoted (a strong validator).
	Version, ETag string
}

// New returns body as a File of contentType.
func New(body []byte, contentType string) File {
	sum := sha256.Sum256(body)
	version := hex.EncodeToString(sum[:8])
	return File{Body: body, ContentType: contentType, Version: version, ETag: `"` + version + `"`}
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
// conditional and HEAD requests.
func (f File) Serve(w http.ResponseWriter, r *http.Request, cacheControl string) {
	h := w.Header()
	h.Set("Content-Type", f.ContentType)
	h.Set("Cache-Control", cacheControl)
	h.Set("ETag", f.ETag)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(f.Body))
}
