package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/fleetcache/fleetcache/internal/graphqltest"
	"github.com/fleetcache/fleetcache/pkg/authn"
	"github.com/fleetcache/fleetcache/pkg/graphql"
	"github.com/go-chi/chi/v5"
)

// Limits of the servers that FuzzHTTP and FuzzWebSocket fuzz: small, so
// that random documents reach them.
const (
	fuzzMaxDepth    = 5
	fuzzMaxPageSize = 5
	fuzzMaxBody     = 4096
)

// gqlResponse is a GraphQL response as a client reads it.
type gqlResponse struct {
	Data   json.RawMessage `json:"data"`
	Errors []struct {
		Message    string         `json:"message"`
		Extensions map[string]any `json:"extensions"`
	} `json:"errors"`
}

// checkResponse checks a GraphQL response body: JSON with data or errors,
// each error with a code, and no connection longer than the page limit.
func checkResponse(t *testing.T, body []byte) gqlResponse {
	t.Helper()
	var r gqlResponse
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("response is not a GraphQL response: %v\n%s", err, body)
	}
	hasData := len(r.Data) > 0 && string(r.Data) != "null"
	if !hasData && len(r.Errors) == 0 {
		t.Fatalf("response with neither data nor errors: %s", body)
	}
	for _, e := range r.Errors {
		if c, _ := e.Extensions["code"].(string); c == "" {
			t.Fatalf("error without extensions.code: %s", body)
		}
	}
	if hasData {
		var data any
		if err := json.Unmarshal(r.Data, &data); err != nil {
			t.Fatal(err)
		}
		if n := graphqltest.LongestEdges(data); n > fuzzMaxPageSize {
			t.Fatalf("a page of %d edges, over the limit of %d: %s", n, fuzzMaxPageSize, body)
		}
	}
	return r
}

// FuzzHTTP sends any document, variables and operation name through the
// HTTP handler, as a POST body or as GET parameters. Every response must
// be a GraphQL response with data or errors, each error with a code;
// data only with status 200; no page over the page limit; and no data for
// a document deeper than the depth limit.
func FuzzHTTP(f *testing.F) {
	for _, seed := range []struct {
		query, variables, operation string
		get                         bool
	}{
		{`{ clusters { name status objectCount } }`, ``, ``, false},
		{pageQuery, `{"first": 3, "filter": {"labelSelector": "app=web"}}`, ``, false},
		{pageQuery, `{"first": 6}`, ``, true},
		{pageQuery, `{"after": "bogus"}`, ``, false},
		{pageQuery, `{"filter": {"kinds": ["Pod"], "namespaces": ["web"]}, "first": -1}`, ``, false},
		{pageQuery, `{"filter": "x"}`, ``, false},
		{pageQuery, `[]`, ``, false},
		{`query A { clusters { name } } query B { cluster(name: "c1") { name } }`, `null`, `B`, false},
		{`query A { clusters { name } }`, ``, `C`, false},
		{`{ resource(cluster: "c1", kind: "Pod", namespace: "web", name: "web-1") { owners { owners { children { name } } } } }`, ``, ``, false},
		{`{ resource(cluster: "c1", kind: "Event", namespace: "web", name: "ev") { name } }`, ``, ``, true},
		{`{ facets(by: LABEL, labelKey: "app") { value count } }`, ``, ``, false},
		{`{ resources { edges { node { ...A } } } } fragment A on Resource { owners { ...A } }`, ``, ``, false},
		{`{ __schema { types { name fields { name type { name ofType { name } } } } } }`, ``, ``, true},
		{`mutation { clusters { name } }`, ``, ``, true},
		{`subscription { clusterHealth { name } }`, ``, ``, false},
		{`query($n: String!) { cluster(name: $n) { name } }`, `{"n": 1}`, ``, false},
		{`query($n: String!) { cluster(name: $n) { name } }`, `{}`, ``, false},
		{`{ a: clusters { name } b: clusters { name } }`, ``, ``, false},
		{`{`, ``, ``, false},
		{``, ``, ``, true},
	} {
		f.Add(seed.query, seed.variables, seed.operation, seed.get)
	}
	fx := newFixture(f)
	s := newServer(f, fx.ix, fx.tracker, Options{MaxBodyBytes: fuzzMaxBody}, graphql.Options{MaxDepth: fuzzMaxDepth, MaxPageSize: fuzzMaxPageSize, DefaultPageSize: 2, DocumentCacheSize: 16})
	f.Fuzz(func(t *testing.T, query, variables, operation string, get bool) {
		var req *http.Request
		if get {
			params := url.Values{"query": {query}}
			if variables != "" {
				params.Set("variables", variables)
			}
			if operation != "" {
				params.Set("operationName", operation)
			}
			req = httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/graphql?"+params.Encode(), nil)
		} else {
			body := map[string]any{"query": query}
			if json.Valid([]byte(variables)) {
				body["variables"] = json.RawMessage(variables)
			} else if variables != "" {
				body["variables"] = variables
			}
			if operation != "" {
				body["operationName"] = operation
			}
			b, err := json.Marshal(body)
			if err != nil {
				t.Fatal(err)
			}
			req = httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/graphql", bytes.NewReader(b))
			req.Header.Set("Content-Type", "application/json")
		}
		req.Header.Set("Accept", mediaGraphQLResponse)
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, mediaGraphQLResponse) {
			t.Fatalf("status %d, Content-Type %q: %s", w.Code, ct, w.Body)
		}
		r := checkResponse(t, w.Body.Bytes())
		hasData := len(r.Data) > 0 && string(r.Data) != "null"
		if hasData && w.Code != http.StatusOK {
			t.Fatalf("status %d with data: %s", w.Code, w.Body)
		}
	})
}

// FuzzHTTPBody sends any POST body with any Content-Type, for the request
// decoder, and with any Authorization header to a server that accepts the
// single token "good": every answer is a GraphQL response with data or
// coded errors, with status 200 or the status of a refused request (400,
// 401, 413, 415); data only with the token; 401 with a Bearer challenge.
func FuzzHTTPBody(f *testing.F) {
	for _, seed := range []struct{ body, contentType, authorization string }{
		{`{"query":"{ clusters { name } }"}`, "application/json", ""},
		{`{"query":"query($n: String!) { cluster(name: $n) { name } }","variables":{"n":"c1"},"operationName":null,"extensions":{}}`, "application/json; charset=utf-8", ""},
		{`{"query":"{ clusters { name } }","variables":[]}`, "application/json", ""},
		{`{"query":"{ clusters { name } }","extensions":"x"}`, "application/json", ""},
		{`{"query":"{ clusters { name } }","operationName":1}`, "application/json", ""},
		{`{"query":1}`, "application/json", ""},
		{`{"query":null}`, "application/json", ""},
		{`{"variables":{}}`, "application/json", ""},
		{`null`, "application/json", ""},
		{`[]`, "application/json", ""},
		{``, "application/json", ""},
		{`{"query":"` + strings.Repeat(" ", fuzzMaxBody) + `{ clusters { name } }"}`, "application/json", ""},
		{`{"query":"{ clusters { name } }"}`, "application/json; charset=latin1", ""},
		{`{"query":"{ clusters { name } }"}`, "text/plain", ""},
		{`{"query":"{ clusters { name } }"}`, "application/json; =", ""},
		{`{"query":"{ clusters { name } }"}`, "", ""},
		{"{\"query\":\"\xff\"}", "application/json", ""},
		{`{"query":"{ clusters { name } }"}`, "application/json", "Bearer good"},
		{`{"query":"{ clusters { name } }"}`, "application/json", "bearer   good"},
		{`{"query":"{ clusters { name } }"}`, "application/json", "Bearer bad"},
		{`{"query":"{ clusters { name } }"}`, "application/json", "Basic Z29vZA=="},
		{`{"query":"{ clusters { name } }"}`, "application/json", "Bearer"},
		{`{"query":"{ clusters { name } }"}`, "text/plain", "Bearer good"},
	} {
		f.Add([]byte(seed.body), seed.contentType, seed.authorization)
	}
	fx := newFixture(f)
	opts, eopts := Options{MaxBodyBytes: fuzzMaxBody}, graphql.Options{MaxDepth: fuzzMaxDepth, MaxPageSize: fuzzMaxPageSize, DefaultPageSize: 2, DocumentCacheSize: 16}
	open := newServer(f, fx.ix, fx.tracker, opts, eopts)
	opts.Authenticator = tokenAuthenticator("good")
	guarded := newServer(f, fx.ix, fx.tracker, opts, eopts)
	statuses := []int{http.StatusOK, http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType}
	f.Fuzz(func(t *testing.T, body []byte, contentType, authorization string) {
		req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/graphql", bytes.NewReader(body))
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		s, allowed := open, statuses
		if authorization != "" {
			s, allowed = guarded, append(statuses, http.StatusUnauthorized)
			req.Header.Set("Authorization", authorization)
		}
		req.Header.Set("Accept", mediaGraphQLResponse)
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		if !slices.Contains(allowed, w.Code) {
			t.Fatalf("status %d: %s", w.Code, w.Body)
		}
		if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, mediaGraphQLResponse) {
			t.Fatalf("status %d, Content-Type %q: %s", w.Code, ct, w.Body)
		}
		r := checkResponse(t, w.Body.Bytes())
		hasData := len(r.Data) > 0 && string(r.Data) != "null"
		if hasData && w.Code != http.StatusOK {
			t.Fatalf("status %d with data: %s", w.Code, w.Body)
		}
		if hasData && authorization != "" && !isBearer(authorization, "good") {
			t.Fatalf("data for Authorization %q: %s", authorization, w.Body)
		}
		if w.Code == http.StatusUnauthorized && !strings.HasPrefix(w.Header().Get("WWW-Authenticate"), "Bearer") {
			t.Fatalf("401 without a Bearer challenge: %q", w.Header().Get("WWW-Authenticate"))
		}
	})
}

// FuzzSSE sends any document and variables over GraphQL over Server-Sent
// Events, as a POST body or GET parameters. A refused request gets an HTTP
// error carrying a GraphQL response; an accepted one a stream of events,
// each "next" a GraphQL response (coded errors, pages within the limit)
// and nothing after "complete". A subscription streams until the client
// gives up after a moment; the server must then release the connection.
func FuzzSSE(f *testing.F) {
	for _, seed := range []struct {
		query, variables string
		get              bool
	}{
		{`{ clusters { name } }`, ``, false},
		{pageQuery, `{"first": 3, "filter": {"labelSelector": "tier in (fe)"}}`, true},
		{pageQuery, `{"first": 9}`, false},
		{`subscription { resourceEvents { type cursor } }`, ``, false},
		{`subscription($s: String) { resourceEvents(since: $s) { type } }`, `{"s": "bogus"}`, true},
		{`subscription { clusterHealth(cluster: "c1") { name status } }`, ``, false},
		{`mutation { x }`, ``, true},
		{`{ resources { edges { node { owners { owners { owners { owners { owners { name } } } } } } } } }`, ``, false},
		{`{`, `[]`, false},
		{``, `{"a":`, true},
	} {
		f.Add(seed.query, seed.variables, seed.get)
	}
	fx := newFixture(f)
	s := startServer(f, fx.ix, fx.tracker, Options{MaxBodyBytes: fuzzMaxBody}, graphql.Options{MaxDepth: fuzzMaxDepth, MaxPageSize: fuzzMaxPageSize, DefaultPageSize: 2, DocumentCacheSize: 16})
	r := chi.NewRouter()
	r.Handle("/graphql", s)
	srv := httptest.NewServer(r)
	f.Cleanup(srv.Close)
	f.Fuzz(func(t *testing.T, query, variables string, get bool) {
		// Long enough for a query's answer, short enough that many
		// subscriptions per second end by the client leaving.
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		var req *http.Request
		var err error
		if get {
			params := url.Values{"query": {query}}
			if variables != "" {
				params.Set("variables", variables)
			}
			req, err = http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/graphql?"+params.Encode(), nil)
		} else {
			body := map[string]any{"query": query}
			if json.Valid([]byte(variables)) {
				body["variables"] = json.RawMessage(variables)
			} else if variables != "" {
				body["variables"] = variables
			}
			b, merr := json.Marshal(body)
			if merr != nil {
				t.Fatal(merr)
			}
			req, err = http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/graphql", bytes.NewReader(b))
			req.Header.Set("Content-Type", "application/json")
		}
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Accept", mediaEventStream)
		resp, err := srv.Client().Do(req)
		released := func() bool { return s.conns.count("127.0.0.1") == 0 }
		if err != nil {
			if ctx.Err() == nil {
				t.Fatalf("request: %v", err)
			}
			// A subscription that sent nothing yet.
			waitFor(t, "the server to release the connection", released)
			return
		}
		b, _ := io.ReadAll(resp.Body) // ends with an error when the client gives up
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			checkResponse(t, b)
		} else {
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, mediaEventStream) {
				t.Fatalf("status 200, Content-Type %q: %s", ct, b)
			}
			checkEventStream(t, b)
		}
		waitFor(t, "the server to release the connection", released)
	})
}

// checkEventStream checks the complete events of a graphql-sse stream.
func checkEventStream(t *testing.T, stream []byte) {
	t.Helper()
	blocks := strings.Split(string(stream), "\n\n")
	completed := false
	for _, block := range blocks[:len(blocks)-1] { // the last one may be cut short
		var event string
		var data []string
		for line := range strings.SplitSeq(block, "\n") {
			switch name, value, _ := strings.Cut(line, ":"); name {
			case "": // a comment: keeps the stream alive
			case "event":
				event = strings.TrimPrefix(value, " ")
			case "data":
				data = append(data, strings.TrimPrefix(value, " "))
			default:
				t.Fatalf("stream line %q:\n%s", line, stream)
			}
		}
		if completed && event != "" {
			t.Fatalf("event %q after complete:\n%s", event, stream)
		}
		switch event {
		case "":
		case "next":
			checkResponse(t, []byte(strings.Join(data, "\n")))
		case "complete":
			completed = true
		default:
			t.Fatalf("event %q:\n%s", event, stream)
		}
	}
}

// FuzzWebSocket drives a graphql-transport-ws connection with up to four
// arbitrary messages (the input split at NUL bytes), then a ping of its
// own, on a server without authentication or, with auth, on one that
// accepts the single token "good". The server must answer that ping or
// close the connection with a protocol close code; every message it sends
// before must be one the protocol allows, results carrying coded errors;
// with auth, connection_ack only follows a connection_init carrying the
// token; and once the client closes, the server must release the
// connection.
func FuzzWebSocket(f *testing.F) {
	init := `{"type":"connection_init"}`
	for _, seed := range []struct {
		msgs string
		auth bool
	}{
		{init, false},
		{init + "\x00" + `{"type":"subscribe","id":"1","payload":{"query":"{ clusters { name } }"}}`, false},
		{init + "\x00" + `{"type":"subscribe","id":"1","payload":{"query":"subscription { resourceEvents { type } }"}}` + "\x00" + `{"type":"complete","id":"1"}`, false},
		{init + "\x00" + `{"type":"subscribe","id":"1","payload":{"query":"subscription { clusterHealth { name } }"}}` + "\x00" + `{"type":"subscribe","id":"1","payload":{"query":"{ clusters { name } }"}}`, false},
		{init + "\x00" + `{"type":"subscribe","id":"x","payload":{"query":"query($f: Int) { resources(first: $f) { totalCount } }","variables":{"f":9}}}`, false},
		{init + "\x00" + `{"type":"subscribe","id":"x","payload":{"query":"{ resources { edges { node { owners { owners { owners { owners { name } } } } } } } }"}}`, false},
		{init + "\x00" + init, false},
		{`{"type":"subscribe","id":"1","payload":{"query":"{ clusters { name } }"}}`, false},
		{init + "\x00" + `{"type":"ping","payload":{"a":1}}` + "\x00" + `{"type":"pong"}`, false},
		{init + "\x00" + `{"type":"next","id":"1","payload":{}}`, false},
		{init + "\x00" + `{"type":"complete","id":"nope"}`, false},
		{`{"type":"subscribe","id":"` + strings.Repeat("i", 300) + `","payload":{}}`, false},
		{init + "\x00" + `{"type":"subscribe","id":"1","payload":{"query":"` + strings.Repeat("{ clusters { name } }", 300) + `"}}`, false},
		{`[]`, false}, {``, false}, {"\xff", false},
		{`{"type":"connection_init","payload":{"authorization":"Bearer good"}}` + "\x00" + `{"type":"subscribe","id":"1","payload":{"query":"{ clusters { name } }"}}`, true},
		{`{"type":"connection_init","payload":{"Authorization":"bearer  good "}}`, true},
		{`{"type":"connection_init","payload":{"authorization":"Bearer bad"}}`, true},
		{`{"type":"connection_init","payload":{"authorization":"Basic good"}}`, true},
		{`{"type":"connection_init","payload":{"authorization":1}}`, true},
		{init + "\x00" + `{"type":"subscribe","id":"1","payload":{"query":"{ clusters { name } }"}}`, true},
		{`{"type":"ping"}`, true},
	} {
		f.Add([]byte(seed.msgs), seed.auth)
	}
	fx := newFixture(f)
	opts, eopts := Options{MaxBodyBytes: fuzzMaxBody}, graphql.Options{MaxDepth: fuzzMaxDepth, MaxPageSize: fuzzMaxPageSize, DefaultPageSize: 2, DocumentCacheSize: 16}
	open := startServer(f, fx.ix, fx.tracker, opts, eopts)
	opts.Authenticator = tokenAuthenticator("good")
	guarded := startServer(f, fx.ix, fx.tracker, opts, eopts)
	endpoint := func(s *testServer) string {
		r := chi.NewRouter()
		r.Handle("/graphql", s)
		srv := httptest.NewServer(r)
		f.Cleanup(srv.Close)
		return wsURL(srv.URL + "/graphql")
	}
	openURL, guardedURL := endpoint(open), endpoint(guarded)
	const marker = `{"fuzz":"end"}`
	allowedClose := []websocket.StatusCode{closeBadRequest, closeUnauthorized, closeSubscriberExists, closeTooManyInitialisations, closeTooBig}

	f.Fuzz(func(t *testing.T, data []byte, auth bool) {
		msgs := bytes.SplitN(data, []byte{0}, 5)
		if len(msgs) > 4 {
			return // a few messages per input keep each run short
		}
		s, target, allowed := open, openURL, allowedClose
		if auth {
			s, target, allowed = guarded, guardedURL, append(allowedClose, closeForbidden)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		c, _, err := websocket.Dial(ctx, target, &websocket.DialOptions{Subprotocols: []string{subprotocolTransportWS}})
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		defer c.CloseNow()
		c.SetReadLimit(-1)
		// Writes fail once the server has closed: what it answered is read below.
		for _, m := range append(msgs, []byte(`{"type":"ping","payload":`+marker+`}`)) {
			if c.Write(ctx, websocket.MessageText, m) != nil {
				break
			}
		}
		ids := map[string]bool{}
		var firstInit *wsMessage
		for _, m := range msgs {
			dm, err := decodeMessage(m)
			if err != nil {
				break // the server closes here
			}
			switch {
			case dm.Type == msgSubscribe:
				ids[dm.ID] = true
			case dm.Type == msgConnectionInit && firstInit == nil:
				firstInit = &dm
			}
		}
		for {
			_, b, err := c.Read(ctx)
			if err != nil {
				code := websocket.CloseStatus(err)
				if !slices.Contains(allowed, code) {
					t.Fatalf("connection ended with %v (close code %d), want a pong or one of %v", err, code, allowed)
				}
				break
			}
			var in wsIn
			if err := json.Unmarshal(b, &in); err != nil {
				t.Fatalf("server sent %q: %v", b, err)
			}
			if in.Type == msgPong && string(in.Payload) == marker {
				break
			}
			if in.Type == msgConnectionAck && auth && (firstInit == nil || !carriesToken(firstInit.Payload, "good")) {
				t.Fatalf("connection_ack without the token: %q", data)
			}
			checkServerMessage(t, in, ids)
		}
		_ = c.Close(websocket.StatusNormalClosure, "") // fails if the server closed first
		waitFor(t, "the server to release the connection", func() bool { return s.conns.count("127.0.0.1") == 0 })
	})
}

// tokenAuthenticator accepts one bearer token, as user alice: a narrow
// stand-in for a TokenReview.
type tokenAuthenticator string

func (a tokenAuthenticator) Authenticate(_ context.Context, token string) (*authn.User, error) {
	if token != string(a) {
		return nil, authn.ErrUnauthenticated
	}
	return &authn.User{Name: "alice"}, nil
}

// carriesToken reports whether a connection_init payload holds an
// authorization entry "Bearer <token>" (any case of key and scheme, any
// spacing).
func carriesToken(payload json.RawMessage, token string) bool {
	var p map[string]any
	if json.Unmarshal(payload, &p) != nil {
		return false
	}
	for k, v := range p {
		if s, _ := v.(string); strings.EqualFold(k, "authorization") && isBearer(s, token) {
			return true
		}
	}
	return false
}

// isBearer reports whether an authorization value is "Bearer <token>", in
// any case of the scheme and with any spacing.
func isBearer(value, token string) bool {
	f := strings.Fields(value)
	return len(f) == 2 && strings.EqualFold(f[0], "bearer") && f[1] == token
}

// checkServerMessage checks a message the server sent on a connection
// whose client subscribed with ids.
func checkServerMessage(t *testing.T, in wsIn, ids map[string]bool) {
	t.Helper()
	switch in.Type {
	case msgConnectionAck, msgPing, msgPong:
	case msgNext:
		if !ids[in.ID] {
			t.Fatalf("next for id %q, which the client did not subscribe", in.ID)
		}
		checkResponse(t, in.Payload)
	case msgError:
		if !ids[in.ID] {
			t.Fatalf("error for id %q, which the client did not subscribe", in.ID)
		}
		var errs []struct {
			Extensions map[string]any `json:"extensions"`
		}
		if err := json.Unmarshal(in.Payload, &errs); err != nil || len(errs) == 0 {
			t.Fatalf("error payload %s is not a list of errors: %v", in.Payload, err)
		}
		for _, e := range errs {
			if c, _ := e.Extensions["code"].(string); c == "" {
				t.Fatalf("error without extensions.code: %s", in.Payload)
			}
		}
	case msgComplete:
		if !ids[in.ID] {
			t.Fatalf("complete for id %q, which the client did not subscribe", in.ID)
		}
	default:
		t.Fatalf("server sent a %q message: %s", in.Type, strconv.Quote(string(in.Payload)))
	}
}
