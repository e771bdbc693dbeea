package planner_test

import (
	"fmt"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
	"runtime"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetcache/fleetcache/internal/graphqltest"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/compact"
	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
)

// BenchmarkSortUnindexed measures issue 15's query (c) in process: the
// page of 50 newest by status.startTime, a path without an index, of one
// namespace holding a thousandth of the realistic Pods across 10 clusters,
// their bodies compressed as the informers store them.
// It alternates rounds read by one goroutine (GOMAXPROCS 1) and by every
// processor, so that both see the same machine.
func BenchmarkSortUnindexed(b *testing.B) {
	const size, clusters = 1_000_000, 10
	podType := &object.Type{Resource: "pods", GVR: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Kind: "Pod", Namespaced: true,
		Codec: compact.NewCodec("pods", 0)}
	ix := index.New(index.Options{})
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for c := range clusters {
		for i := range size / clusters {
			ix.Upsert(graphqltest.RealisticPod(podType, fmt.Sprintf("c%02d", c+1), i, base))
		}
	}
	runtime.GC()
	keys := []planner.SortKey{{Path: fieldpath.MustParse("status.startTime"), Desc: true}}
	procs := runtime.GOMAXPROCS(0)
	for round := range 3 {
		for _, p := range []int{1, procs} {
			b.Run(fmt.Sprintf("round=%d/procs=%d", round+1, p), func(b *testing.B) {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(p))
				var lat []time.Duration
				i := 0
				for b.Loop() {
					f := planner.Filter{Namespaces: []string{fmt.Sprintf("ns-%02d", i%graphqltest.PodNamespaces)}}
					i++
					start := time.Now()
					page, err := planner.ListSorted(ix, []planner.Filter{f}, keys, nil, 50)
					lat = append(lat, time.Since(start))
					if err != nil || len(page.Objects) != 50 {
						b.Fatalf("page of %d objects, %v", len(page.Objects), err)
					}
				}
				slices.Sort(lat)
				b.ReportMetric(float64(lat[len(lat)/2])/float64(time.Microsecond), "p50-µs")
				b.ReportMetric(float64(lat[len(lat)*99/100])/float64(time.Microsecond), "p99-µs")
			})
		}
	}
}
