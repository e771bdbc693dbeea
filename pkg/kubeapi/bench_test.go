package kubeapi_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/fleetcache/fleetcache/internal/graphqltest"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/compact"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/kubeapi"
)

// synthetic is the health of a fleet of clusters that each cache Pods, and
// the members' configuration: every cluster's is the test bed's c1, whose
// discovery and OpenAPI stand for all of them.
type synthetic struct {
	names  []string
	member *rest.Config
}

func (s synthetic) status(name string) health.ClusterStatus {
	return health.ClusterStatus{Name: name, Status: health.Synced, Resources: []health.ResourceStatus{{Resource: "pods"}}}
}

func (s synthetic) Cluster(name string) (health.ClusterStatus, bool) {
	return s.status(name), slices.Contains(s.names, name)
}

func (s synthetic) Clusters() ([]health.ClusterStatus, uint64) {
	out := make([]health.ClusterStatus, len(s.names))
	for i, n := range s.names {
		out[i] = s.status(n)
	}
	return out, 1
}

func (s synthetic) ClusterConfig(string) (*rest.Config, bool) { return s.member, true }

// BenchmarkFleetKubectl times the real kubectl's `get pods -A` on the
// fleet's API over 10 clusters of realistic Pods (graphqltest.RealisticPod,
// compressed as the informers store them), served from an index filled in
// process: the time to the first row, the whole answer, and what the
// server allocated for it. chunk=500 is kubectl's default (pages of 500);
// chunk=0 is one answer. Pods come in realistic sizes but no member holds
// them: the index is filled directly, each of the 10 clusters' discovery
// is c1's.
//
//	go test -tags=pebblegozstd -run '^$' -bench BenchmarkFleetKubectl -benchtime 2x ./pkg/kubeapi/
func BenchmarkFleetKubectl(b *testing.B) {
	env := testbed.Env(b)
	podType := &object.Type{Resource: "pods", GVR: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Kind: "Pod", Namespaced: true,
		Codec: compact.NewCodec("pods", 0)}
	for _, size := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("objects=%d", size), func(b *testing.B) {
			ix := index.New(index.Options{})
			fleet := synthetic{member: env.Cluster("c1").AdminConfig()}
			for c := range 10 {
				name := fmt.Sprintf("c%02d", c+1)
				fleet.names = append(fleet.names, name)
				for i := range size / 10 {
					ix.Upsert(graphqltest.RealisticPod(podType, name, i, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
				}
			}
			srv := httptest.NewTLSServer(kubeapi.New(ix, fleet, fleet, kubeapi.Options{}))
			b.Cleanup(srv.Close)
			kubeconfig := filepath.Join(b.TempDir(), "kubeconfig")
			cfg := clientcmdapi.NewConfig()
			cfg.Clusters["fleet"] = &clientcmdapi.Cluster{Server: srv.URL + "/fleet", InsecureSkipTLSVerify: true}
			cfg.AuthInfos["fleet"] = &clientcmdapi.AuthInfo{Token: "unchecked"} // none: kubectl would prompt for a password
			cfg.Contexts["fleet"] = &clientcmdapi.Context{Cluster: "fleet", AuthInfo: "fleet"}
			cfg.CurrentContext = "fleet"
			if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
				b.Fatal(err)
			}
			for _, chunk := range []string{"500", "0"} {
				b.Run("chunk="+chunk, func(b *testing.B) {
					var first, total time.Duration
					var alloc, peak uint64
					var rows int
					for b.Loop() {
						r := runKubectl(b, kubeconfig, "get", "pods", "-A", "--chunk-size", chunk)
						first, total, alloc, peak, rows = first+r.first, total+r.total, alloc+r.alloc, max(peak, r.peakHeap), r.rows
					}
					if rows != size {
						b.Fatalf("kubectl printed %d rows, want %d", rows, size)
					}
					n := float64(b.N)
					b.ReportMetric(first.Seconds()/n, "s-to-first-row")
					b.ReportMetric(total.Seconds()/n, "s-total")
					b.ReportMetric(float64(alloc)/n/(1<<20), "MiB-allocated")
					b.ReportMetric(float64(peak)/(1<<20), "MiB-peak-heap")
				})
			}
		})
	}
}

// kubectlRun is what one kubectl run cost: the time to its first row and
// to its end, the rows it printed, and the server's allocations and
// largest heap (sampled every 10ms) meanwhile.
type kubectlRun struct {
	first, total    time.Duration
	rows            int
	alloc, peakHeap uint64
}

// runKubectl runs kubectl with args, timing it and the process's memory.
func runKubectl(b *testing.B, kubeconfig string, args ...string) kubectlRun {
	b.Helper()
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var peak atomic.Uint64
	done := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Go(func() {
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				if ms.HeapAlloc > peak.Load() {
					peak.Store(ms.HeapAlloc)
				}
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	_, file, _, _ := runtime.Caller(0)
	cmd := exec.CommandContext(ctx, filepath.Join(filepath.Dir(file), "..", "..", "bin", "kubectl"), append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Env = []string{"HOME=" + b.TempDir(), "KUBECACHEDIR=" + b.TempDir()}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	var r kubectlRun
	lines := bufio.NewReader(stdout)
	header := true
	for {
		_, err := lines.ReadString('\n')
		if err == io.EOF {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
		if header { // NAMESPACE CLUSTER NAME …
			header = false
			continue
		}
		if r.rows == 0 {
			r.first = time.Since(start)
		}
		r.rows++
	}
	if err := cmd.Wait(); err != nil {
		b.Fatalf("kubectl %v: %v: %s", args, err, stderr.String())
	}
	r.total = time.Since(start)
	close(done)
	sampler.Wait()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	r.alloc = after.TotalAlloc - before.TotalAlloc
	if p := peak.Load(); p > before.HeapAlloc {
		r.peakHeap = p - before.HeapAlloc
	}
	return r
}
