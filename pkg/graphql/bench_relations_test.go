package graphql

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fleetcache/fleetcache/internal/graphqltest"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/compact"
	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/openapi"
)

// relBenchClusters is how many clusters the relations benchmark's Pods
// are spread over.
const relBenchClusters = 10

// BenchmarkRelations answers a page of 50 objects with a relation of
// each, at scale: Service.pods (50 Services with 50 of their Pods each,
// through the label postings), Pod.services (50 Pods with their Services,
// through the selector index), ConfigMap.pods (50 ConfigMaps with their
// Pods' count, through the index of each path that can name them) and
// Deployment-like owner chains (Pod.owner, a lookup by key), beside the
// same pages without relations. The Pods are graphqltest's realistic
// Pods, compressed, each app's in one namespace (10 clusters, 100
// namespaces, 200 apps of 500 Pods per cluster at 1,000,000 Pods); each
// app has a Service selecting app=<app>, one selecting app and tier, and
// its ConfigMap <app>-config, which its Pods mount.
//
// FLEETCACHE_REL_PODS sets the sizes (comma-separated; default 100000).
func BenchmarkRelations(b *testing.B) {
	sizes := []int{100_000}
	if s := os.Getenv("FLEETCACHE_REL_PODS"); s != "" {
		sizes = nil
		for f := range strings.SplitSeq(s, ",") {
			n, err := strconv.Atoi(f)
			if err != nil {
				b.Fatal(err)
			}
			sizes = append(sizes, n)
		}
	}
	queries := []struct{ name, query string }{
		{"Service/none", `{ services(filter: {clusters: ["c000"]}, first: 50) { edges { node { name } } } }`},
		{"Service.pods", `{ services(filter: {clusters: ["c000"]}, first: 50) { edges { node { name ... on Service {
			pods(first: 50) { totalCount edges { node { name } } } } } } } }`},
		{"Pod/none", `{ pods(filter: {clusters: ["c000"], namespaces: ["ns-07"]}, first: 50) { edges { node { name } } } }`},
		{"Pod.services", `{ pods(filter: {clusters: ["c000"], namespaces: ["ns-07"]}, first: 50) { edges { node { name ... on Pod {
			services(first: 10) { totalCount edges { node { name } } } } } } } }`},
		{"Pod.owner", `{ pods(filter: {clusters: ["c000"], namespaces: ["ns-07"]}, first: 50) { edges { node { name ... on Pod {
			owner { name } node { name } } } } } }`},
		{"ConfigMap.pods", `{ configmaps(filter: {clusters: ["c000"]}, first: 50) { edges { node { name ... on ConfigMap {
			pods(first: 0) { totalCount } } } } } }`},
		// A fifth of the fleet's Nodes, and of its Pods: a page and the count.
		{"Pod/through nodes", `{ pods(filter: {through: {nodes: {labelSelector: "zone=z1"}}}, first: 50) { totalCount edges { node { name } } } }`},
		{"Pod/through nodes, one namespace", `{ pods(filter: {namespaces: ["ns-07"], through: {nodes: {labelSelector: "zone=z1"}}}, first: 50) {
			totalCount edges { node { name } } } }`},
	}
	for _, n := range sizes {
		var s *Server
		for _, q := range queries {
			b.Run(fmt.Sprintf("pods=%d/%s", n, q.name), func(b *testing.B) {
				if s == nil {
					start := time.Now()
					s = newServer(b, relBenchIndex(b, n), newFixture(b).tracker, Options{Kinds: relBenchKinds(b)})
					b.Logf("%d Pods indexed in %s", n, time.Since(start).Round(time.Millisecond))
				}
				var objects int
				for b.Loop() {
					res := s.Execute(b.Context(), Request{Query: q.query})
					if len(res.Errors) > 0 {
						b.Fatal(res.Errors)
					}
					objects = strings.Count(string(res.data), `"name"`)
				}
				b.ReportMetric(float64(objects), "names/op")
			})
		}
	}
}

// relBenchKinds are the kinds of BenchmarkRelations.
func relBenchKinds(b testing.TB) Kinds {
	var kinds []openapi.Kind
	for _, k := range []string{"Pod", "Service", "ConfigMap", "ReplicaSet", "Node"} {
		kinds = append(kinds, relKinds[k].openapiKind(b))
	}
	return staticKinds{&openapi.Snapshot{Kinds: kinds}}
}

// relBenchIndex returns the index of BenchmarkRelations: n realistic
// Pods with their Services and ConfigMaps, and their Nodes, in five zones.
func relBenchIndex(b testing.TB, n int) *index.Index {
	ix := index.New(index.Options{Retention: 1000})
	podType := *relKinds["Pod"].typ()
	podType.Codec = compact.NewCodec("pods", 0)
	podType.Projected = fieldpath.NewSet(ix.IndexedPaths("pods"))
	svcType, cmType := relKinds["Service"].typ(), relKinds["ConfigMap"].typ()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	perCluster := n / relBenchClusters
	put := func(t *object.Type, cluster, raw string) { ix.Upsert(graphqltest.FromJSON(b, cluster, t, raw)) }
	for c := range relBenchClusters {
		cluster := fmt.Sprintf("c%03d", c)
		for j := range graphqltest.PodNodes {
			put(relKinds["Node"].typ(), cluster, fmt.Sprintf(`{"apiVersion":"v1","kind":"Node","metadata":{"name":"node-%02d",`+
				`"uid":"%s-node-%02d","labels":{"zone":"z%d"}}}`, j, cluster, j, j%5))
		}
		apps := map[string]string{}
		for i := range perCluster {
			o := graphqltest.RealisticPodIn(&podType, cluster, graphqltest.PodAppNamespace(i), i, base)
			ix.Upsert(o)
			apps[graphqltest.PodApp(i)] = o.Namespace
		}
		names := make([]string, 0, len(apps))
		for app := range apps {
			names = append(names, app)
		}
		slices.Sort(names)
		for _, app := range names {
			ns := apps[app]
			meta := func(name string) string {
				return `"metadata":{"name":"` + name + `","namespace":"` + ns + `","uid":"` + cluster + ns + name + `"}`
			}
			put(svcType, cluster, `{"apiVersion":"v1","kind":"Service",`+meta(app)+`,"spec":{"selector":{"app":"`+app+`"}}}`)
			put(svcType, cluster, `{"apiVersion":"v1","kind":"Service",`+meta(app+"-fe")+`,"spec":{"selector":{"app":"`+app+`","tier":"fe"}}}`)
			put(cmType, cluster, `{"apiVersion":"v1","kind":"ConfigMap",`+meta(app+"-config")+`}`)
		}
	}
	return ix
}
