package app_test

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetcache/fleetcache/internal/app"
	"github.com/fleetcache/fleetcache/internal/graphqltest"
	"github.com/fleetcache/fleetcache/internal/procmem"
	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
	"github.com/fleetcache/fleetcache/pkg/index/object"
)

// conjunctionClusters is how many clusters BenchmarkConjunctionHTTP
// spreads its Pods over.
const conjunctionClusters = 100

// BenchmarkConjunctionHTTP answers issue 31's conjunction page over HTTP:
// a page of 50 with totalCount whose filter is a namespace and
// "app=app-7,tier=fe" (graphqltest.Conjunction), from realistic Pods in
// 100 clusters laid out as Deployments are, each app's Pods in one
// namespace (graphqltest.PodAppNamespace), stored as the informers store
// them (compressed, the indexed paths' values beside each body). At
// 500,000 Pods app=app-7 holds 10,000 of them (2 %), tier=fe a third, and
// the page counts the 3,300 of app-7's namespace that have both. It
// reports p50 and p99 and the requests per second of one client and of
// four concurrent ones (each its own connection), and the live heap, the
// RSS the fill added and the process's peak RSS per Pod (at the process's
// GOGC; true of the first size a process fills).
// FLEETCACHE_CONJUNCTION_PODS sets the sizes (comma-separated; default
// 500000).
func BenchmarkConjunctionHTTP(b *testing.B) {
	for _, n := range benchSizes(b, "FLEETCACHE_CONJUNCTION_PODS", 500_000) {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) { benchConjunction(b, n) })
	}
}

// benchSizes returns the sizes that the environment variable env lists
// (comma-separated), else def.
func benchSizes(b *testing.B, env string, def int) []int {
	s := os.Getenv(env)
	if s == "" {
		return []int{def}
	}
	var sizes []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(f)
		if err != nil {
			b.Fatalf("%s: %v", env, err)
		}
		sizes = append(sizes, n)
	}
	return sizes
}

func benchConjunction(b *testing.B, n int) {
	heapBefore := graphqltest.Memory().Heap
	rssBefore, err := procmem.Read()
	if err != nil {
		b.Fatal(err)
	}
	t := portalStorage()[0].t // compressed, as the informers store Pods
	c := serve(b, app.Options{}, func(a *app.Aggregator) {
		// As the informers set up a type.
		t.Projected = fieldpath.NewSet(a.Index.IndexedPaths("pods"))
		fillPodsWith(a.Index, t, conjunctionClusters, n, func(t *object.Type, cluster string, i int, base time.Time) *object.Object {
			return graphqltest.RealisticPodIn(t, cluster, graphqltest.PodAppNamespace(i), i, base)
		})
	})
	// The RSS as the fill left it (serve collected once), then the live
	// heap after two more collections.
	rss, err := procmem.Read()
	if err != nil {
		b.Fatal(err)
	}
	heapAfter := graphqltest.Memory().Heap
	heap := float64(heapAfter-min(heapBefore, heapAfter)) / float64(n)
	rssAdded := float64(rss.RSS-min(rss.RSS, rssBefore.RSS)) / float64(n)
	b.Logf("%d Pods: %.0f B of live heap per Pod; RSS %d MiB (%d MiB before the fill, %.0f B per Pod added), peak %d MiB",
		n, heap, rss.RSS>>20, rssBefore.RSS>>20, rssAdded, rss.PeakRSS>>20)

	ns, sel := graphqltest.Conjunction(n / conjunctionClusters)
	query := fmt.Sprintf(`{
  resources(filter: {namespaces: [%q], labelSelector: %q}, first: 50) {
    totalCount edges { node { cluster namespace name } } pageInfo { hasNextPage endCursor } } }`, ns, sel)
	count := func(filter string) int {
		var got struct {
			Data struct{ Resources struct{ TotalCount int } }
		}
		if err := json.Unmarshal(c.do(b, fmt.Sprintf(`{ resources(filter: {%s}, first: 0) { totalCount } }`, filter), nil), &got); err != nil {
			b.Fatal(err)
		}
		return got.Data.Resources.TotalCount
	}
	appSel, _, _ := strings.Cut(sel, ",")
	matches := count(fmt.Sprintf(`namespaces: [%q], labelSelector: %q`, ns, sel))
	if matches == 0 {
		b.Fatalf("the conjunction %s in %s selects nothing", sel, ns)
	}
	b.Logf("conjunction %s in %s: %d matches; %s alone %d, tier=fe %d, %s %d, of %d Pods", sel, ns, matches,
		appSel, count(fmt.Sprintf(`labelSelector: %q`, appSel)), count(`labelSelector: "tier=fe"`),
		ns, count(fmt.Sprintf(`namespaces: [%q]`, ns)), n)
	for range 50 { // warm up
		c.do(b, query, nil)
	}

	for _, clients := range []int{1, 4} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			timeClients(b, c, query, clients)
			b.ReportMetric(heap, "heap-B/pod")
			b.ReportMetric(rssAdded, "rss-B/pod")
			b.ReportMetric(float64(rss.PeakRSS)/float64(n), "peak-rss-B/pod")
			b.ReportMetric(float64(matches), "matches")
		})
	}
}

// timeClients sends query b.N times in all from clients concurrent
// clients, each its next request as soon as it has read the answer to its
// last, and reports the latencies' p50 and p99 and the requests per
// second.
func timeClients(b *testing.B, c graphqlClient, query string, clients int) {
	var next atomic.Int64
	lat := make([][]time.Duration, clients)
	errs := make([]error, clients)
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for k := range clients {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				t0 := time.Now()
				if _, err := c.try(query, nil); err != nil {
					errs[k] = err
					return
				}
				lat[k] = append(lat[k], time.Since(t0))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	b.ReportMetric(float64(all[len(all)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(all[len(all)*99/100].Nanoseconds())/1e3, "p99-µs")
	b.ReportMetric(float64(len(all))/elapsed.Seconds(), "qps")
}
