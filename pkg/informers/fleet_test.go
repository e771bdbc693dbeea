package informers_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fleetcache/fleetcache/internal/procmem"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/clusters"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/informers"
)

// fleetNamespace holds the ConfigMaps of the fleet tests, the same in
// every test server.
const fleetNamespace = "fleet-scale"

// seedFleet creates n ConfigMaps in fleetNamespace of every test server.
func seedFleet(tb testing.TB, n int) {
	tb.Helper()
	env := testbed.Env(tb)
	for _, c := range env.Clusters() {
		dc := testcluster.Dynamic(tb, c.AdminConfig())
		testcluster.CreateNamespace(tb, dc, fleetNamespace)
		testcluster.Seed(tb, dc, configMaps, n, func(i int) *unstructured.Unstructured {
			return configMap(fleetNamespace, fmt.Sprintf("cm-%04d", i), map[string]any{"key": strings.Repeat("v", 64)})
		})
	}
}

// aliases registers n clusters, each an alias of one of the test servers
// in turn, as kubeconfig contexts pointing at the same servers would:
// each is its own cluster to fleetcache, with its own connection, lists
// and watches.
func aliases(tb testing.TB, n int) []clusters.Cluster {
	servers := testbed.Env(tb).Clusters()
	out := make([]clusters.Cluster, n)
	for i := range out {
		s := servers[i%len(servers)]
		out[i] = clusters.Cluster{Name: fmt.Sprintf("%s-%04d", s.Name(), i), Config: s.AdminConfig()}
	}
	return out
}

// healthWatch follows every status change of a Tracker from the start, and
// keeps the largest number of clusters ever DISCONNECTED, DEGRADED and
// waiting for a list slot at once. It reads the change log, not samples:
// no state is missed, however short.
type healthWatch struct {
	done chan struct{}
	err  error

	mu                             sync.Mutex
	status                         map[string]health.Status
	waiting                        map[string]bool
	maxDisconnected, maxDegraded   int
	maxWaiting                     int
	allSynced                      time.Time // when every cluster was first SYNCED
	firstDisconnected, firstDegrad string    // an example of each, with its message
}

func watchHealth(ctx context.Context, tr *health.Tracker, clusters int) *healthWatch {
	w := &healthWatch{done: make(chan struct{}), status: map[string]health.Status{}, waiting: map[string]bool{}}
	go func() {
		defer close(w.done)
		var after uint64
		for {
			changes, err := tr.Changes(after)
			if err != nil {
				w.err = err
				return
			}
			for _, ch := range changes {
				w.apply(ch, clusters)
				after = ch.Version
			}
			if err := tr.Wait(ctx, after); err != nil {
				return
			}
		}
	}()
	return w
}

func (w *healthWatch) apply(ch health.Change, clusters int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := ch.Cluster
	w.status[s.Name] = s.Status
	w.waiting[s.Name] = strings.Contains(s.Message, "waiting for its turn to list")
	var disconnected, degraded, waiting, synced int
	for name, st := range w.status {
		switch st {
		case health.Disconnected:
			disconnected++
		case health.Degraded:
			degraded++
		case health.Synced:
			synced++
		}
		if w.waiting[name] {
			waiting++
		}
	}
	if s.Status == health.Disconnected && w.firstDisconnected == "" {
		w.firstDisconnected = s.Name + ": " + s.Message
	}
	if s.Status == health.Degraded && w.firstDegrad == "" {
		w.firstDegrad = s.Name + ": " + s.Message
	}
	w.maxDisconnected = max(w.maxDisconnected, disconnected)
	w.maxDegraded = max(w.maxDegraded, degraded)
	w.maxWaiting = max(w.maxWaiting, waiting)
	if synced == clusters && w.allSynced.IsZero() {
		w.allSynced = time.Now()
	}
}

// footprint is what the process holds, read from /proc and the runtime.
type footprint struct {
	rss, heap uint64
	stacks    uint64 // goroutine stacks: outside the heap, inside the RSS
	// unused is the room inside the heap's spans that holds no object:
	// fragmentation, resident but not live.
	unused     uint64
	goroutines int
	fds        int
}

func measure(tb testing.TB) footprint {
	tb.Helper()
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	unused := []metrics.Sample{{Name: "/memory/classes/heap/unused:bytes"}}
	metrics.Read(unused)
	return footprint{rss: procStatus(tb, "VmRSS"), heap: m.HeapAlloc, stacks: m.StackInuse, unused: unused[0].Value.Uint64(),
		goroutines: runtime.NumGoroutine(), fds: openFiles(tb)}
}

// openFiles counts the process's open file descriptors.
func openFiles(tb testing.TB) int {
	tb.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		tb.Fatal(err)
	}
	return len(fds)
}

// procStatus reads a size in bytes from /proc/self/status.
func procStatus(tb testing.TB, field string) uint64 {
	tb.Helper()
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		tb.Fatal(err)
	}
	for line := range strings.SplitSeq(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				tb.Fatal(err)
			}
			return kb << 10
		}
	}
	tb.Fatalf("no %s in /proc/self/status", field)
	return 0
}

// fleetRun is the outcome of one fleet start.
type fleetRun struct {
	clusters, objects                        int
	synced                                   time.Duration
	maxDisconnected, maxDegraded, maxWaiting int
	before, after                            footprint
	hwm                                      uint64
	metrics                                  *prometheus.Registry
	index                                    *index.Index
	tracker                                  *health.Tracker
}

// startAliasedFleet registers n aliased clusters caching resource (the
// default types when ""), starts them all at once and waits until every one
// is SYNCED and holds what its server lists of resource, following health
// throughout.
//
// retention is how many status changes the Tracker keeps (0: its default,
// as the aggregator runs it): the follower reads them as they come, and
// fails the run if it falls further behind. The kept changes are part of
// what is measured: each holds the cluster's status with every type's.
func startAliasedFleet(tb testing.TB, n int, resource string, opts informers.Options, retention int) fleetRun {
	tb.Helper()
	env := testbed.Env(tb)
	before := measure(tb)
	ix := index.New(index.Options{})
	tr := health.NewTracker(ix, health.Options{Retention: retention})
	reg := prometheus.NewRegistry()
	reg.MustRegister(health.NewCollector(tr))
	if resource != "" {
		opts.Resources = []string{resource}
	}
	opts.Registerer = reg
	f, err := informers.NewFleet(ix, tr, opts)
	if err != nil {
		tb.Fatal(err)
	}
	registry := clusters.NewRegistry(f, clusters.Options{})
	cs := aliases(tb, n)
	for _, c := range cs {
		if err := registry.Add(c); err != nil {
			tb.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	watch := watchHealth(ctx, tr, n)
	begin := time.Now()
	done := make(chan error, 1)
	go func() {
		var fleetErr error
		var wg sync.WaitGroup
		wg.Go(func() { fleetErr = f.Start(ctx) })
		err := registry.Start(ctx)
		wg.Wait()
		done <- errors.Join(err, fleetErr)
	}()
	tb.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			tb.Errorf("registry: %v", err)
		}
		<-watch.done
	})

	want := map[string]int{}
	for _, s := range env.Clusters() {
		if resource != "" {
			want[s.Name()] = len(serverState(tb, testcluster.Dynamic(tb, s.AdminConfig()), informersGVR(resource)))
		}
	}
	testcluster.Eventually(tb, 5*time.Minute, fmt.Sprintf("%d clusters SYNCED with every object", n), func() (bool, string) {
		watch.mu.Lock()
		synced := !watch.allSynced.IsZero()
		watch.mu.Unlock()
		if !synced {
			statuses, _ := tr.Clusters()
			count := map[health.Status]int{}
			for _, s := range statuses {
				count[s.Status]++
			}
			return false, fmt.Sprint(count)
		}
		for _, c := range cs {
			server := c.Name[:strings.Index(c.Name, "-")]
			if resource == "" {
				break
			}
			if got := ix.ObjectCount(c.Name, resource); got != want[server] {
				return false, fmt.Sprintf("%s holds %d %s, its server %d", c.Name, got, resource, want[server])
			}
		}
		return true, ""
	})
	if watch.err != nil {
		tb.Fatalf("following health: %v", watch.err)
	}
	watch.mu.Lock()
	defer watch.mu.Unlock()
	out := fleetRun{clusters: n, synced: watch.allSynced.Sub(begin),
		maxDisconnected: watch.maxDisconnected, maxDegraded: watch.maxDegraded, maxWaiting: watch.maxWaiting,
		before: before, metrics: reg, index: ix, tracker: tr}
	for _, c := range cs {
		out.objects += ix.ObjectCount(c.Name, "")
	}
	if watch.maxDisconnected > 0 {
		tb.Errorf("%d clusters DISCONNECTED at once while every server was up, e.g. %s", watch.maxDisconnected, watch.firstDisconnected)
	}
	if watch.maxDegraded > 0 {
		tb.Errorf("%d clusters DEGRADED at once while every server was up, e.g. %s", watch.maxDegraded, watch.firstDegrad)
	}
	out.after = measure(tb)
	if path := os.Getenv("FLEETCACHE_FLEET_HEAP_PROFILE"); path != "" {
		// Where a started fleet's heap goes, while it runs.
		if err := procmem.WriteHeapProfile(path); err != nil {
			tb.Fatal(err)
		}
	}

	out.hwm = procStatus(tb, "VmHWM")
	return out
}

// limitRanges is a type the test servers hold none of.
var limitRanges = schema.GroupVersionResource{Version: "v1", Resource: "limitranges"}

func informersGVR(resource string) schema.GroupVersionResource {
	switch resource {
	case "configmaps":
		return configMaps
	case "limitranges":
		return limitRanges
	case "pods":
		return pods
	}
	panic("no GVR for " + resource)
}

func (r fleetRun) perCluster() (goroutines, fds float64) {
	return float64(r.after.goroutines-r.before.goroutines) / float64(r.clusters),
		float64(r.after.fds-r.before.fds) / float64(r.clusters)
}

// TestFleetStart starts 200 clusters at once, aliases of the three test
// servers, each with 300 ConfigMaps, with few list slots: no cluster may be
// reported DISCONNECTED or DEGRADED on the way while every server is up,
// clusters must have waited their turn (PENDING with the reason), and one
// cluster with one type may cost at most 6 goroutines and, once synced, one
// connection.
func TestFleetStart(t *testing.T) {
	env := testbed.Env(t)
	seedFleet(t, 300)
	// Retention for every change of the start, under the race detector.
	r := startAliasedFleet(t, 200, "configmaps", informers.Options{MaxConcurrentLists: 4}, 64*200)
	goroutines, fds := r.perCluster()
	t.Logf("%d clusters, %d objects: all SYNCED after %s; at most %d DISCONNECTED, %d DEGRADED, %d waiting for a list slot; per cluster %.2f goroutines, %.2f fds",
		r.clusters, r.objects, r.synced.Round(time.Millisecond), r.maxDisconnected, r.maxDegraded, r.maxWaiting, goroutines, fds)
	if r.maxWaiting == 0 {
		t.Errorf("no cluster ever waited for a list slot: the start was not bounded")
	}
	// Once synced, a cluster keeps one connection, its watches'; the one of
	// its lists closes after a second unused, and its two goroutines end.
	// The fleet's own goroutines (the prober's, the registry's, this
	// test's health watch) are not per cluster: a few are allowed besides.
	testcluster.Eventually(t, 30*time.Second, "one connection and 6 goroutines per synced cluster", func() (bool, string) {
		fds = float64(openFiles(t)-r.before.fds) / float64(r.clusters)
		extra := runtime.NumGoroutine() - r.before.goroutines
		return fds <= 1.05 && extra <= 6*r.clusters+16,
			fmt.Sprintf("%.2f file descriptors and %.2f goroutines per cluster", fds, float64(extra)/float64(r.clusters))
	})

	// A change reaches every alias of its server by a watch event whose
	// lag is measured from the object's managedFields time.
	c1 := env.Cluster("c1")
	update(t, testcluster.Dynamic(t, c1.AdminConfig()), fleetNamespace, "cm-0000", map[string]any{"key": "changed"})
	testcluster.Eventually(t, 30*time.Second, "ingest lag observed for every alias of c1", func() (bool, string) {
		families, err := r.metrics.Gather()
		if err != nil {
			return false, err.Error()
		}
		for _, f := range families {
			if f.GetName() != "fleetcache_ingest_lag_seconds" {
				continue
			}
			h := f.GetMetric()[0].GetHistogram()
			mean := h.GetSampleSum() / float64(h.GetSampleCount())
			if h.GetSampleCount() >= 67 && mean > 5 {
				t.Errorf("mean ingest lag %.1fs over %d events, want seconds at most", mean, h.GetSampleCount())
			}
			return h.GetSampleCount() >= 67, fmt.Sprintf("%d samples, sum %.2fs", h.GetSampleCount(), h.GetSampleSum())
		}
		return false, "no fleetcache_ingest_lag_seconds"
	})
}

// BenchmarkFleetStart is TestFleetStart at 1,000 clusters × 300 ConfigMaps
// (issue 19), at 1,000 clusters of a type without objects, for the
// footprint of a cluster before its objects, and at 200 clusters of the
// default types; and the careful client-go baseline at 1,000 clusters
// without objects (benchmarkCarefulStart). Run it alone, without -race:
//
//	go test -run '^$' -bench 'BenchmarkFleetStart/clusters=1000/configmaps=300' -benchtime 1x ./pkg/informers/
//	go test -run '^$' -bench 'BenchmarkFleetStart/clusters=1000/objects=0' -benchtime 1x ./pkg/informers/
//	go test -run '^$' -bench 'BenchmarkFleetStart/careful/clusters=1000/objects=0' -benchtime 1x ./pkg/informers/
//	go test -run '^$' -bench 'BenchmarkFleetStart/clusters=200/types=default' -benchtime 1x ./pkg/informers/
//
// one at a time: the process's RSS does not shrink back after the first.
// Besides the RSS, it reports the RSS once the runtime has returned every
// free page to the system (rss-freed: what the process holds in use) and
// the room in the heap's spans that no live object fills (unused:
// fragmentation, which the start's garbage leaves behind).
func BenchmarkFleetStart(b *testing.B) {
	seedFleet(b, 300)
	for _, tc := range []struct {
		name, resource string
		n              int
	}{{"clusters=1000/objects=0", "limitranges", 1000}, {"clusters=1000/configmaps=300", "configmaps", 1000},
		// The 16 default types, what a cluster costs per type: the test
		// servers hold few of their objects besides the 300 ConfigMaps.
		{"clusters=200/types=default", "", 200}} {
		if tc.resource == "limitranges" {
			b.Run("careful/"+tc.name, func(b *testing.B) {
				for b.Loop() {
					benchmarkCarefulStart(b, tc.n, limitRanges)
				}
			})
		}
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				r := startAliasedFleet(b, tc.n, tc.resource, informers.Options{}, 0)
				b.ReportMetric(float64(r.maxDisconnected), "max-disconnected")
				b.ReportMetric(float64(r.maxWaiting), "max-waiting")
				b.ReportMetric(float64(r.objects), "objects")
				series, size := exposition(b, r.metrics)
				b.ReportMetric(float64(series)/float64(r.clusters), "series/cluster")
				b.ReportMetric(float64(size)/(1<<10), "KiB-metrics")
				reportFootprint(b, r.clusters, r.synced, r.before, r.after, r.hwm)
				if path := os.Getenv("FLEETCACHE_FLEET_HEAP_PROFILE"); path != "" {
					if err := procmem.WriteHeapProfile(strings.TrimSuffix(path, ".mem") + "-steady.mem"); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// benchmarkCarefulStart is the careful client-go baseline of
// BenchmarkFleetStart: what n clusters cost a careful client-go user, one
// dynamic informer factory per cluster with one informer of gvr whose
// transform drops managedFields, at client-go's defaults, measured as
// BenchmarkFleetStart measures fleetcache, once every informer has synced
// and again steadyAfter later. Each cluster gets a transport of its own, as
// clusters with their own servers and credentials do: identical configs
// would share one through client-go's transport cache.
func benchmarkCarefulStart(b *testing.B, n int, gvr schema.GroupVersionResource) {
	before := measure(b)
	var cfgs []*rest.Config
	for _, c := range aliases(b, n) {
		cfg := rest.CopyConfig(c.Config)
		cfg.Proxy = http.ProxyFromEnvironment // not shared through the transport cache
		cfgs = append(cfgs, cfg)
	}
	begin := time.Now()
	infs, stop := startInformers(b, cfgs, gvr, dropManagedFields)
	defer stop()
	testcluster.Eventually(b, 5*time.Minute, fmt.Sprintf("%d informers synced", n), func() (bool, string) {
		synced := 0
		for _, inf := range infs {
			if inf.HasSynced() {
				synced++
			}
		}
		return synced == n, fmt.Sprintf("%d synced", synced)
	})
	took := time.Since(begin)
	reportFootprint(b, n, took, before, measure(b), procStatus(b, "VmHWM"))
}

// reportFootprint reports what n clusters added to the process from
// before: once all had synced (after, at the peak hwm), steadyAfter later,
// and then once the runtime has returned every free page to the system
// (rss-freed: what the process holds in use).
func reportFootprint(b *testing.B, n int, synced time.Duration, before, after footprint, hwm uint64) {
	perCluster := func(v, base uint64) float64 { return (float64(v) - float64(base)) / float64(n) }
	b.ReportMetric(synced.Seconds(), "s-to-all-synced")
	b.ReportMetric((float64(after.rss)-float64(before.rss))/(1<<20), "MiB-rss")
	b.ReportMetric(float64(hwm)/(1<<20), "MiB-rss-peak")
	b.ReportMetric((float64(after.heap)-float64(before.heap))/(1<<20), "MiB-heap")
	b.ReportMetric(perCluster(after.heap, before.heap), "B-heap/cluster")
	b.ReportMetric(perCluster(after.stacks, before.stacks), "B-stacks/cluster")
	b.ReportMetric(perCluster(uint64(after.goroutines), uint64(before.goroutines)), "goroutines/cluster")
	b.ReportMetric(perCluster(uint64(after.fds), uint64(before.fds)), "fds/cluster")

	// The steady state, once the connections closed during the start are
	// collected: x/net's HTTP/2 client keeps a closed connection, buffers
	// and all, until its read-idle health check fires (30 s as client-go
	// configures it).
	time.Sleep(steadyAfter)
	steady := measure(b)
	b.ReportMetric((float64(steady.rss)-float64(before.rss))/(1<<20), "MiB-rss-steady")
	b.ReportMetric(perCluster(steady.heap, before.heap), "B-heap/cluster-steady")
	b.ReportMetric(perCluster(steady.stacks, before.stacks), "B-stacks/cluster-steady")
	b.ReportMetric(perCluster(steady.unused, before.unused), "B-unused/cluster-steady")
	b.ReportMetric(perCluster(uint64(steady.fds), uint64(before.fds)), "fds/cluster-steady")
	debug.FreeOSMemory()
	b.ReportMetric((float64(procStatus(b, "VmRSS"))-float64(before.rss))/(1<<20), "MiB-rss-freed")
}

// steadyAfter is how long after the start BenchmarkFleetStart measures the
// steady state: past the 30 s for which a closed HTTP/2 connection stays
// reachable (see there).
const steadyAfter = 40 * time.Second

// exposition returns how many series reg holds and the size of /metrics'
// uncompressed text, served as the aggregator serves it.
func exposition(tb testing.TB, reg *prometheus.Registry) (series, size int) {
	tb.Helper()
	families, err := reg.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	for _, f := range families {
		series += len(f.GetMetric())
	}
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	return series, rec.Body.Len()
}
