package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/fleetcache/fleetcache/internal/app"
	"github.com/fleetcache/fleetcache/internal/graphqltest"
	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/clusters"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/compact"
	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/informers"
)

var podsGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// podsBase is the creation time of the first realistic Pod.
var podsBase = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// fillPods puts n realistic Pods (graphqltest.RealisticPod) of type t,
// spread over the clusters, into ix.
func fillPods(ix *index.Index, t *object.Type, clusterCount, n int) {
	fillPodsWith(ix, t, clusterCount, n, graphqltest.RealisticPod)
}

// fillPodsWith is fillPods with the Pods that pod makes.
func fillPodsWith(ix *index.Index, t *object.Type, clusterCount, n int, pod func(*object.Type, string, int, time.Time) *object.Object) {
	for c := range clusterCount {
		cluster := fmt.Sprintf("c%02d", c+1)
		for i := range n / clusterCount {
			ix.Upsert(pod(t, cluster, i, podsBase))
		}
	}
}

// portalStorage are the two ways the portal benchmark stores its Pods: as
// the informers do, compressed by a Codec of the resource (package
// compact), and as plain JSON. Either keeps the values of the indexed paths
// beside the body (object.Type.Projected), as the informers do.
func portalStorage() []struct {
	name string
	t    *object.Type
} {
	compressed, plain := *podType, *podType
	compressed.Codec = compact.NewCodec("pods", 0)
	return []struct {
		name string
		t    *object.Type
	}{{"compressed", &compressed}, {"plain", &plain}}
}

// portalQueries are issue 15's portal queries, (a) to (f); vars gives the
// variables of the i-th request.
// portalCase is one of the portal queries: its GraphQL and the variables
// of its i-th request.
type portalCase struct {
	name  string
	query string
	vars  func(i int) map[string]any
}

var portalQueries = []portalCase{
	{"a-fieldselector-indexed-namespace", `query($ns: String!) {
  resources(filter: {namespaces: [$ns], fieldSelector: "status.phase=Failed"}, first: 50) {
    totalCount edges { node { cluster namespace name } } pageInfo { hasNextPage endCursor } } }`, nsVars},
	{"b-sort-created-desc", `{
  resources(sort: [{field: "metadata.creationTimestamp", order: DESC}], first: 50) {
    edges { cursor node { cluster namespace name } } pageInfo { hasNextPage endCursor } } }`, noVars},
	{"c-sort-unindexed-in-namespace", `query($ns: String!) {
  resources(filter: {namespaces: [$ns]}, sort: [{field: "status.startTime", order: DESC}], first: 50) {
    edges { cursor node { cluster namespace name } } pageInfo { hasNextPage endCursor } } }`, nsVars},
	{"d-search-one-word", `query($w: String!) {
  resources(filter: {search: $w}, first: 50) { edges { node { cluster namespace name } } pageInfo { hasNextPage endCursor } } }`,
		func(i int) map[string]any {
			return map[string]any{"w": []string{"redis", "postgres", "envoy", "worker"}[i%4]}
		}},
	{"e-facets-by-phase", `{ facets(by: FIELD, field: "status.phase") { value count } }`, noVars},
	{"f-page", `query($ns: String!) {
  resources(filter: {namespaces: [$ns], labelSelector: "tier=fe"}, first: 50) {
    edges { node { cluster namespace name } } pageInfo { hasNextPage endCursor } } }`, nsVars},
	{"f-page-with-objects", `query($ns: String!) {
  resources(filter: {namespaces: [$ns], labelSelector: "tier=fe"}, first: 50) {
    edges { node { cluster namespace name object } } pageInfo { hasNextPage endCursor } } }`, nsVars},
	// Issue 16's broad page: a label selector that matches 0.5 % of the
	// Pods (graphqltest's app-N, one of 200 apps), 5,000 of 1,000,000,
	// with totalCount; and the same with a second requirement, which the
	// count must intersect (a third of them).
	{"g-labels-1pct-count", `{
  resources(filter: {labelSelector: "app=app-7"}, first: 50) {
    totalCount edges { node { cluster namespace name } } pageInfo { hasNextPage endCursor } } }`, noVars},
	{"g-labels-1pct-and-tier-count", `{
  resources(filter: {labelSelector: "app=app-7,tier=fe"}, first: 50) {
    totalCount edges { node { cluster namespace name } } pageInfo { hasNextPage endCursor } } }`, noVars},
	{"f-page-with-3-identity-fields", `query($ns: String!) {
  resources(filter: {namespaces: [$ns], labelSelector: "tier=fe"}, first: 50) {
    edges { node { cluster namespace name uid resourceVersion kind } } pageInfo { hasNextPage endCursor } } }`, nsVars},
	{"f-page-with-3-fields", `query($ns: String!) {
  resources(filter: {namespaces: [$ns], labelSelector: "tier=fe"}, first: 50) {
    edges { node { cluster namespace name phase: field(path: "status.phase") node: field(path: "spec.nodeName")
      images: field(path: "spec.containers[].image") } } pageInfo { hasNextPage endCursor } } }`, nsVars},
}

// portalQuery returns the portal query of that name.
func portalQuery(b *testing.B, name string) portalCase {
	for _, q := range portalQueries {
		if q.name == name {
			return q
		}
	}
	b.Fatalf("no portal query %q", name)
	return portalCase{}
}

func nsVars(i int) map[string]any {
	return map[string]any{"ns": fmt.Sprintf("ns-%02d", i%graphqltest.PodNamespaces)}
}

func noVars(int) map[string]any { return nil }

// BenchmarkPortalQueries answers issue 15's portal queries over HTTP, one
// at a time, from an index of realistic Pods in 10 clusters (100
// namespaces each, so that a namespace holds a tenth of a percent of the
// Pods across the clusters): (a) a fieldSelector on an indexed path plus a
// namespace, with totalCount; (b) newest first; (c) sorted by an unindexed
// path within a namespace; (d) a search word; (e) facets by phase; (f) a
// page with three fields, beside the same page with neither them nor the
// objects, and with the whole objects. Each runs on the Pods stored
// compressed, as the informers store them, and as plain JSON.
func BenchmarkPortalQueries(b *testing.B) {
	for _, size := range []int{100_000, 1_000_000} {
		for _, st := range portalStorage() {
			b.Run(fmt.Sprintf("objects=%d/storage=%s", size, st.name), func(b *testing.B) {
				var agg *app.Aggregator
				c := serve(b, app.Options{}, func(a *app.Aggregator) {
					agg = a
					// As the informers set up a type.
					st.t.Projected = fieldpath.NewSet(a.Index.IndexedPaths("pods"))
					fillPods(a.Index, st.t, 10, size)
				})
				for _, q := range portalQueries {
					b.Run(q.name, func(b *testing.B) {
						if out := c.do(b, q.query, q.vars(0)); !bytes.Contains(out, []byte(`"name"`)) && !bytes.Contains(out, []byte(`"count"`)) {
							b.Fatalf("the query selects nothing: %s", out)
						}
						i := 0
						measure(b, func() { c.do(b, q.query, q.vars(i)); i++ })
					})
				}
				// (f)'s comparison, request by request: the page, the same
				// page with three fields, and with three more identity
				// fields instead (an answer of about the same size),
				// alternating, so that all see the same machine. Each is
				// timed three ways: over HTTP; the handler alone, in
				// process (what fleetcache does); and a bare net/http
				// server sending the same answer's bytes (what the
				// transport charges for them).
				b.Run("f-alternating", func(b *testing.B) {
					fAlternating(b, c, agg.Handler)
				})
			})
		}
	}
}

// discardWriter is an http.ResponseWriter that counts what is written to
// it and keeps none of it.
type discardWriter struct {
	header  http.Header
	code    int
	written int
}

func (w *discardWriter) Header() http.Header { return w.header }

func (w *discardWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}

func (w *discardWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	w.written += len(p)
	return len(p), nil
}

// fAlternating times (f)'s three pages in turn over HTTP, in the handler
// alone and through a bare net/http server answering their bytes.
func fAlternating(b *testing.B, c graphqlClient, h http.Handler) {
	cases := []portalCase{portalQuery(b, "f-page"), portalQuery(b, "f-page-with-3-fields"), portalQuery(b, "f-page-with-3-identity-fields")}
	answers := make([][]byte, len(cases))
	for j, q := range cases {
		answers[j] = c.do(b, q.query, q.vars(0))
	}
	bare := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		j, _ := strconv.Atoi(r.URL.Query().Get("answer"))
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("Content-Length", strconv.Itoa(len(answers[j])))
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		_, _ = w.Write(answers[j])
	}))
	defer bare.Close()
	bareClient := graphqlClient{client: c.client}

	const ways = 3 // over HTTP, the handler, bare
	lat := make([][ways][]time.Duration, len(cases))
	i := 0
	for b.Loop() {
		// Each case takes each place in the sequence in turn.
		for k := range cases {
			j := (i + k) % len(cases)
			q := cases[j]
			start := time.Now()
			c.do(b, q.query, q.vars(i))
			lat[j][0] = append(lat[j][0], time.Since(start))

			body, _ := json.Marshal(map[string]any{"query": q.query, "variables": q.vars(i)})
			req := httptest.NewRequest(http.MethodPost, "/graphql", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			rec := &discardWriter{header: http.Header{}}
			start = time.Now()
			h.ServeHTTP(rec, req)
			lat[j][1] = append(lat[j][1], time.Since(start))
			if rec.code != http.StatusOK || rec.written == 0 {
				b.Fatalf("%s: status %d, %d bytes", q.name, rec.code, rec.written)
			}

			bareClient.url = bare.URL + "?answer=" + strconv.Itoa(j)
			start = time.Now()
			bareClient.do(b, q.query, q.vars(i))
			lat[j][2] = append(lat[j][2], time.Since(start))
		}
		i++
	}
	for j, name := range []string{"page", "fields", "identity"} {
		for k, way := range []string{"http", "handler", "bare"} {
			l := lat[j][k]
			slices.Sort(l)
			b.ReportMetric(float64(l[len(l)/2].Nanoseconds())/1e3, name+"-"+way+"-p50-µs")
			b.ReportMetric(float64(l[len(l)*99/100].Nanoseconds())/1e3, name+"-"+way+"-p99-µs")
		}
		b.ReportMetric(float64(len(answers[j])), name+"-bytes")
	}
}

// failedQuery is the page of 50 Pods whose phase is Failed, across the
// clusters, with their count: what the baseline asks the API servers.
const failedQuery = `{ resources(filter: {kinds: ["Pod"], fieldSelector: "status.phase=Failed"}, first: 50) {
  totalCount edges { node { cluster namespace name } } } }`

// BenchmarkFieldSelectorVersusAPIServers answers "the Pods whose phase is
// Failed" over the same realistic Pods held in 3 real clusters: by
// fleetcache over HTTP (its informers syncing them), and by LISTing every
// API server with the field selector status.phase=Failed concurrently and
// merging, a page of 50 (limit=50) and all of them (what a count needs).
func BenchmarkFieldSelectorVersusAPIServers(b *testing.B) {
	env := testbed.Env(b)
	const perCluster = 10_000
	var wg sync.WaitGroup
	for _, c := range env.Clusters() {
		wg.Go(func() { seedPods(b, testcluster.Dynamic(b, c.AdminConfig()), perCluster) })
	}
	wg.Wait()
	b.Run(fmt.Sprintf("objects=%d", 3*perCluster), func(b *testing.B) {
		want := len(listFailed(b, 0))
		if want == 0 {
			b.Fatal("no Failed Pods in the API servers")
		}
		b.Run("fleetcache", func(b *testing.B) {
			opts := app.Options{Informers: informers.Options{Resources: []string{"pods"}}}
			c := serve(b, opts, func(a *app.Aggregator) {
				var cs []clusters.Cluster
				for _, tc := range env.Clusters() {
					cs = append(cs, clusters.Cluster{Name: tc.Name(), Config: tc.AdminConfig()})
				}
				startSynced(b, a, cs)
			})
			var got struct {
				Data struct{ Resources struct{ TotalCount int } }
			}
			if err := json.Unmarshal(c.do(b, failedQuery, nil), &got); err != nil || got.Data.Resources.TotalCount != want {
				b.Fatalf("fleetcache counts %d Failed Pods (%v), the API servers %d", got.Data.Resources.TotalCount, err, want)
			}
			measure(b, func() { c.do(b, failedQuery, nil) })
		})
		b.Run("apiservers-page", func(b *testing.B) { measure(b, func() { listFailed(b, 50) }) })
		b.Run("apiservers-all", func(b *testing.B) { measure(b, func() { listFailed(b, 0) }) })
	})
}

// seedPods creates n realistic Pods in the cluster unless they exist, and
// gives those whose phase is Failed that status.
func seedPods(b *testing.B, dc dynamic.Interface, n int) {
	for i := range graphqltest.PodNamespaces {
		testcluster.CreateNamespace(b, dc, fmt.Sprintf("ns-%02d", i))
	}
	pod := func(i int) *unstructured.Unstructured {
		var u unstructured.Unstructured
		if err := json.Unmarshal(graphqltest.RealisticPod(podType, "", i, podsBase).Raw(), &u.Object); err != nil {
			b.Fatal(err)
		}
		for _, f := range []string{"uid", "resourceVersion", "creationTimestamp"} {
			unstructured.RemoveNestedField(u.Object, "metadata", f)
		}
		return &u
	}
	testcluster.Seed(b, dc, podsGVR, n, func(i int) *unstructured.Unstructured {
		u := pod(i)
		unstructured.RemoveNestedField(u.Object, "status")
		return u
	})
	for i := range n {
		if graphqltest.PodPhase(i) != "Failed" {
			continue
		}
		want := pod(i)
		r := dc.Resource(podsGVR).Namespace(want.GetNamespace())
		u, err := r.Get(context.Background(), want.GetName(), metav1.GetOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if phase, _, _ := unstructured.NestedString(u.Object, "status", "phase"); phase == "Failed" {
			continue
		}
		u.Object["status"] = map[string]any{"phase": "Failed", "reason": "Evicted"}
		if _, err := r.UpdateStatus(context.Background(), u, metav1.UpdateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// listFailed lists the Failed Pods of every API server with the field
// selector, concurrently, limit at a time (0: all in one list), and
// returns their names.
func listFailed(b *testing.B, limit int64) []string {
	return listEachAPIServer(b, func(dc dynamic.Interface) (*unstructured.UnstructuredList, error) {
		return dc.Resource(podsGVR).List(context.Background(), metav1.ListOptions{FieldSelector: "status.phase=Failed", Limit: limit})
	})
}
