package mcp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetcache/fleetcache/internal/graphqltest"
	"github.com/fleetcache/fleetcache/pkg/authn"
	"github.com/fleetcache/fleetcache/pkg/authz"
	"github.com/fleetcache/fleetcache/pkg/graphql"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/views"
	"github.com/fleetcache/fleetcache/pkg/mcp"
	"github.com/fleetcache/fleetcache/pkg/transport"
)

// users are the callers of the test servers, by bearer token: admin sees
// everything, alice only the namespace web.
var users = map[string]*authn.User{
	"admin-token": {Name: "admin"},
	"alice-token": {Name: "alice"},
}

// tokens is an Authenticator of users.
type tokens struct{}

func (tokens) Authenticate(_ context.Context, token string) (*authn.User, error) {
	if u, ok := users[token]; ok {
		return u, nil
	}
	return nil, authn.ErrUnauthenticated
}

// served is an MCP server over an index and a health tracker, behind the
// GraphQL transport's Guard (authentication by tokens, authorization by
// policy rules), on 127.0.0.1.
type served struct {
	url string
	api *graphql.Server
}

// serve serves ix and tr as the application does, with opts.
func serve(t testing.TB, ix *index.Index, tr *health.Tracker, opts mcp.Options) *served {
	t.Helper()
	policy, err := authz.NewPolicy([]authz.Rule{{Users: []string{"admin"}}, {Users: []string{"alice"}, Namespaces: []string{"web"}}})
	if err != nil {
		t.Fatal(err)
	}
	api, err := graphql.New(views.Of(ix), tr, graphql.Options{Authorizer: authz.New(policy, authz.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	tp, err := transport.New(api, transport.Options{Authenticator: tokens{}})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := mcp.New(api, opts)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(tp.Guard(srv))
	t.Cleanup(hs.Close)
	return &served{url: hs.URL, api: api}
}

// fixture serves graphqltest's small fleet (c3 disconnected).
func fixture(t testing.TB) *served {
	t.Helper()
	f := graphqltest.NewFixture(t)
	return serve(t, f.Index, f.Tracker, mcp.Options{})
}

// bearer adds a bearer token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// connect opens a client session as the user of token.
func (s *served) connect(t testing.TB, token string) *mcpsdk.ClientSession {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	c := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "test", Version: "v0"}, nil)
	cs, err := c.Connect(t.Context(), &mcpsdk.StreamableClientTransport{Endpoint: s.url, HTTPClient: &http.Client{Transport: bearer{token, tr}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// callTool calls a tool and, unless it is a tool error, decodes its
// structured answer into out.
func callTool(t testing.TB, cs *mcpsdk.ClientSession, tool string, args map[string]any, out any) *mcpsdk.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcpsdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s %v: %v", tool, args, err)
	}
	if res.IsError {
		return res
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	checkOutput(t, cs, tool, b)
	if out == nil {
		return res
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s: decode %s: %v", tool, b, err)
	}
	return res
}

// call calls a tool and returns the text of its tool error, "" when the
// call succeeded.
func call(t testing.TB, cs *mcpsdk.ClientSession, tool string, args map[string]any, out any) string {
	t.Helper()
	if res := callTool(t, cs, tool, args, out); res.IsError {
		return text(res)
	}
	return ""
}

// mustCall is callTool for calls that must succeed.
func mustCall(t testing.TB, cs *mcpsdk.ClientSession, tool string, args map[string]any, out any) *mcpsdk.CallToolResult {
	t.Helper()
	res := callTool(t, cs, tool, args, out)
	if res.IsError {
		t.Fatalf("%s %v: tool error: %s", tool, args, text(res))
	}
	return res
}

// text is the text of a result's content.
func text(res *mcpsdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcpsdk.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// checkOutput checks a tool's structured answer against the output schema
// that tools/list gives for it: the server does not check its answers.
func checkOutput(t testing.TB, cs *mcpsdk.ClientSession, tool string, answer []byte) {
	t.Helper()
	list, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range list.Tools {
		if tl.Name != tool {
			continue
		}
		b, err := json.Marshal(tl.OutputSchema)
		if err != nil {
			t.Fatal(err)
		}
		var schema jsonschema.Schema
		if err := json.Unmarshal(b, &schema); err != nil {
			t.Fatal(err)
		}
		resolved, err := schema.Resolve(nil)
		if err != nil {
			t.Fatalf("%s: output schema: %v", tool, err)
		}
		var v any
		if err := json.Unmarshal(answer, &v); err != nil {
			t.Fatal(err)
		}
		if err := resolved.Validate(v); err != nil {
			t.Errorf("%s: the answer does not fit the output schema: %v\n%s", tool, err, answer)
		}
		return
	}
	t.Fatalf("no tool %s", tool)
}
