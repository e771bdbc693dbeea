package transport

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/fleetcache/fleetcache/pkg/graphql"
	"github.com/go-chi/chi/v5"
	"github.com/google/go-cmp/cmp"
)

// serve mounts s on /graphql of a chi router behind an httptest server.
func serve(t *testing.T, s *testServer) string {
	t.Helper()
	r := chi.NewRouter()
	r.Handle("/graphql", s)
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	return srv.URL + "/graphql"
}

// response is what a test reads of an HTTP response.
type response struct {
	Status      int
	ContentType string
	Allow       string
	HasData     bool
	Codes       []string
}

func do(t *testing.T, method, target string, header map[string]string, body string) (response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, target, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body == "" {
		req.Body = http.NoBody
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := response{Status: res.StatusCode, ContentType: res.Header.Get("Content-Type"), Allow: res.Header.Get("Allow")}
	if strings.Contains(out.ContentType, "json") && len(b) > 0 {
		var r struct {
			Data   json.RawMessage
			Errors []struct{ Extensions struct{ Code string } }
		}
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("decode %s: %v", b, err)
		}
		var raw map[string]json.RawMessage
		_ = json.Unmarshal(b, &raw)
		_, out.HasData = raw["data"]
		for _, e := range r.Errors {
			out.Codes = append(out.Codes, e.Extensions.Code)
		}
	}
	return out, b
}

const (
	jsonCT  = "application/json; charset=utf-8"
	gqlrCT  = "application/graphql-response+json; charset=utf-8"
	browser = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8"
)

func get(query string, params ...string) string {
	v := url.Values{"query": {query}}
	for i := 0; i+1 < len(params); i += 2 {
		v.Set(params[i], params[i+1])
	}
	return "?" + v.Encode()
}

func TestHTTP(t *testing.T) {
	f := newFixture(t)
	endpoint := serve(t, newServer(t, f.ix, f.tracker, Options{MaxBodyBytes: 4096}))
	post := map[string]string{"Content-Type": "application/json"}
	postGQLR := map[string]string{"Content-Type": "application/json", "Accept": "application/graphql-response+json"}
	for _, tc := range []struct {
		name    string
		method  string
		query   string // appended to the endpoint
		header  map[string]string
		body    string
		want    response
		content string // a substring of the body
	}{
		{name: "POST", method: "POST", header: post, body: `{"query": "{ clusters { name } }"}`,
			want: response{Status: 200, ContentType: jsonCT, HasData: true}, content: `"name":"c1"`},
		{name: "POST with charset", method: "POST", header: map[string]string{"Content-Type": "application/json; charset=UTF-8"}, body: `{"query": "{ __typename }"}`,
			want: response{Status: 200, ContentType: jsonCT, HasData: true}},
		{name: "POST asking graphql-response+json", method: "POST", header: postGQLR, body: `{"query": "{ __typename }"}`,
			want: response{Status: 200, ContentType: gqlrCT, HasData: true}},
		{name: "POST preferring application/json", method: "POST",
			header: map[string]string{"Content-Type": "application/json", "Accept": "application/graphql-response+json;q=0.5, application/json"},
			body:   `{"query": "{ __typename }"}`, want: response{Status: 200, ContentType: jsonCT, HasData: true}},
		{name: "POST accepting anything", method: "POST", header: map[string]string{"Content-Type": "application/json", "Accept": "*/*"},
			body: `{"query": "{ __typename }"}`, want: response{Status: 200, ContentType: jsonCT, HasData: true}},
		{name: "variables and operationName", method: "POST", header: post,
			body: `{"query": "query A { x: __typename } query B($n: String!) { cluster(name: $n) { name } }", "operationName": "B", "variables": {"n": "c2"}, "extensions": {"k": 1}}`,
			want: response{Status: 200, ContentType: jsonCT, HasData: true}, content: `"name":"c2"`},
		{name: "null parameters", method: "POST", header: post, body: `{"query": "{ __typename }", "variables": null, "operationName": null, "extensions": null}`,
			want: response{Status: 200, ContentType: jsonCT, HasData: true}},
		{name: "parse error, application/json", method: "POST", header: post, body: `{"query": "{"}`,
			want: response{Status: 200, ContentType: jsonCT, Codes: []string{graphql.CodeParseFailed}}},
		{name: "parse error, graphql-response+json", method: "POST", header: postGQLR, body: `{"query": "{"}`,
			want: response{Status: 400, ContentType: gqlrCT, Codes: []string{graphql.CodeParseFailed}}},
		{name: "validation error, graphql-response+json", method: "POST", header: postGQLR, body: `{"query": "{ nope }"}`,
			want: response{Status: 400, ContentType: gqlrCT, Codes: []string{graphql.CodeValidationFailed}}},
		{name: "variable coercion, application/json", method: "POST", header: post, body: `{"query": "query($n: String!) { cluster(name: $n) { name } }", "variables": {"n": null}}`,
			want: response{Status: 200, ContentType: jsonCT, Codes: []string{graphql.CodeBadUserInput}}},
		{name: "variable coercion, graphql-response+json", method: "POST", header: postGQLR, body: `{"query": "query($n: Int) { resources(first: $n) { totalCount } }", "variables": {"n": "ten"}}`,
			want: response{Status: 400, ContentType: gqlrCT, Codes: []string{graphql.CodeBadUserInput}}},
		{name: "execution error, graphql-response+json", method: "POST", header: postGQLR, body: `{"query": "{ resources(first: -1) { totalCount } }"}`,
			want: response{Status: 200, ContentType: gqlrCT, HasData: true, Codes: []string{graphql.CodeBadUserInput}}},
		{name: "missing query", method: "POST", header: post, body: `{"notquery": "{ __typename }"}`,
			want: response{Status: 400, ContentType: jsonCT, Codes: []string{graphql.CodeBadRequest}}},
		{name: "null query", method: "POST", header: post, body: `{"query": null}`,
			want: response{Status: 400, ContentType: jsonCT, Codes: []string{graphql.CodeBadRequest}}},
		{name: "query not a string", method: "POST", header: post, body: `{"query": {"obj": "ect"}}`,
			want: response{Status: 400, ContentType: jsonCT, Codes: []string{graphql.CodeBadRequest}}},
		{name: "operationName not a string", method: "POST", header: post, body: `{"query": "{ __typename }", "operationName": false}`,
			want: response{Status: 400, ContentType: jsonCT, Codes: []string{graphql.CodeBadRequest}}},
		{name: "variables not an object", method: "POST", header: post, body: `{"query": "{ __typename }", "variables": ["array"]}`,
			want: response{Status: 400, ContentType: jsonCT, Codes: []string{graphql.CodeBadUserInput}}},
		{name: "variables a string", method: "POST", header: post, body: `{"query": "{ __typename }", "variables": "{}"}`,
			want: response{Status: 400, ContentType: jsonCT, Codes: []string{graphql.CodeBadUserInput}}},
		{name: "extensions not an object", method: "POST", header: post, body: `{"query": "{ __typename }", "extensions": 0}`,
			want: response{Status: 400, ContentType: jsonCT, Codes: []string{graphql.CodeBadRequest}}},
		{name: "invalid JSON", method: "POST", header: post, body: `{ "not a JSON`,
			want: response{Status: 400, ContentType: jsonCT, Codes: []string{graphql.CodeBadRequest}}},
		{name: "JSON not an object", method: "POST", header: post, body: `["{ __typename }"]`,
			want: response{Status: 400, ContentType: jsonCT, Codes: []string{graphql.CodeBadRequest}}},
		{name: "trailing data", method: "POST", header: post, body: `{"query": "{ __typename }"} {}`,
			want: response{Status: 400, ContentType: jsonCT, Codes: []string{graphql.CodeBadRequest}}},
		{name: "empty body", method: "POST", header: post,
			want: response{Status: 400, ContentType: jsonCT, Codes: []string{graphql.CodeBadRequest}}},
		{name: "body over the limit", method: "POST", header: post, body: `{"query": "{ __typename }", "pad": "` + strings.Repeat("x", 5000) + `"}`,
			want: response{Status: 413, ContentType: jsonCT, Codes: []string{CodePayloadTooLarge}}},
		{name: "no content type", method: "POST", body: `{"query": "{ __typename }"}`,
			want: response{Status: 415, ContentType: jsonCT, Codes: []string{graphql.CodeBadRequest}}},
		{name: "text/plain", method: "POST", header: map[string]string{"Content-Type": "text/plain"}, body: `{"query": "{ __typename }"}`,
			want: response{Status: 415, ContentType: jsonCT, Codes: []string{graphql.CodeBadRequest}}},
		{name: "other charset", method: "POST", header: map[string]string{"Content-Type": "application/json; charset=utf-16"}, body: `{"query": "{ __typename }"}`,
			want: response{Status: 415, ContentType: jsonCT, Codes: []string{graphql.CodeBadRequest}}},
		{name: "GET", method: "GET", query: get(`{ cluster(name: "c3") { status } }`),
			want: response{Status: 200, ContentType: jsonCT, HasData: true}, content: `"status":"DISCONNECTED"`},
		{name: "GET with variables", method: "GET", query: get(`query($n: String!) { cluster(name: $n) { name } }`, "variables", `{"n": "c1"}`),
			header: map[string]string{"Accept": "application/graphql-response+json"},
			want:   response{Status: 200, ContentType: gqlrCT, HasData: true}, content: `"name":"c1"`},
		{name: "GET with bad variables", method: "GET", query: get(`{ __typename }`, "variables", `[1]`),
			want: response{Status: 400, ContentType: jsonCT, Codes: []string{graphql.CodeBadUserInput}}},
		{name: "GET with bad extensions", method: "GET", query: get(`{ __typename }`, "extensions", `"x"`),
			want: response{Status: 400, ContentType: jsonCT, Codes: []string{graphql.CodeBadRequest}}},
		{name: "GET without query", method: "GET",
			want: response{Status: 400, ContentType: jsonCT, Codes: []string{graphql.CodeBadRequest}}},
		{name: "GET mutation", method: "GET", query: get(`mutation { __typename }`), header: map[string]string{"Accept": "application/graphql-response+json"},
			want: response{Status: 405, ContentType: gqlrCT, Allow: "POST", Codes: []string{graphql.CodeBadRequest}}},
		{name: "GET named mutation among queries", method: "GET", query: get(`query Q { __typename } mutation M { __typename }`, "operationName", "M"),
			want: response{Status: 405, ContentType: jsonCT, Allow: "POST", Codes: []string{graphql.CodeBadRequest}}},
		{name: "GET parse error", method: "GET", query: get(`{`), header: map[string]string{"Accept": "application/graphql-response+json"},
			want: response{Status: 400, ContentType: gqlrCT, Codes: []string{graphql.CodeParseFailed}}},
		{name: "PUT", method: "PUT", header: post, body: `{"query": "{ __typename }"}`,
			want: response{Status: 405, ContentType: jsonCT, Allow: "GET, POST", Codes: []string{graphql.CodeBadRequest}}},
		{name: "DELETE", method: "DELETE",
			want: response{Status: 405, ContentType: jsonCT, Allow: "GET, POST", Codes: []string{graphql.CodeBadRequest}}},
		{name: "browser", method: "GET", header: map[string]string{"Accept": browser},
			want: response{Status: 200, ContentType: "text/html; charset=utf-8"}, content: "<html"},
		{name: "browser with a query", method: "GET", query: get(`{ __typename }`), header: map[string]string{"Accept": browser},
			want: response{Status: 200, ContentType: "text/html; charset=utf-8"}, content: "<html"},
		{name: "fetch preferring JSON over HTML", method: "GET", query: get(`{ __typename }`), header: map[string]string{"Accept": "application/json, text/html;q=0.9"},
			want: response{Status: 200, ContentType: jsonCT, HasData: true}},
		{name: "HEAD without HTML", method: "HEAD",
			want: response{Status: 405, ContentType: jsonCT, Allow: "GET, POST"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, body := do(t, tc.method, endpoint+tc.query, tc.header, tc.body)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("response (-want +got):\n%s\nbody: %.500s", diff, body)
			}
			if !strings.Contains(string(body), tc.content) {
				t.Errorf("body does not contain %q: %.500s", tc.content, body)
			}
		})
	}
}

// TestBrowserPageAssets checks that the page's assets are served whatever
// the Accept header, as a browser asks for scripts.
func TestBrowserPageAssets(t *testing.T) {
	f := newFixture(t)
	endpoint := serve(t, newServer(t, f.ix, f.tracker, Options{}))
	_, page := do(t, "GET", endpoint, map[string]string{"Accept": browser}, "")
	i := strings.Index(string(page), "?asset=")
	if i < 0 {
		t.Fatalf("the page links no asset: %.300s", page)
	}
	link := string(page[i:])
	link = link[:strings.IndexAny(link, `"'`)]
	link = strings.ReplaceAll(link, "&amp;", "&")
	got, body := do(t, "GET", endpoint+link, map[string]string{"Accept": "*/*"}, "")
	if got.Status != 200 || strings.Contains(got.ContentType, "json") || len(body) == 0 {
		t.Errorf("asset %s: %+v, %d bytes", link, got, len(body))
	}
}

// TestAcceptNegotiation: the response's media type, and whether a request
// asks for the page or for an event stream, by the Accept header (its
// values, one a line here).
func TestAcceptNegotiation(t *testing.T) {
	for _, tc := range []struct {
		accept string
		media  string
		html   bool
		events bool
	}{
		{accept: "", media: mediaJSON},
		{accept: "*/*", media: mediaJSON},
		{accept: "*", media: mediaJSON},
		{accept: "application/*", media: mediaJSON},
		{accept: "application/json", media: mediaJSON},
		{accept: "application/graphql-response+json", media: mediaGraphQLResponse},
		{accept: "application/graphql-response+json, application/json;q=0.9", media: mediaGraphQLResponse},
		{accept: "application/graphql-response+json;q=0.8, application/json", media: mediaJSON},
		{accept: "application/graphql-response+json;q=0.5, application/json;q=0.5", media: mediaGraphQLResponse},
		{accept: "application/graphql-response+json;q=0, */*", media: mediaJSON},
		{accept: "application/graphql-response+json;q=0.5, application/*", media: mediaJSON},
		{accept: "*/*;q=0.1, application/graphql-response+json;q=0.5", media: mediaGraphQLResponse},
		{accept: "application/*;q=0.1, application/graphql-response+json;q=0.2, application/json;q=0.3", media: mediaJSON},
		{accept: "Application/GraphQL-Response+JSON", media: mediaGraphQLResponse},
		{accept: "application/json;q=0.5\napplication/graphql-response+json", media: mediaGraphQLResponse},
		{accept: "text/html", media: mediaJSON, html: true},
		{accept: "Text/HTML", media: mediaJSON, html: true},
		{accept: browser, media: mediaJSON, html: true},
		{accept: "text/html;q=0.5, application/json", media: mediaJSON},
		{accept: "text/html;q=0.5, application/json;q=0.5", media: mediaJSON},
		{accept: "text/html , application/json;q=0.9", media: mediaJSON, html: true},
		{accept: "text/html;level=1;q=0.8, application/graphql-response+json;q=0.7", media: mediaGraphQLResponse, html: true},
		{accept: "text/html;q=0", media: mediaJSON},
		{accept: "text/html;q=2", media: mediaJSON, html: true},
		{accept: "text/*", media: mediaJSON},
		{accept: "*/*, text/html;q=0.1", media: mediaJSON, html: true},
		{accept: "application/json\ntext/html", media: mediaJSON},
		{accept: "garbage;;, image/png", media: mediaJSON},
		{accept: "garbage;;, text/html", media: mediaJSON, html: true},
		{accept: "text/event-stream", media: mediaJSON, events: true},
		{accept: "TEXT/EVENT-STREAM", media: mediaJSON, events: true},
		{accept: "text/event-stream, application/json", media: mediaJSON, events: true},
		{accept: "application/json;q=0.5, text/event-stream;q=0.5", media: mediaJSON, events: true},
		{accept: "application/json, text/event-stream;q=0.5", media: mediaJSON},
		{accept: "application/graphql-response+json, text/event-stream;q=0.9", media: mediaGraphQLResponse},
		{accept: "text/event-stream;q=0", media: mediaJSON},
		{accept: "text/*, */*", media: mediaJSON},
		{accept: "text/event-stream, text/html", media: mediaJSON, html: true, events: true},
	} {
		t.Run(tc.accept, func(t *testing.T) {
			accept := strings.Split(tc.accept, "\n")
			if got := responseMedia(accept); got != tc.media {
				t.Errorf("responseMedia = %s, want %s", got, tc.media)
			}
			if got := acceptsHTML(accept); got != tc.html {
				t.Errorf("acceptsHTML = %v, want %v", got, tc.html)
			}
			if got := acceptsEventStream(accept); got != tc.events {
				t.Errorf("acceptsEventStream = %v, want %v", got, tc.events)
			}
		})
	}
}
