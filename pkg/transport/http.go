package transport

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/munnerz/goautoneg"

	"github.com/fleetcache/fleetcache/pkg/graphql"
)

// Media types of GraphQL over HTTP.
const (
	mediaJSON            = "application/json"
	mediaGraphQLResponse = "application/graphql-response+json"
	mediaHTML            = "text/html"
)

// ServeHTTP serves GraphQL over HTTP (the GraphQL-over-HTTP specification):
//
//   - POST with a JSON body {query, operationName, variables, extensions}
//     (Content-Type application/json, UTF-8): any operation.
//   - GET with the same parameters in the URL query (variables and
//     extensions as JSON): queries only, a mutation gets 405.
//   - The response is application/graphql-response+json when the Accept
//     header asks for it, else application/json. With
//     application/graphql-response+json, a request that fails before
//     execution (parse, validation, variables) gets 400; with
//     application/json it gets 200, as GraphQL errors.
//   - Malformed requests get 400, other methods 405, bodies over
//     Options.MaxBodyBytes 413 (URL queries over it 414), other content
//     types 415, clients over
//     Options.RateLimit 429 with Retry-After, each with a GraphQL error
//     carrying its code.
//   - A browser's GET (Accept preferring text/html), and the requests for the
//     page's assets, get Options.BrowserPage (GraphiQL, offline).
//   - A subscription gets a BAD_REQUEST error that names the transports
//     that serve it.
//
// Two streaming transports share the path, for subscriptions and every
// other operation:
//
//   - A WebSocket upgrade request gets graphql-transport-ws (ws.go).
//   - A GET or POST whose Accept header asks for text/event-stream gets
//     GraphQL over Server-Sent Events, the graphql-sse protocol's distinct
//     connections mode (sse.go).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case isWebSocketUpgrade(r):
		s.serveWebSocket(w, r)
		return
	case s.opts.Authenticator != nil && !s.isPageRequest(r):
		ctx, herr := s.authenticate(r)
		if herr != nil {
			s.refuse(w, r, herr)
			return
		}
		r = r.WithContext(ctx)
	}
	if acceptsEventStream(r.Header.Values("Accept")) {
		s.serveSSE(w, r)
		return
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		if s.isPageRequest(r) {
			s.opts.BrowserPage.ServeHTTP(w, r)
			return
		}
		if r.Method == http.MethodHead {
			s.methodNotAllowed(w, r, "GET, POST")
			return
		}
		s.serveGet(w, r)
	case http.MethodPost:
		s.servePost(w, r)
	default:
		s.methodNotAllowed(w, r, "GET, POST")
	}
}

// isPageRequest reports whether r asks for Options.BrowserPage or its
// assets, which need no authentication: the page sends the token itself.
func (s *Server) isPageRequest(r *http.Request) bool {
	if s.opts.BrowserPage == nil || (r.Method != http.MethodGet && r.Method != http.MethodHead) || acceptsEventStream(r.Header.Values("Accept")) {
		return false
	}
	return acceptsHTML(r.Header.Values("Accept")) || (s.opts.IsBrowserAsset != nil && s.opts.IsBrowserAsset(r))
}

func (s *Server) methodNotAllowed(w http.ResponseWriter, r *http.Request, allow string) {
	w.Header().Set("Allow", allow)
	s.writeError(w, r, http.StatusMethodNotAllowed, graphql.CodeBadRequest, fmt.Errorf("method %s is not allowed, use %s", r.Method, allow))
}

func (s *Server) serveGet(w http.ResponseWriter, r *http.Request) {
	if !s.allowHTTP(w, r, kindQuery) {
		return
	}
	req, herr := getRequest(r, s.opts.MaxBodyBytes)
	if herr != nil {
		s.writeHTTPError(w, r, herr)
		return
	}
	s.serveRequest(w, r, req)
}

func (s *Server) servePost(w http.ResponseWriter, r *http.Request) {
	// Before the body is read: a client over its rate costs no more.
	if !s.allowHTTP(w, r, kindQuery) {
		return
	}
	req, herr := s.postRequest(w, r)
	if herr != nil {
		s.writeHTTPError(w, r, herr)
		return
	}
	s.serveRequest(w, r, req)
}

// httpError is a request rejected before GraphQL sees it: its HTTP status
// and the GraphQL error the response carries.
type httpError struct {
	status int
	code   string
	err    error
}

// writeHTTPError writes e's response.
func (s *Server) writeHTTPError(w http.ResponseWriter, r *http.Request, e *httpError) {
	if e.status == http.StatusRequestEntityTooLarge {
		// The body is not read to its end: close the connection after the answer.
		w.Header().Set("Connection", "close")
	}
	s.writeError(w, r, e.status, e.code, e.err)
}

// getRequest decodes the request parameters of a GET from the URL query,
// which may be at most limit bytes long (Options.MaxBodyBytes, as for a
// POST's body; else 414).
func getRequest(r *http.Request, limit int64) (graphql.Request, *httpError) {
	if n := int64(len(r.URL.RawQuery)); n > limit {
		return graphql.Request{}, &httpError{http.StatusRequestURITooLong, CodePayloadTooLarge, fmt.Errorf("URL query is longer than %d bytes: send a POST", limit)}
	}
	q := r.URL.Query()
	req := graphql.Request{Query: q.Get("query"), OperationName: q.Get("operationName")}
	if !q.Has("query") || req.Query == "" {
		return req, &httpError{http.StatusBadRequest, graphql.CodeBadRequest, errors.New("no query parameter")}
	}
	if v := q.Get("variables"); v != "" {
		if err := json.Unmarshal([]byte(v), &req.Variables); err != nil || (req.Variables == nil && v != "null") {
			return req, &httpError{http.StatusBadRequest, graphql.CodeBadUserInput, errors.New("variables must be a JSON object")}
		}
	}
	if v := q.Get("extensions"); v != "" {
		if err := json.Unmarshal([]byte(v), &req.Extensions); err != nil || (req.Extensions == nil && v != "null") {
			return req, &httpError{http.StatusBadRequest, graphql.CodeBadRequest, errors.New("extensions must be a JSON object")}
		}
	}
	return req, nil
}

// postRequest reads and decodes the JSON body of a POST, at most
// Options.MaxBodyBytes of it.
func (s *Server) postRequest(w http.ResponseWriter, r *http.Request) (graphql.Request, *httpError) {
	if err := checkContentType(r.Header.Get("Content-Type")); err != nil {
		return graphql.Request{}, &httpError{http.StatusUnsupportedMediaType, graphql.CodeBadRequest, err}
	}
	tooLarge := &httpError{http.StatusRequestEntityTooLarge, CodePayloadTooLarge, fmt.Errorf("request body is larger than %d bytes", s.opts.MaxBodyBytes)}
	if r.ContentLength > s.opts.MaxBodyBytes {
		return graphql.Request{}, tooLarge
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes))
	if err != nil {
		var maxBytes *http.MaxBytesError
		if errors.As(err, &maxBytes) {
			return graphql.Request{}, tooLarge
		}
		return graphql.Request{}, &httpError{http.StatusBadRequest, graphql.CodeBadRequest, fmt.Errorf("read request body: %w", err)}
	}
	return decodeRequest(body)
}

// checkContentType accepts application/json, in UTF-8 if a charset is given.
func checkContentType(ct string) error {
	if ct == "" {
		return errors.New("no Content-Type: send application/json")
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return fmt.Errorf("invalid Content-Type %q: %w", ct, err)
	}
	if mt != mediaJSON {
		return fmt.Errorf("unsupported Content-Type %q: send application/json", mt)
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return fmt.Errorf("unsupported charset %q: send UTF-8", cs)
	}
	return nil
}

// decodeRequest decodes a POST body, checking the type of each parameter.
func decodeRequest(body []byte) (graphql.Request, *httpError) {
	var req graphql.Request
	if len(bytes.TrimSpace(body)) == 0 {
		return req, badRequest(graphql.CodeBadRequest, errors.New("empty request body"))
	}
	var params map[string]json.RawMessage
	if err := json.Unmarshal(body, &params); err != nil || params == nil {
		return req, badRequest(graphql.CodeBadRequest, errors.New("request body is not a JSON object"))
	}
	raw, ok := params["query"]
	if !ok || isNull(raw) {
		return req, badRequest(graphql.CodeBadRequest, errors.New("no query in the request"))
	}
	if err := json.Unmarshal(raw, &req.Query); err != nil {
		return req, badRequest(graphql.CodeBadRequest, errors.New("query must be a string"))
	}
	if raw, ok := params["operationName"]; ok && !isNull(raw) {
		if err := json.Unmarshal(raw, &req.OperationName); err != nil {
			return req, badRequest(graphql.CodeBadRequest, errors.New("operationName must be a string"))
		}
	}
	if raw, ok := params["variables"]; ok && !isNull(raw) {
		if err := json.Unmarshal(raw, &req.Variables); err != nil {
			return req, badRequest(graphql.CodeBadUserInput, errors.New("variables must be a JSON object"))
		}
	}
	if raw, ok := params["extensions"]; ok && !isNull(raw) {
		if err := json.Unmarshal(raw, &req.Extensions); err != nil {
			return req, badRequest(graphql.CodeBadRequest, errors.New("extensions must be a JSON object"))
		}
	}
	return req, nil
}

// badRequest is a 400 error with code.
func badRequest(code string, err error) *httpError {
	return &httpError{http.StatusBadRequest, code, err}
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// serveRequest executes a decoded request and writes the result. A GET
// runs queries only.
func (s *Server) serveRequest(w http.ResponseWriter, r *http.Request, req graphql.Request) {
	o, res := s.engine.Prepare(req)
	if res != nil {
		auditResult(r.Context(), res)
		s.writeResult(w, r, res)
		return
	}
	auditOperation(r.Context(), o)
	if r.Method == http.MethodGet && o.Type() == graphql.OperationMutation {
		s.methodNotAllowed(w, r, "POST")
		return
	}
	res = s.engine.ExecuteOperation(r.Context(), o)
	auditResult(r.Context(), res)
	s.writeResult(w, r, res)
}

// writeResult writes a GraphQL result: 200, or 400 for a request that
// failed before execution when the client accepts
// application/graphql-response+json.
func (s *Server) writeResult(w http.ResponseWriter, r *http.Request, res *graphql.Result) {
	media := responseMedia(r.Header.Values("Accept"))
	status := http.StatusOK
	if media == mediaGraphQLResponse && !res.Executed {
		status = http.StatusBadRequest
	}
	s.write(w, media, status, res)
}

// writeError writes an HTTP-level error as a GraphQL response.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, status int, code string, err error) {
	s.write(w, responseMedia(r.Header.Values("Accept")), status, graphql.ErrorResult(code, err))
}

func (s *Server) write(w http.ResponseWriter, media string, status int, res *graphql.Result) {
	body, err := res.MarshalJSON()
	if err != nil {
		s.opts.Logger.Error(err, "Encode GraphQL response")
		status = http.StatusInternalServerError
		body, _ = json.Marshal(graphql.ErrorResult(graphql.CodeInternal, errors.New("cannot encode the response")))
	}
	h := w.Header()
	h.Set("Content-Type", media+"; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	if _, err := w.Write(body); err != nil {
		s.opts.Logger.V(4).Info("Write GraphQL response", "err", err)
	}
}

// acceptRanges returns the media ranges of the Accept header's values,
// parsed by goautoneg, their media types in lower case. A quality out of
// [0, 1] counts as 1, as if it were not given.
func acceptRanges(values []string) []goautoneg.Accept {
	if len(values) == 0 {
		return nil
	}
	ranges := goautoneg.ParseAccept(strings.ToLower(strings.Join(values, ",")))
	for i := range ranges {
		if ranges[i].Q < 0 || ranges[i].Q > 1 {
			ranges[i].Q = 1
		}
	}
	return ranges
}

// quality returns the q of media type typ/sub under the ranges, and how
// specific the range that gave it is: 2 exact, 1 type/*, 0 */*, -1 none.
// Of equally specific ranges, the first wins: goautoneg sorts them by q,
// highest first.
func quality(ranges []goautoneg.Accept, media string) (float64, int) {
	typ, sub, _ := strings.Cut(media, "/")
	q, spec := 0.0, -1
	for _, r := range ranges {
		s := -1
		switch {
		case r.Type == typ && r.SubType == sub:
			s = 2
		case r.Type == typ && r.SubType == "*":
			s = 1
		case r.Type == "*" && r.SubType == "*":
			s = 0
		}
		if s > spec {
			q, spec = r.Q, s
		}
	}
	return q, spec
}

// responseMedia picks the response's media type: application/json unless
// the client prefers application/graphql-response+json, naming it.
func responseMedia(accept []string) string {
	ranges := acceptRanges(accept)
	if len(ranges) == 0 {
		return mediaJSON
	}
	gq, gspec := quality(ranges, mediaGraphQLResponse)
	jq, _ := quality(ranges, mediaJSON)
	if gspec == 2 && gq > 0 && gq >= jq {
		return mediaGraphQLResponse
	}
	return mediaJSON
}

// acceptsHTML reports whether the client prefers text/html to the JSON
// media types, naming it: what a browser's navigation sends. A tie goes to
// JSON.
func acceptsHTML(accept []string) bool { return prefers(accept, mediaHTML, false) }

// prefers reports whether the Accept header names media (not through a
// wildcard) with a non-zero quality, and does not name a JSON media type
// with a higher quality; winsTies says whether media wins an equal one.
func prefers(accept []string, media string, winsTies bool) bool {
	ranges := acceptRanges(accept)
	q, spec := quality(ranges, media)
	if spec != 2 || q == 0 {
		return false
	}
	for _, other := range []string{mediaJSON, mediaGraphQLResponse} {
		oq, ospec := quality(ranges, other)
		if ospec == 2 && (oq > q || (oq == q && !winsTies)) {
			return false
		}
	}
	return true
}
