package warmstart_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/fleetcache/fleetcache/internal/graphqltest"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/compact"
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

// BenchmarkSnapshot builds an index of $FLEETCACHE_SNAPSHOT_PODS (default
// 1,000,000) realistic Pods (graphqltest.RealisticPod, 2.5 KB of JSON) in
// 100 clusters, compressed as the informers compress them, and measures:
// a whole write of its snapshot (write), a load of it into a new index
// (load: the warm start's fill), and incremental writes of 5,000 changes,
// what the default 5 s interval writes of a fleet changing 1,000 objects a
// second (changes: CPU per minute at that rate).
//
//	go test -run '^$' -bench BenchmarkSnapshot -benchtime 3x -timeout 60m ./pkg/warmstart/
func BenchmarkSnapshot(b *testing.B) {
	n := 1_000_000
	if s := os.Getenv("FLEETCACHE_SNAPSHOT_PODS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	codecs := new(compact.Codecs)
	podType := *podType
	podType.Codec = codecs.For("pods")
	ix := index.New(index.Options{})
	base := time.Now().Add(-time.Hour)
	const clusters = 100
	for i := range n {
		c := fmt.Sprintf("c%03d", i%clusters)
		ix.Upsert(graphqltest.RealisticPod(&podType, c, i/clusters, base))
	}
	for c := range clusters {
		ix.Progress(fmt.Sprintf("c%03d", c), "pods", strconv.Itoa(n+1))
	}
	dir := filepath.Join(b.TempDir(), "snapshot")
	store, err := snapshot.Open(dir, snapshot.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	var w *warmstart.Writer

	b.Run(fmt.Sprintf("pods=%d/write", n), func(b *testing.B) {
		for b.Loop() {
			w = warmstart.NewWriter(ix, store, nil, warmstart.Options{})
			start, cpu := time.Now(), cpuTime(b)
			if err := w.Write(); err != nil {
				b.Fatal(err)
			}
			took := time.Since(start)
			b.ReportMetric(took.Seconds(), "s")
			b.ReportMetric(float64(n)/took.Seconds(), "objects/s")
			b.ReportMetric((cpuTime(b) - cpu).Seconds(), "cpu-s")
		}
		b.ReportMetric(float64(tableBytes(b, dir))/float64(n), "B-tables/pod")
	})
	b.Run(fmt.Sprintf("pods=%d/load", n), func(b *testing.B) {
		for b.Loop() {
			fresh := index.New(index.Options{})
			var before runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			start := time.Now()
			l, err := warmstart.Load(store, fresh, new(compact.Codecs))
			if err != nil {
				b.Fatal(err)
			}
			took := time.Since(start)
			if l.Objects != n {
				b.Fatalf("loaded %d objects, want %d", l.Objects, n)
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
	b.Run(fmt.Sprintf("pods=%d/changes=5000", n), func(b *testing.B) {
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
}
