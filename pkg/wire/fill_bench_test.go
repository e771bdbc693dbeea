package wire_test

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fleetcache/fleetcache/internal/graphqltest"
	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/compact"
	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/informers"
	"github.com/fleetcache/fleetcache/pkg/wire"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// BenchmarkColdFill measures fleetcache's side of a cold start: the
// pages of 500 realistic Pods (graphqltest.RealisticPod, 2.5 KB of JSON)
// that the members' lists return, in $FLEETCACHE_FILL_PODS (default
// 200,000) Pods over 100 clusters, decoded (package wire: scanned,
// compressed, the indexed paths' values projected, the search text read)
// and inserted into an index, as the informers run a cold start's lists:
// a goroutine per cluster, whose list takes one of the fleet's list slots
// (informers.DefaultMaxConcurrentLists, or $FLEETCACHE_FILL_SLOTS) before
// its first page and gives it back once the whole list, its pages decoded
// one after the other, is inserted by one Index.UpsertAll (the pager's
// list, applied by runStore.Replace). The API servers' own work is not in
// it: on this machine they share its two cores.
//
//	FLEETCACHE_FILL_PODS=1000000 go test -run '^$' -bench BenchmarkColdFill -benchtime 1x ./pkg/wire/
func BenchmarkColdFill(b *testing.B) {
	n := 200_000
	if s := os.Getenv("FLEETCACHE_FILL_PODS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	const clusters, pageSize = 100, 500
	slots := informers.DefaultMaxConcurrentLists()
	if s := os.Getenv("FLEETCACHE_FILL_SLOTS"); s != "" {
		var err error
		if slots, err = strconv.Atoi(s); err != nil || slots < 1 {
			b.Fatalf("FLEETCACHE_FILL_SLOTS=%q: want a count of lists", s)
		}
	}
	base := time.Now().Add(-time.Hour)
	// The pages each cluster's list returns, as the API server writes
	// them: items without kind and apiVersion, in the order of their keys
	// in etcd (namespace/name), in which lists are served.
	plain := &object.Type{Resource: "pods", GVR: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Kind: "Pod", Namespaced: true}
	pages := make([][][]byte, clusters)
	for c := range clusters {
		perCluster := n / clusters
		pods := make([]*object.Object, perCluster)
		for i := range pods {
			pods[i] = graphqltest.RealisticPod(plain, fmt.Sprintf("c%03d", c), i*clusters+c, base)
		}
		slices.SortFunc(pods, func(a, b *object.Object) int {
			return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
		})
		for start := 0; start < perCluster; start += pageSize {
			var buf bytes.Buffer
			buf.WriteString(`{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"1000"},"items":[`)
			for i, pod := range pods[start:min(start+pageSize, perCluster)] {
				if i > 0 {
					buf.WriteByte(',')
				}
				// Items come without kind and apiVersion.
				buf.Write(bytes.Replace(pod.Raw(), []byte(`"apiVersion":"v1","kind":"Pod",`), nil, 1))
			}
			buf.WriteString(`]}`)
			pages[c] = append(pages[c], buf.Bytes())
		}
	}
	for b.Loop() {
		ix := index.New(index.Options{})
		// As the informers set up a type: one Codec for every cluster,
		// the indexed paths projected.
		codec := compact.NewCodec("pods", 0)
		types := make([]*object.Type, clusters)
		for c := range types {
			t := *plain
			t.Codec = codec
			t.Projected = fieldpath.NewSet(ix.IndexedPaths("pods"))
			types[c] = &t
		}
		gate := make(chan struct{}, slots)
		start, cpu := time.Now(), processCPU(b)
		var wg sync.WaitGroup
		for c := range clusters {
			wg.Go(func() {
				gate <- struct{}{}
				defer func() { <-gate }()
				var list []index.Prepared
				for _, page := range pages[c] {
					// A decoder per page, as the informers' lists have.
					items, err := wire.NewDecoder(fmt.Sprintf("c%03d", c), types[c], false).List(page)
					if err != nil {
						b.Error(err)
						return
					}
					for _, item := range items.Items {
						d := item.(*wire.Decoded)
						list = append(list, index.Prepared{Object: d.Object, Text: d.Text})
					}
				}
				ix.UpsertAll(list)
			})
		}
		// A reader meanwhile, once a millisecond: how long the writers'
		// batches keep it waiting.
		done := make(chan struct{})
		var waits []time.Duration
		var reader sync.WaitGroup
		reader.Go(func() {
			tick := time.NewTicker(time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-done:
					return
				case <-tick.C:
				}
				t := time.Now()
				ix.ObjectCount("c000", "pods")
				waits = append(waits, time.Since(t))
			}
		})
		wg.Wait()
		took, used := time.Since(start), processCPU(b)-cpu
		close(done)
		reader.Wait()
		slices.Sort(waits)
		if got := ix.ObjectCount("c000", "pods"); got != n/clusters {
			b.Fatalf("cluster c000 holds %d Pods, want %d", got, n/clusters)
		}
		b.ReportMetric(took.Seconds(), "s")
		b.ReportMetric(float64(n)/took.Seconds(), "objects/s")
		b.ReportMetric(float64(used.Microseconds())/float64(n), "cpu-µs/object")
		if len(waits) > 0 {
			b.ReportMetric(float64(waits[len(waits)*99/100].Microseconds()), "read-p99-µs")
			b.ReportMetric(float64(waits[len(waits)-1].Microseconds()), "read-max-µs")
		}
	}
}

// processCPU returns the CPU time, user and system, the process has used.
func processCPU(b *testing.B) time.Duration {
	d, err := testcluster.ProcessCPU(0)
	if err != nil {
		b.Fatal(err)
	}
	return d
}
