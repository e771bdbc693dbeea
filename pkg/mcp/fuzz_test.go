package mcp

import (
	"encoding/json"
	"strings"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetcache/fleetcache/internal/graphqltest"
	"github.com/fleetcache/fleetcache/pkg/graphql"
	"github.com/fleetcache/fleetcache/pkg/index/views"
)

// FuzzToolArguments calls each tool with arbitrary arguments: every call
// is answered, either with a tool error whose text says something, or with
// structured content; never a protocol error, a panic or an empty answer.
func FuzzToolArguments(f *testing.F) {
	for _, seed := range []struct{ tool, args string }{
		{"find_resources", `{"kinds":["Pod"],"fields":["status.phase"],"first":2}`},
		{"find_resources", `{"labelSelector":"app in (web","sort":[{"field":"metadata.name","order":"DESC"}]}`},
		{"find_resources", `{"after":"UAJjMQ","first":-3}`},
		{"find_resources", `{"fieldSelector":"status.phase!=Running","search":"web","clusterSelector":"env=prod"}`},
		{"get_resource", `{"cluster":"c1","kind":"ConfigMap","namespace":"web","name":"settings","format":"json"}`},
		{"get_resource", `{"cluster":"c1","kind":"Event","name":"ev"}`},
		{"count_resources", `{"groupBy":"FIELD","field":"spec.containers[].image","top":1}`},
		{"count_resources", `{"groupBy":"LABEL"}`},
		{"cluster_health", `{"cluster":"c3","problemsOnly":true}`},
		{"cluster_health", `{"selector":"!!"}`},
		{"get_table", `{"kinds":["Pod","Deployment.apps"],"wide":true,"first":1}`},
		{"get_table", `null`},
		{"get_table", `[1,2]`},
	} {
		f.Add(seed.tool, seed.args)
	}
	fx := graphqltest.NewFixture(f)
	api, err := graphql.New(views.Of(fx.Index), fx.Tracker, graphql.Options{})
	if err != nil {
		f.Fatal(err)
	}
	s, err := New(api, Options{ResultBytes: 2048})
	if err != nil {
		f.Fatal(err)
	}
	ctx := f.Context()
	t1, t2 := mcpsdk.NewInMemoryTransports()
	ss, err := s.sdk.Connect(ctx, t1, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = ss.Close() })
	cs, err := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "fuzz", Version: "v0"}, nil).Connect(ctx, t2, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = cs.Close() })
	tools := []string{"find_resources", "get_resource", "count_resources", "cluster_health", "get_table"}
	f.Fuzz(func(t *testing.T, tool, args string) {
		if !json.Valid([]byte(args)) {
			return // the client encodes arguments as JSON
		}
		known := false
		for _, name := range tools {
			known = known || name == tool
		}
		if !known {
			tool = tools[len(tool)%len(tools)]
		}
		res, err := cs.CallTool(t.Context(), &mcpsdk.CallToolParams{Name: tool, Arguments: json.RawMessage(args)})
		if err != nil {
			t.Fatalf("%s %s: %v", tool, args, err)
		}
		var text strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcpsdk.TextContent); ok {
				text.WriteString(tc.Text)
			}
		}
		switch {
		case res.IsError && strings.TrimSpace(text.String()) == "":
			t.Errorf("%s %s: a tool error without a message", tool, args)
		case !res.IsError && res.StructuredContent == nil:
			t.Errorf("%s %s: an answer without structured content", tool, args)
		case strings.Contains(text.String(), "internal error"):
			t.Errorf("%s %s: %s", tool, args, text.String())
		}
	})
}
