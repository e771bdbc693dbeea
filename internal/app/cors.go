package app

import (
	"net/http"
	"slices"
	"strings"
)

// corsMaxAge is how long, in seconds, a browser may reuse a preflight's
// answer.
const corsMaxAge = "600"

// cors returns the CORS middleware of /graphql for the exact origins
// allowed: browser pages served from them may send queries (GET, POST with
// a JSON body and an Authorization header) and open event streams, and
// read the answers.
//
//   - A preflight (OPTIONS with Access-Control-Request-Method) from an
//     allowed origin gets 204 with the allowed methods, headers and max
//     age; from any other origin 403, without CORS headers.
//   - Other requests from an allowed origin get Access-Control-Allow-Origin
//     (and Retry-After exposed, for 429s); from other origins they are
//     served without CORS headers, so a browser does not let the page read
//     the answer. Same-origin pages and non-browser clients need none.
//
// Credentials mode is not offered (no Access-Control-Allow-Credentials):
// callers authenticate with a bearer token in Authorization, which a page
// sends itself, never with cookies, so a foreign page cannot borrow a
// user's session.
func cors(origins []string) func(http.Handler) http.Handler {
	allowed := func(origin string) bool {
		return origin != "" && slices.ContainsFunc(origins, func(o string) bool { return strings.EqualFold(o, origin) })
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			origin := r.Header.Get("Origin")
			if origin == "" {
				next.ServeHTTP(w, r)
				return
			}
			h := w.Header()
			// Answers differ by Origin: caches must keep them apart.
			h.Add("Vary", "Origin")
			preflight := r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != ""
			if preflight {
				h.Add("Vary", "Access-Control-Request-Method")
				h.Add("Vary", "Access-Control-Request-Headers")
				if !allowed(origin) {
					http.Error(w, "origin not allowed", http.StatusForbidden)
					return
				}
				h.Set("Access-Control-Allow-Origin", origin)
				h.Set("Access-Control-Allow-Methods", "GET, POST")
				h.Set("Access-Control-Allow-Headers", "Content-Type, Authorization, Accept")
				h.Set("Access-Control-Max-Age", corsMaxAge)
				w.WriteHeader(http.StatusNoContent)
				return
			}
			if allowed(origin) {
				h.Set("Access-Control-Allow-Origin", origin)
				h.Set("Access-Control-Expose-Headers", "Retry-After")
			}
			next.ServeHTTP(w, r)
		})
	}
}
