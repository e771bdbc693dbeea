package informers_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/fleetcache/fleetcache/internal/app"
	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/informers"
)

// BenchmarkWarmStart is issue 32's start benchmark: 100 clusters aliasing
// the three test servers (each its own watch), 5,000 realistic Pods each,
// 500,000 in all, from the aggregator's New until every cluster is SYNCED
// with all its Pods: cold (lists) or warm (on the snapshot a cold run of the
// same process wrote just before: the test servers are new in each process,
// and a snapshot resumes only on the members it was read from). It reports
// the time, the snapshot's load, the steady RSS per Pod and the peak RSS
// against it (the peak counted from the start measured: /proc's clear_refs
// resets it). $FLEETCACHE_WARMSTART_CPU_PROFILE names a file for a CPU
// profile of the measured start alone. One start per process, alternating:
//
//	for i in 1 2 3; do for s in cold warm; do
//	  go test -run '^$' -bench "BenchmarkWarmStart/start=$s" -benchtime 1x -timeout 30m ./pkg/informers/
//	done; done
func BenchmarkWarmStart(b *testing.B) {
	const clusters, perServer = 100, 5000
	for _, start := range []string{"cold", "warm"} {
		b.Run("start="+start, func(b *testing.B) {
			seedScalePods(b, perServer)
			want := len(serverState(b, testcluster.Dynamic(b, testbed.Env(b).Clusters()[0].AdminConfig()), pods))
			opts := app.Options{Informers: informers.Options{Resources: []string{"pods"}}}
			if start == "warm" {
				opts.Snapshot.Dir = filepath.Join(b.TempDir(), "snapshot")
				stop, _, _ := startAliasedAggregator(b, opts, clusters, want)
				stop()
				runtime.GC()
				debug.FreeOSMemory()
			}
			for b.Loop() {
				if path := os.Getenv("FLEETCACHE_WARMSTART_CPU_PROFILE"); path != "" {
					f, err := os.Create(path)
					if err != nil {
						b.Fatal(err)
					}
					if err := pprof.StartCPUProfile(f); err != nil {
						b.Fatal(err)
					}
					b.Cleanup(func() { pprof.StopCPUProfile(); _ = f.Close() })
				}
				resetPeakRSS(b)
				before := measure(b)
				stop, synced, loaded := startAliasedAggregator(b, opts, clusters, want)
				pprof.StopCPUProfile()
				after := measure(b)
				objects := float64(clusters * want)
				hwm := procStatus(b, "VmHWM")
				b.ReportMetric(synced.Seconds(), "s-to-all-synced")
				b.ReportMetric(loaded.Seconds(), "s-load")
				b.ReportMetric(objects, "pods")
				b.ReportMetric(float64(int64(after.rss)-int64(before.rss))/objects, "B-rss/pod")
				b.ReportMetric(float64(hwm)/float64(after.rss), "peak/steady-rss")
				stop()
			}
		})
	}
}

// resetPeakRSS resets the process's peak RSS (VmHWM) to its RSS now.
func resetPeakRSS(b *testing.B) {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		b.Fatalf("reset the peak RSS: %v", err)
	}
}

// startAliasedAggregator starts an aggregator of n clusters aliasing the
// test servers and waits until each is SYNCED with want Pods. It returns
// the function that stops it, the time from New until then, and how long
// the load of the snapshot took (0 without one), which runs while the
// clusters start.
func startAliasedAggregator(b *testing.B, opts app.Options, n, want int) (stop func(), synced, loaded time.Duration) {
	b.Helper()
	begin := time.Now()
	agg, err := app.New(opts)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range aliases(b, n) {
		if err := agg.Registry.Add(c); err != nil {
			b.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	watch := watchHealth(ctx, agg.Health, n)
	stopAggregator := runAggregator(b, agg)
	stop = func() {
		stopAggregator()
		cancel()
		<-watch.done
	}
	testcluster.Eventually(b, 10*time.Minute, fmt.Sprintf("%d clusters SYNCED with %d Pods each", n, want), func() (bool, string) {
		watch.mu.Lock()
		at := watch.allSynced
		watch.mu.Unlock()
		if at.IsZero() {
			return false, "not all SYNCED"
		}
		statuses, _ := agg.Health.Clusters()
		for _, s := range statuses {
			if strings.HasPrefix(s.Name, "c") && agg.Index.ObjectCount(s.Name, "pods") != want {
				return false, fmt.Sprintf("%s holds %d Pods", s.Name, agg.Index.ObjectCount(s.Name, "pods"))
			}
		}
		synced = at.Sub(begin)
		return true, ""
	})
	families, err := agg.Metrics.Gather()
	if err != nil {
		b.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "fleetcache_snapshot_load_duration_seconds" {
			loaded = time.Duration(f.GetMetric()[0].GetGauge().GetValue() * float64(time.Second))
		}
	}
	return stop, synced, loaded
}
