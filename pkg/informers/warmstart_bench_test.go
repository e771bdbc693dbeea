package informers_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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
// with all its Pods: cold (lists) or warm (on the snapshot a first run
// wrote, in $FLEETCACHE_BENCH_SNAPSHOT, default under the temporary
// directory; made by the first warm run that finds none). It reports the
// time, the snapshot's load, the steady RSS per Pod and the process's peak
// RSS against it. One start per process, alternating (the peak RSS is the
// process's):
//
//	for i in 1 2 3; do for s in cold warm; do
//	  go test -run '^$' -bench "BenchmarkWarmStart/start=$s" -benchtime 1x -timeout 30m ./pkg/informers/
//	done; done
func BenchmarkWarmStart(b *testing.B) {
	const clusters, perServer = 100, 5000
	dir := os.Getenv("FLEETCACHE_BENCH_SNAPSHOT")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "fleetcache-bench-snapshot")
	}
	for _, start := range []string{"cold", "warm"} {
		b.Run("start="+start, func(b *testing.B) {
			seedScalePods(b, perServer)
			want := len(serverState(b, testcluster.Dynamic(b, testbed.Env(b).Clusters()[0].AdminConfig()), pods))
			opts := app.Options{Informers: informers.Options{Resources: []string{"pods"}}}
			if start == "warm" {
				opts.Snapshot.Dir = dir
				if _, err := os.Stat(dir); os.IsNotExist(err) {
					b.Logf("no snapshot in %s: a first run writes it", dir)
					stop, _, _ := startAliasedAggregator(b, opts, clusters, want)
					stop()
				}
			}
			for b.Loop() {
				before := measure(b)
				stop, synced, loaded := startAliasedAggregator(b, opts, clusters, want)
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

// startAliasedAggregator starts an aggregator of n clusters aliasing the
// test servers and waits until each is SYNCED with want Pods. It returns
// the function that stops it, the time from New until then, and how long
// New took (loading the snapshot, if any).
func startAliasedAggregator(b *testing.B, opts app.Options, n, want int) (stop func(), synced, loaded time.Duration) {
	b.Helper()
	begin := time.Now()
	agg, err := app.New(opts)
	if err != nil {
		b.Fatal(err)
	}
	loaded = time.Since(begin)
	for _, c := range aliases(b, n) {
		if err := agg.Registry.Add(c); err != nil {
			b.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	watch := watchHealth(ctx, agg.Health, n)
	done := make(chan error, 1)
	go func() { done <- agg.Start(ctx) }()
	stop = func() {
		cancel()
		if err := <-done; err != nil {
			b.Errorf("aggregator: %v", err)
		}
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
	return stop, synced, loaded
}
