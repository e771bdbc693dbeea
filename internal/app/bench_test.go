package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/fleetcache/fleetcache/internal/app"
	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/clusters"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/informers"
)

var (
	podType    = &object.Type{Resource: "pods", GVR: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Kind: "Pod", Namespaced: true}
	configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
)

// fleetShape is the synthetic fleet of the benchmarks: apps of 10 objects
// labelled app and tier, spread over clusters and namespaces.
const (
	benchNamespaces = 50
	appSize         = 10
)

func appLabels(i int) (app, tier string) {
	return fmt.Sprintf("web-%d", (i/appSize)%40), []string{"fe", "be", "db"}[(i/appSize)%3]
}

// fill puts n synthetic Pods, spread over the clusters, into ix.
func fill(ix *index.Index, clusterCount, n int) {
	perCluster := n / clusterCount
	for c := range clusterCount {
		cluster := fmt.Sprintf("c%d", c+1)
		for i := range perCluster {
			ns := fmt.Sprintf("ns-%02d", i%benchNamespaces)
			name := fmt.Sprintf("pod-%07d", i)
			app, tier := appLabels(i / benchNamespaces)
			raw := fmt.Appendf(nil, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q,"namespace":%q,"labels":{"app":%q,"tier":%q}},"spec":{"nodeName":"node-%d"}}`, name, ns, app, tier, i%20)
			o := &object.Object{
				Cluster: cluster, Type: podType, Namespace: ns, Name: name,
				UID:             types.UID(fmt.Sprintf("%s-%s-%s", cluster, ns, name)),
				ResourceVersion: "1",
				Labels:          object.Labels{{Key: "app", Value: app}, {Key: "tier", Value: tier}},
			}
			o.SetRaw(raw)
			ix.Upsert(o)
		}
	}
}

const pageQuery = `query Page($ns: String!, $sel: String!) {
  resources(filter: {namespaces: [$ns], labelSelector: $sel}, first: 50) {
    edges { node { cluster namespace name kind labels } }
    pageInfo { hasNextPage endCursor }
  }
}`

// graphqlClient posts one query and checks the answer has data and no error.
type graphqlClient struct {
	url    string
	client *http.Client
	token  string // sent as a bearer token if set
}

func (c graphqlClient) do(tb testing.TB, query string, vars map[string]any) []byte {
	out, err := c.try(query, vars)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// try is do for goroutines other than the benchmark's: it returns what
// failed.
func (c graphqlClient) try(query string, vars map[string]any) ([]byte, error) {
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, _ := http.NewRequest(http.MethodPost, c.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, err
	}
	// As a careful client reads: into one buffer of the answer's length.
	// The benchmarks' client shares the server's process and collector.
	var out []byte
	if resp.ContentLength >= 0 {
		out = make([]byte, resp.ContentLength)
		_, err = io.ReadFull(resp.Body, out)
	} else {
		out, err = io.ReadAll(resp.Body)
	}
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || bytes.Contains(out, []byte(`"errors"`)) {
		return nil, fmt.Errorf("query failed: status %d, err %v: %s", resp.StatusCode, err, out)
	}
	return out, nil
}

func serve(tb testing.TB, opts app.Options, setup func(*app.Aggregator)) graphqlClient {
	agg, err := app.New(opts)
	if err != nil {
		tb.Fatal(err)
	}
	setup(agg)
	runtime.GC() // measure the steady state, not the collection of what setup left behind
	srv := httptest.NewServer(agg.Handler)
	tb.Cleanup(srv.Close)
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	tb.Cleanup(tr.CloseIdleConnections)
	return graphqlClient{url: srv.URL + "/graphql", client: &http.Client{Transport: tr}}
}

// measure runs op in b.Loop, timing each call, and reports p50 and p99.
func measure(b *testing.B, op func()) {
	var lat []time.Duration
	for b.Loop() {
		start := time.Now()
		op()
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkGraphQL measures end to end over HTTP, with 10 clusters in the
// index: (a) a namespace + label selector page of 50, (b) a resource by key,
// (c) a facet count by cluster; latency sequentially, throughput in parallel.
func BenchmarkGraphQL(b *testing.B) {
	for _, size := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("objects=%d", size), func(b *testing.B) {
			c := serve(b, app.Options{}, func(a *app.Aggregator) { fill(a.Index, 10, size) })
			queries := []struct {
				name  string
				query string
				vars  func(i int) map[string]any
			}{
				{"page", pageQuery, func(i int) map[string]any {
					return map[string]any{"ns": fmt.Sprintf("ns-%02d", i%benchNamespaces), "sel": fmt.Sprintf("app=web-%d,tier in (fe,be)", i%40)}
				}},
				{"resource", `query R($c: String!, $ns: String!, $n: String!) { resource(cluster: $c, kind: "Pod", namespace: $ns, name: $n) { name uid object } }`,
					func(i int) map[string]any {
						j := i % (size / 10)
						return map[string]any{"c": fmt.Sprintf("c%d", i%10+1), "ns": fmt.Sprintf("ns-%02d", j%benchNamespaces), "n": fmt.Sprintf("pod-%07d", j)}
					}},
				{"facets", `{ facets(by: CLUSTER) { value count } }`, func(int) map[string]any { return nil }},
			}
			for _, q := range queries {
				b.Run(q.name+"/latency", func(b *testing.B) {
					i := 0
					measure(b, func() { c.do(b, q.query, q.vars(i)); i++ })
				})
				b.Run(q.name+"/throughput", func(b *testing.B) {
					b.SetParallelism(8)
					start := time.Now()
					b.RunParallel(func(pb *testing.PB) {
						i := 0
						for pb.Next() {
							c.do(b, q.query, q.vars(i))
							i++
						}
					})
					b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
				})
			}
		})
	}
}

// BenchmarkPageVersusAPIServers answers the same namespace + label selector
// page of 50 over the same objects, held in 3 real clusters: by fleetcache
// over HTTP, and by LISTing each API server with the selector and merging.
// Sizes grow (objects are added, never removed), up to the largest the
// test servers hold comfortably on the project's machine.
func BenchmarkPageVersusAPIServers(b *testing.B) {
	env := testbed.Env(b)
	sel := "app=web-3,tier in (fe,be)"
	ns := "ns-07"
	for _, perCluster := range []int{50_000, 200_000} {
		b.Run(fmt.Sprintf("objects=%d", 3*perCluster), func(b *testing.B) {
			var wg sync.WaitGroup
			for _, c := range env.Clusters() {
				wg.Go(func() { seedConfigMaps(b, testcluster.Dynamic(b, c.AdminConfig()), perCluster) })
			}
			wg.Wait()
			b.Run("fleetcache", func(b *testing.B) {
				opts := app.Options{Informers: informers.Options{Resources: []string{"configmaps"}}}
				c := serve(b, opts, func(a *app.Aggregator) {
					var cs []clusters.Cluster
					for _, tc := range env.Clusters() {
						cs = append(cs, clusters.Cluster{Name: tc.Name(), Config: tc.AdminConfig()})
					}
					startSynced(b, a, cs)
				})
				want := len(listFromAPIServers(b, ns, sel))
				out := c.do(b, pageQuery, map[string]any{"ns": ns, "sel": sel})
				if got := bytes.Count(out, []byte(`"cluster"`)); got != min(want, 50) {
					b.Fatalf("fleetcache page has %d objects, API servers %d", got, want)
				}
				measure(b, func() { c.do(b, pageQuery, map[string]any{"ns": ns, "sel": sel}) })
			})
			b.Run("apiservers", func(b *testing.B) {
				measure(b, func() { listFromAPIServers(b, ns, sel) })
			})
		})
	}
}

var apiClients sync.Map // cluster name → dynamic.Interface

// listFromAPIServers lists the page from each cluster (limit 50 each,
// concurrently), merges by cluster/namespace/name and keeps 50.
func listFromAPIServers(b *testing.B, ns, sel string) []string {
	names := listEachAPIServer(b, func(dc dynamic.Interface) (*unstructured.UnstructuredList, error) {
		return dc.Resource(configMaps).Namespace(ns).List(context.Background(), metav1.ListOptions{LabelSelector: sel, Limit: 50})
	})
	slices.Sort(names)
	return names[:min(50, len(names))]
}

// listEachAPIServer runs list against every test cluster's API server
// concurrently, as a client of a fleet without fleetcache would, and
// returns the cluster/namespace/name of every object listed.
func listEachAPIServer(b *testing.B, list func(dynamic.Interface) (*unstructured.UnstructuredList, error)) []string {
	env := testbed.Env(b)
	var mu sync.Mutex
	var names []string
	var wg sync.WaitGroup
	for _, c := range env.Clusters() {
		v, _ := apiClients.LoadOrStore(c.Name(), testcluster.Dynamic(b, c.AdminConfig()))
		dc := v.(dynamic.Interface)
		wg.Go(func() {
			l, err := list(dc)
			if err != nil {
				b.Error(err)
				return
			}
			mu.Lock()
			for _, u := range l.Items {
				names = append(names, c.Name()+"/"+u.GetNamespace()+"/"+u.GetName())
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	return names
}

func startSynced(b *testing.B, a *app.Aggregator, cs []clusters.Cluster) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Start(ctx) }() // the clusters and their prober
	b.Cleanup(func() { cancel(); <-done })
	if err := a.Registry.Set(cs); err != nil {
		b.Fatal(err)
	}
	for _, c := range cs {
		for s, _ := a.Health.Cluster(c.Name); s.Status != health.Synced; s, _ = a.Health.Cluster(c.Name) {
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// seedConfigMaps creates n ConfigMaps labelled like the synthetic fleet,
// spread over the benchmark namespaces, unless they exist.
func seedConfigMaps(b *testing.B, dc dynamic.Interface, n int) {
	for i := range benchNamespaces {
		testcluster.CreateNamespace(b, dc, fmt.Sprintf("ns-%02d", i))
	}
	testcluster.Seed(b, dc, configMaps, n, func(i int) *unstructured.Unstructured {
		app, tier := appLabels(i / benchNamespaces)
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{
				"namespace": fmt.Sprintf("ns-%02d", i%benchNamespaces), "name": fmt.Sprintf("cm-%07d", i),
				"labels": map[string]any{"app": app, "tier": tier},
			},
			"data": map[string]any{"config.yaml": "replicas: 3\n"},
		}}
	})
}
