package app_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetcache/fleetcache/internal/app"
	"github.com/fleetcache/fleetcache/internal/graphqltest"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
	"github.com/fleetcache/fleetcache/pkg/index/object"
)

// relationsClusters is how many clusters BenchmarkRelationsHTTP spreads
// its Pods over: as pkg/graphql's BenchmarkRelations, 100,000 Pods a
// cluster at 1,000,000.
const relationsClusters = 10

// BenchmarkRelationsHTTP answers issue 33's relation pages over HTTP,
// from realistic Pods stored as the informers store them, each app's Pods
// in one namespace, a Service selecting app=<app> for every app of every
// cluster, and the clusters' 50 Nodes: 50 Services of one cluster, each
// with a page of 50 of the Pods it selects and their count
// (Resource.related, which follows Service.pods); and the 50 Nodes of one
// cluster with the count of their Pods (Node.pods). It reports p50 and
// p99 and the requests per second of one client and of four concurrent
// ones. FLEETCACHE_RELATIONS_PODS sets the sizes (comma-separated;
// default 100000).
//
//	FLEETCACHE_RELATIONS_PODS=1000000 go test -run '^$' -bench BenchmarkRelationsHTTP -benchtime 500x -timeout 30m ./internal/app/
func BenchmarkRelationsHTTP(b *testing.B) {
	for _, n := range benchSizes(b, "FLEETCACHE_RELATIONS_PODS", 100_000) {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) { benchRelationsHTTP(b, n) })
	}
}

func benchRelationsHTTP(b *testing.B, n int) {
	t := portalStorage()[0].t // compressed, as the informers store Pods
	start := time.Now()
	c := serve(b, app.Options{}, func(a *app.Aggregator) {
		t.Projected = fieldpath.NewSet(a.Index.IndexedPaths("pods"))
		pod := func(t *object.Type, cluster string, i int, base time.Time) *object.Object {
			return graphqltest.RealisticPodIn(t, cluster, graphqltest.PodAppNamespace(i), i, base)
		}
		fillPodsWith(a.Index, t, relationsClusters, n, pod)
		fillServicesAndNodes(b, a.Index, relationsClusters, n)
	})
	b.Logf("%d Pods and their Services indexed in %s", n, time.Since(start).Round(time.Millisecond))
	pages := []struct{ name, query string }{
		{"services-with-pods", `{ resources(filter: {kinds: ["Service"], clusters: ["c01"]}, first: 50) { edges { node { name
  related(kinds: ["Pod"], first: 50) { totalCount edges { node { name } } } } } } }`},
		{"nodes-with-pod-count", `{ resources(filter: {kinds: ["Node"], clusters: ["c01"]}, first: 50) { edges { node { name
  related(kinds: ["Pod"], first: 0) { totalCount } } } } }`},
	}
	for _, p := range pages {
		var got struct {
			Data struct {
				Resources struct {
					Edges []struct {
						Node struct {
							Related struct {
								TotalCount int
								Edges      []json.RawMessage
							}
						}
					}
				}
			}
		}
		if err := json.Unmarshal(c.do(b, p.query, nil), &got); err != nil {
			b.Fatal(err)
		}
		objects := len(got.Data.Resources.Edges)
		for _, e := range got.Data.Resources.Edges {
			if e.Node.Related.TotalCount == 0 {
				b.Fatalf("%s: an object relates to no Pod", p.name)
			}
			objects += len(e.Node.Related.Edges)
		}
		if len(got.Data.Resources.Edges) != 50 {
			b.Fatalf("%s: %d objects in the page, want 50", p.name, len(got.Data.Resources.Edges))
		}
		for range 20 { // warm up
			c.do(b, p.query, nil)
		}
		for _, clients := range []int{1, 4} {
			b.Run(fmt.Sprintf("%s/clients=%d", p.name, clients), func(b *testing.B) {
				timeClients(b, c, p.query, clients)
				b.ReportMetric(float64(objects), "objects/answer")
			})
		}
	}
}

// fillServicesAndNodes adds, in each cluster, a Service selecting app=<app> in
// the namespace of each app of the Pods fillPodsWith added there, and the
// Nodes those Pods run on.
func fillServicesAndNodes(b *testing.B, ix *index.Index, clusterCount, n int) {
	svcType := &object.Type{Resource: "services", GVR: schema.GroupVersionResource{Version: "v1", Resource: "services"},
		Kind: "Service", Namespaced: true}
	nodeType := &object.Type{Resource: "nodes", GVR: schema.GroupVersionResource{Version: "v1", Resource: "nodes"}, Kind: "Node"}
	put := func(cluster string, t *object.Type, raw string) { ix.Upsert(graphqltest.FromJSON(b, cluster, t, raw)) }
	for c := range clusterCount {
		cluster := fmt.Sprintf("c%02d", c+1)
		for j := range graphqltest.PodNodes {
			put(cluster, nodeType, fmt.Sprintf(`{"apiVersion":"v1","kind":"Node","metadata":{"name":"node-%02d","uid":"%s-node-%02d"}}`, j, cluster, j))
		}
		apps := map[string]string{}
		for i := range n / clusterCount {
			apps[graphqltest.PodApp(i)] = graphqltest.PodAppNamespace(i)
		}
		names := slices.Sorted(maps.Keys(apps))
		for _, app := range names {
			put(cluster, svcType, fmt.Sprintf(`{"apiVersion":"v1","kind":"Service","metadata":{"name":%q,"namespace":%q,"uid":%q},"spec":{"selector":{"app":%q}}}`,
				app, apps[app], strings.Join([]string{cluster, apps[app], app}, "-"), app))
		}
	}
}
