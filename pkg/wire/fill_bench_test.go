package wire_test

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/fleetcache/fleetcache/internal/graphqltest"
	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/compact"
	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/wire"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// BenchmarkColdFill measures fleetcache's side of a cold start: the
// pages of 500 realistic Pods (graphqltest.RealisticPod, 2.5 KB of JSON)
// that the members' lists return, in $FLEETCACHE_FILL_PODS (default
// 200,000) Pods over 100 clusters, decoded (package wire: scanned,
// compressed, the indexed paths' values projected, the search text read)
// and inserted into an index as the informers insert them, a goroutine per CPU taking the clusters in turn as the
// informers' lists arrive. The API servers' own work is not in it: on
// this machine they share its two cores.
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
	base := time.Now().Add(-time.Hour)
	// The pages each cluster's list returns, as the API server writes
	// them: items without kind and apiVersion.
	plain := &object.Type{Resource: "pods", GVR: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Kind: "Pod", Namespaced: true}
	pages := make([][][]byte, clusters)
	for c := range clusters {
		perCluster := n / clusters
		for start := 0; start < perCluster; start += pageSize {
			var buf bytes.Buffer
			buf.WriteString(`{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"1000"},"items":[`)
			for i := start; i < min(start+pageSize, perCluster); i++ {
				if i > start {
					buf.WriteByte(',')
				}
				raw := graphqltest.RealisticPod(plain, fmt.Sprintf("c%03d", c), i*clusters+c, base).Raw()
				// Items come without kind and apiVersion.
				raw = bytes.Replace(raw, []byte(`"apiVersion":"v1","kind":"Pod",`), nil, 1)
				buf.Write(raw)
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
		var next sync.Mutex
		c := 0
		start, cpu := time.Now(), processCPU(b)
		var wg sync.WaitGroup
		for range runtime.GOMAXPROCS(0) {
			wg.Go(func() {
				for {
					next.Lock()
					mine := c
					c++
					next.Unlock()
					if mine >= clusters {
						return
					}
					d := wire.NewDecoder(fmt.Sprintf("c%03d", mine), types[mine], false)
					for _, page := range pages[mine] {
						list, err := d.List(page)
						if err != nil {
							b.Error(err)
							return
						}
						for _, item := range list.Items {
							d := item.(*wire.Decoded)
							ix.UpsertPrepared(index.Prepared{Object: d.Object, Text: d.Text})
						}
					}
				}
			})
		}
		wg.Wait()
		took, used := time.Since(start), processCPU(b)-cpu
		if got := ix.ObjectCount("c000", "pods"); got != n/clusters {
			b.Fatalf("cluster c000 holds %d Pods, want %d", got, n/clusters)
		}
		b.ReportMetric(took.Seconds(), "s")
		b.ReportMetric(float64(n)/took.Seconds(), "objects/s")
		b.ReportMetric(float64(used.Microseconds())/float64(n), "cpu-µs/object")
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
