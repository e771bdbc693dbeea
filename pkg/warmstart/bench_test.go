package warmstart_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/fleetcache/fleetcache/internal/graphqltest"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/compact"
	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
	"github.com/fleetcache/fleetcache/pkg/snapshot"
	"github.com/fleetcache/fleetcache/pkg/warmstart"
)

// cpuTime is the CPU the process has used, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// tableBytes is the size of the store's table files once the engine has
// settled.
func tableBytes(b *testing.B, dir string) int64 {
	names, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	var n int64
	for _, name := range names {
		if fi, err := os.Stat(name); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// timeQueries times a page of 50 Pods of one app with its count, over and
// over until stop.
func timeQueries(b *testing.B, ix *index.Index, stop <-chan struct{}) []time.Duration {
	sel, err := labels.Parse("app=app-7")
	if err != nil {
		b.Error(err)
		return nil
	}
	f := planner.Filter{Resources: []string{"pods"}, Selector: sel}
	var out []time.Duration
	for {
		select {
		case <-stop:
			return out
		default:
		}
		start := time.Now()
		planner.ListUnion(ix, []planner.Filter{f}, nil, 50)
		planner.Count(ix, f)
		out = append(out, time.Since(start))
	}
}

// timeUpserts times upserts of changed Pods, 1,000 a second, until stop.
func timeUpserts(ix *index.Index, t *object.Type, base time.Time, stop <-chan struct{}) []time.Duration {
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	var out []time.Duration
	for i := 0; ; i++ {
		select {
		case <-stop:
			return out
		case <-tick.C:
		}
		o := graphqltest.RealisticPod(t, fmt.Sprintf("c%03d", i%100), i%1000, base)
		o.ResourceVersion = strconv.Itoa(10_000_000 + i)
		start := time.Now()
		ix.Upsert(o)
		out = append(out, time.Since(start))
	}
}

// p99 returns the 99th percentile of ds in milliseconds.
func p99(ds []time.Duration) float64 {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return float64(ds[len(ds)*99/100]) / float64(time.Millisecond)
}

// BenchmarkSnapshot builds an index of $FLEETCACHE_SNAPSHOT_PODS (default
// 1,000,000) realistic Pods (graphqltest.RealisticPod, 2.5 KB of JSON) in
// 100 clusters, compressed as the informers compress them, and measures:
// a whole write of its snapshot (write), a load of it into a new index
// (load: the warm start's fill), and incremental writes of 5,000 changes,
// what the default 5 s interval writes of a fleet changing 1,000 objects a
// second (changes: CPU per minute at that rate).
//
//	go test -run '^$' -bench BenchmarkSnapshot -benchtime 3x -timeout 60m ./pkg/warmstart/
//
// At 10,000,000 Pods one process cannot hold the written index and the
// loaded one: with $FLEETCACHE_SNAPSHOT_DIR, write keeps its snapshot
// there, and a later process's load (run alone) reads it without building
// an index first.
func BenchmarkSnapshot(b *testing.B) {
	n := 1_000_000
	if s := os.Getenv("FLEETCACHE_SNAPSHOT_PODS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	codecs := new(compact.Codecs)
	// As the informers make it: compressed, the indexed paths projected.
	podType := *podType
	podType.Codec = codecs.For("pods")
	base := time.Now().Add(-time.Hour)
	const clusters = 100
	// The index written, built by the first benchmark that needs it.
	var ix *index.Index
	source := func() *index.Index {
		if ix != nil {
			return ix
		}
		ix = index.New(index.Options{})
		podType.Projected = fieldpath.NewSet(ix.IndexedPaths("pods"))
		for i := range n {
			c := fmt.Sprintf("c%03d", i%clusters)
			ix.Upsert(graphqltest.RealisticPod(&podType, c, i/clusters, base))
		}
		for c := range clusters {
			ix.Progress(fmt.Sprintf("c%03d", c), "pods", strconv.Itoa(n+1))
		}
		return ix
	}
	dir := os.Getenv("FLEETCACHE_SNAPSHOT_DIR")
	if dir == "" {
		dir = filepath.Join(b.TempDir(), "snapshot")
	}
	store, err := snapshot.Open(dir, snapshot.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = store.Close() }()
	var w *warmstart.Writer

	b.Run(fmt.Sprintf("pods=%d/write", n), func(b *testing.B) {
		ix := source()
		for b.Loop() {
			w = warmstart.NewWriter(ix, store, nil, warmstart.Options{})
			// A portal's page and count, and an informer's upserts, while
			// the whole snapshot is written: their p99 beside the same
			// work on an idle index.
			stop := make(chan struct{})
			var wg sync.WaitGroup
			var queries, upserts []time.Duration
			wg.Go(func() { queries = timeQueries(b, ix, stop) })
			wg.Go(func() { upserts = timeUpserts(ix, &podType, base, stop) })
			start, cpu := time.Now(), cpuTime(b)
			if err := w.Write(); err != nil {
				b.Fatal(err)
			}
			took := time.Since(start)
			b.ReportMetric((cpuTime(b) - cpu).Seconds(), "cpu-s")
			close(stop)
			wg.Wait()
			idleStop := make(chan struct{})
			time.AfterFunc(10*time.Second, func() { close(idleStop) })
			var idleQueries, idleUpserts []time.Duration
			wg.Go(func() { idleQueries = timeQueries(b, ix, idleStop) })
			wg.Go(func() { idleUpserts = timeUpserts(ix, &podType, base, idleStop) })
			wg.Wait()
			b.ReportMetric(took.Seconds(), "s")
			b.ReportMetric(float64(n)/took.Seconds(), "objects/s")
			b.ReportMetric(p99(queries), "query-p99-ms-writing")
			b.ReportMetric(p99(idleQueries), "query-p99-ms-idle")
			b.ReportMetric(p99(upserts), "upsert-p99-ms-writing")
			b.ReportMetric(p99(idleUpserts), "upsert-p99-ms-idle")
		}
		b.ReportMetric(float64(tableBytes(b, dir))/float64(n), "B-tables/pod")
	})
	b.Run(fmt.Sprintf("pods=%d/changes=5000", n), func(b *testing.B) {
		ix := source()
		if w == nil {
			// Not after write: the first write, whole, is not a change's.
			w = warmstart.NewWriter(ix, store, nil, warmstart.Options{})
			if err := w.Write(); err != nil {
				b.Fatal(err)
			}
		}
		rv := n + 1
		var cpu time.Duration
		writes := 0
		for b.Loop() {
			for range 5000 {
				rv++
				i := rv % n
				o := graphqltest.RealisticPod(&podType, fmt.Sprintf("c%03d", i%clusters), i/clusters, base)
				o.ResourceVersion = strconv.Itoa(rv)
				ix.Upsert(o)
			}
			start := cpuTime(b)
			if err := w.Write(); err != nil {
				b.Fatal(err)
			}
			cpu += cpuTime(b) - start
			writes++
		}
		perChange := cpu / time.Duration(writes*5000)
		b.ReportMetric(float64(perChange.Microseconds()), "cpu-µs/change")
		b.ReportMetric((perChange * 60_000).Seconds(), "cpu-s/min@1000/s")
	})
	b.Run(fmt.Sprintf("pods=%d/load", n), func(b *testing.B) {
		// As after a restart: the store opened again, its engine done
		// compacting what the write left (its tables' size steady), so
		// that the load's CPU is the load's.
		if err := store.Close(); err != nil {
			b.Fatal(err)
		}
		if store, err = snapshot.Open(dir, snapshot.Options{}); err != nil {
			b.Fatal(err)
		}
		for last := int64(-1); ; {
			time.Sleep(2 * time.Second)
			size := tableBytes(b, dir)
			if size == last {
				break
			}
			last = size
		}
		for b.Loop() {
			fresh := index.New(index.Options{})
			var before runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			start, cpu := time.Now(), cpuTime(b)
			l, err := warmstart.Load(store, fresh, new(compact.Codecs))
			if err != nil {
				b.Fatal(err)
			}
			took := time.Since(start)
			b.ReportMetric(float64((cpuTime(b)-cpu).Microseconds())/float64(n), "cpu-µs/object")
			if l.Objects != n || l.Rebuilt != 0 {
				b.Fatalf("loaded %d objects (%d built again from their JSON), want %d as they were held", l.Objects, l.Rebuilt, n)
			}
			var after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&after)
			b.ReportMetric(took.Seconds(), "s")
			b.ReportMetric(float64(n)/took.Seconds(), "objects/s")
			b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(n), "B-heap/pod")
			runtime.KeepAlive(fresh)
		}
	})
}
