package informers_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"

	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
	"github.com/fleetcache/fleetcache/pkg/informers"
)

// scaleShards is how many values the label shard of the scale benchmark's
// Pods takes: one of them selects 1/150 of the fleet, the 3,300 of
// 500,000 of issue 16's broad page.
const scaleShards = 150

// BenchmarkFleetScale is issue 16's benchmark 1: registered clusters that
// alias the three test API servers (each its own list and watch), 500,000
// realistic Pods in all, at 1,000 clusters of 500 Pods and at 100 of
// 5,000 (the smaller first: seeding only adds). It reports the time until
// every cluster is SYNCED with all its Pods, the heap and RSS added per
// Pod (steady, after two collections) and the process's peak RSS, the
// broad page (50 Pods and their count, a label selector matching 1/150 of
// the fleet, in process), and the recovery after one API server restarts:
// from the server ready again until every alias of it is SYNCED with all
// its Pods. Each size in a process of its own (the peak RSS is the
// process's):
//
//	go test -run '^$' -bench 'BenchmarkFleetScale/clusters=1000/' -benchtime 1x -timeout 60m ./pkg/informers/
//	go test -run '^$' -bench 'BenchmarkFleetScale/clusters=100/' -benchtime 1x -timeout 60m ./pkg/informers/
func BenchmarkFleetScale(b *testing.B) {
	for _, size := range []struct{ clusters, perServer int }{{1000, 500}, {100, 5000}} {
		b.Run(fmt.Sprintf("clusters=%d/pods=%d", size.clusters, size.perServer), func(b *testing.B) {
			seedScalePods(b, size.perServer)
			for b.Loop() {
				r := startAliasedFleet(b, size.clusters, "pods", informers.Options{}, 0)
				perPod := func(v uint64, w uint64) float64 { return float64(int64(v)-int64(w)) / float64(r.objects) }
				b.ReportMetric(r.synced.Seconds(), "s-to-all-synced")
				b.ReportMetric(float64(r.objects), "pods")
				b.ReportMetric(perPod(r.after.heap, r.before.heap), "B-heap/pod")
				b.ReportMetric(perPod(r.after.rss, r.before.rss), "B-rss/pod")
				b.ReportMetric(float64(r.hwm)/float64(r.objects), "B-peak-rss/pod")
				b.ReportMetric(float64(r.maxDisconnected), "max-disconnected")
				p50, p99, matched := broadPage(b, r.index)
				b.ReportMetric(float64(matched), "page-matches")
				b.ReportMetric(p50, "page-p50-µs")
				b.ReportMetric(p99, "page-p99-µs")
				b.ReportMetric(restartRecovery(b, r).Seconds(), "s-recovery")
			}
		})
	}
}

// seedScalePods makes every test server hold perServer realistic Pods in
// the namespace fleet-scale, each labelled with one of scaleShards shards.
func seedScalePods(b *testing.B, perServer int) {
	env := testbed.Env(b)
	for _, c := range env.Clusters() {
		cfg := rest.CopyConfig(c.AdminConfig())
		cfg.WarningHandler = rest.NoWarnings{}
		dc := testcluster.Dynamic(b, cfg)
		testcluster.CreateNamespace(b, dc, "fleet-scale")
		testcluster.Seed(b, dc, pods, perServer, func(i int) *unstructured.Unstructured {
			u := realisticPod("fleet-scale", fmt.Sprintf("pod-%05d", i))
			ls := u.GetLabels()
			ls["shard"] = fmt.Sprint(i % scaleShards)
			u.SetLabels(ls)
			return u
		})
	}
}

// broadPage times 200 reads of a page of 50 with its count, whose label
// selector matches 1/150 of the Pods, and returns p50 and p99 in µs and
// how many Pods it matched.
func broadPage(b *testing.B, ix *index.Index) (p50, p99 float64, matched int) {
	sel, err := labels.Parse("shard=7")
	if err != nil {
		b.Fatal(err)
	}
	f := planner.Filter{Resources: []string{"pods"}, Selector: sel}
	var lat []time.Duration
	for range 200 {
		start := time.Now()
		page := planner.ListUnion(ix, []planner.Filter{f}, nil, 50)
		matched = planner.Count(ix, f)
		lat = append(lat, time.Since(start))
		if len(page.Objects) != 50 {
			b.Fatalf("the broad page holds %d Pods", len(page.Objects))
		}
	}
	slices.Sort(lat)
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	return us(lat[len(lat)/2]), us(lat[len(lat)*99/100]), matched
}

// restartRecovery stops the first test server, waits until its aliases
// are no longer SYNCED, starts it again and returns how long after it was
// ready every alias of it was SYNCED with all its Pods.
func restartRecovery(b *testing.B, r fleetRun) time.Duration {
	env := testbed.Env(b)
	server := env.Clusters()[0]
	want := len(serverState(b, testcluster.Dynamic(b, server.AdminConfig()), pods))
	var names []string
	statuses, _ := r.tracker.Clusters()
	for _, s := range statuses {
		if strings.HasPrefix(s.Name, server.Name()+"-") {
			names = append(names, s.Name)
		}
	}
	if err := server.Stop(); err != nil {
		b.Fatal(err)
	}
	testcluster.Eventually(b, 5*time.Minute, "the stopped server's aliases not SYNCED", func() (bool, string) {
		for _, n := range names {
			if s, _ := r.tracker.Cluster(n); s.Status == health.Synced {
				return false, n + " still SYNCED"
			}
		}
		return true, ""
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := server.Restart(ctx); err != nil {
		b.Fatal(err)
	}
	ready := time.Now()
	testcluster.Eventually(b, 10*time.Minute, "every alias of the restarted server SYNCED", func() (bool, string) {
		for _, n := range names {
			if s, _ := r.tracker.Cluster(n); s.Status != health.Synced || r.index.ObjectCount(n, "pods") != want {
				return false, fmt.Sprintf("%s %s with %d of %d Pods", n, s.Status, r.index.ObjectCount(n, "pods"), want)
			}
		}
		return true, ""
	})
	return time.Since(ready)
}
