package app_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fleetcache/fleetcache/internal/app"
	"github.com/fleetcache/fleetcache/internal/graphqltest"
	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
	"github.com/fleetcache/fleetcache/pkg/index/object"
)

// mcpClusters is how many clusters BenchmarkMCPFind spreads its Pods over.
const mcpClusters = 100

// findQuery is the GraphQL query a find_resources call runs: a page of
// objects with their identity and labels, the count and the freshness.
const findQuery = `query Find($filter: ResourceFilter, $first: Int) {
  resources(filter: $filter, first: $first) {
    totalCount deniedClusters staleness { cluster status currentAsOf }
    edges { cursor node { cluster apiVersion kind namespace name creationTimestamp labels } }
    pageInfo { hasNextPage endCursor }
  }
}`

// BenchmarkMCPFind answers one find_resources call over HTTP, as an MCP
// client sends it (POST /mcp, a JSON-RPC tools/call; the stateless
// transport needs no session), beside the same query posted to /graphql
// (findQuery): a page of 50 with the count, whose filter is a namespace
// and "app=app-7,tier=fe" (graphqltest.Conjunction), over realistic Pods
// in 100 clusters laid out as in BenchmarkConjunctionHTTP and stored as the
// informers store them. The two sides alternate, the one that goes first
// changing every iteration; it reports each side's p50 and p99 and logs
// them. The difference is what MCP adds: JSON-RPC, the SDK's schema
// checks, the answer's reshaping and summary.
// FLEETCACHE_MCP_PODS sets the sizes (comma-separated; default 1000000).
func BenchmarkMCPFind(b *testing.B) {
	for _, n := range benchSizes(b, "FLEETCACHE_MCP_PODS", 1_000_000) {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) { benchMCPFind(b, n) })
	}
}

func benchMCPFind(b *testing.B, n int) {
	t := portalStorage()[0].t // compressed, as the informers store Pods
	gql := serve(b, app.Options{}, func(a *app.Aggregator) {
		t.Projected = fieldpath.NewSet(a.Index.IndexedPaths("pods"))
		fillPodsWith(a.Index, t, mcpClusters, n, func(t *object.Type, cluster string, i int, base time.Time) *object.Object {
			return graphqltest.RealisticPodIn(t, cluster, graphqltest.PodAppNamespace(i), i, base)
		})
	})
	ns, sel := graphqltest.Conjunction(n / mcpClusters)
	filter := map[string]any{"namespaces": []string{ns}, "labelSelector": sel}
	vars := map[string]any{"filter": filter, "first": 50}
	call, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": "find_resources", "arguments": map[string]any{"namespaces": []string{ns}, "labelSelector": sel, "first": 50}}})
	if err != nil {
		b.Fatal(err)
	}
	mcpURL := strings.TrimSuffix(gql.url, "/graphql") + "/mcp"
	find := func() ([]byte, error) {
		req, err := http.NewRequest(http.MethodPost, mcpURL, bytes.NewReader(call))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := gql.client.Do(req)
		if err != nil {
			return nil, err
		}
		out, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || !bytes.Contains(out, []byte(`"structuredContent"`)) {
			return nil, fmt.Errorf("find_resources failed: status %d, err %v: %s", resp.StatusCode, err, out)
		}
		return out, nil
	}
	out, err := find()
	if err != nil {
		b.Fatal(err)
	}
	var res struct {
		Result struct{ StructuredContent struct{ Summary string } }
	}
	if err := json.Unmarshal(out, &res); err != nil {
		b.Fatal(err)
	}
	b.Logf("%d Pods, %s in %s: %s (%d bytes; GraphQL %d bytes)", n, sel, ns, res.Result.StructuredContent.Summary, len(out), len(gql.do(b, findQuery, vars)))
	for range 50 { // warm up
		if _, err := find(); err != nil {
			b.Fatal(err)
		}
		gql.do(b, findQuery, vars)
	}

	var mcpLat, gqlLat []time.Duration
	sides := []func(){
		func() {
			start := time.Now()
			if _, err := find(); err != nil {
				b.Fatal(err)
			}
			mcpLat = append(mcpLat, time.Since(start))
		},
		func() {
			start := time.Now()
			gql.do(b, findQuery, vars)
			gqlLat = append(gqlLat, time.Since(start))
		},
	}
	i := 0
	for b.Loop() {
		sides[i%2]()
		sides[(i+1)%2]()
		i++
	}
	p := func(lat []time.Duration, q int) float64 {
		slices.Sort(lat)
		return float64(lat[len(lat)*q/100].Nanoseconds()) / 1e3
	}
	b.ReportMetric(p(mcpLat, 50), "mcp-p50-µs")
	b.ReportMetric(p(mcpLat, 99), "mcp-p99-µs")
	b.ReportMetric(p(gqlLat, 50), "graphql-p50-µs")
	b.ReportMetric(p(gqlLat, 99), "graphql-p99-µs")
	b.Logf("%d calls each: find_resources p50 %.0f µs, p99 %.0f µs; GraphQL p50 %.0f µs, p99 %.0f µs",
		len(mcpLat), p(mcpLat, 50), p(mcpLat, 99), p(gqlLat, 50), p(gqlLat, 99))
}
