package informers_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/informers"
)

// fleetSyncRound numbers the rounds of BenchmarkFleetSync across runs, so
// that each round starts with the other side.
var fleetSyncRound int

// BenchmarkFleetSync times the initial sync of a fleet of registered
// clusters that alias the package's three API servers (cluster i is server
// i mod 3, so each registered cluster makes its own list and watch), each
// server holding the given number of realistic Pods, two ways: fleetcache
// (one Ingester per cluster into one index, until health says every
// cluster is SYNCED with every Pod) and the careful client-go baseline (one
// dynamic informer per cluster whose transform drops managedFields, until
// every one HasSynced with every Pod). Each round syncs both, one after the
// other after a GC, the first side alternating from round to round; every
// round is logged, and the metrics are the means and their ratio, with the
// CPU time each side took in this process (client) and in the three API
// servers (servers): on a machine shared with other work the wall time
// moves with the load, the CPU time much less.
func BenchmarkFleetSync(b *testing.B) {
	env := testbed.Env(b)
	for _, size := range []struct{ clusters, pods int }{{12, 3000}, {30, 5000}} {
		b.Run(fmt.Sprintf("clusters=%d/pods=%d", size.clusters, size.pods), func(b *testing.B) {
			var wg sync.WaitGroup
			for _, c := range env.Clusters() {
				cfg := c.AdminConfig()
				cfg.WarningHandler = rest.NoWarnings{}
				wg.Go(func() { ensure(b, testcluster.Dynamic(b, cfg), pods, "bench-fleet", size.pods, realisticPod) })
			}
			wg.Wait()
			fleet := make([]fleetMember, size.clusters)
			for i := range fleet {
				c := env.Clusters()[i%len(env.Clusters())]
				cfg := c.AdminConfig()
				cfg.WarningHandler = rest.NoWarnings{}
				fleet[i] = fleetMember{name: fmt.Sprintf("m%03d", i), cfg: cfg, want: podCount(b, cfg)}
			}
			sides := []struct {
				name string
				sync func(b *testing.B, fleet []fleetMember) time.Duration
			}{{"fleetcache", syncFleetPods}, {"careful", syncCarefulPods}}
			total := make([]time.Duration, len(sides))
			clientCPU := make([]time.Duration, len(sides))
			serversCPU := make([]time.Duration, len(sides))
			rounds := 0
			for b.Loop() {
				fleetSyncRound++
				rounds++
				var line []string
				for k := range sides {
					i := (fleetSyncRound + k) % len(sides)
					runtime.GC() // neither side pays for collecting the other's garbage
					client, servers := processCPU(b), serversCPUTime(b)
					d := sides[i].sync(b, fleet)
					client, servers = processCPU(b)-client, serversCPUTime(b)-servers
					total[i] += d
					clientCPU[i] += client
					serversCPU[i] += servers
					line = append(line, fmt.Sprintf("%s %.2f s (CPU: client %.2f s, servers %.2f s)", sides[i].name, d.Seconds(), client.Seconds(), servers.Seconds()))
				}
				b.Logf("round %d: %s", fleetSyncRound, strings.Join(line, ", "))
			}
			for i, s := range sides {
				b.ReportMetric(total[i].Seconds()/float64(rounds), s.name+"-s/sync")
				b.ReportMetric(clientCPU[i].Seconds()/float64(rounds), s.name+"-client-cpu-s")
				b.ReportMetric(serversCPU[i].Seconds()/float64(rounds), s.name+"-servers-cpu-s")
			}
			b.ReportMetric(float64(total[0])/float64(total[1]), "fleetcache/careful")
		})
	}
}

// fleetMember is one registered cluster of BenchmarkFleetSync.
type fleetMember struct {
	name string
	cfg  *rest.Config
	want int // the Pods its server holds
}

// podCount returns how many Pods the server of cfg holds, in every namespace.
func podCount(b *testing.B, cfg *rest.Config) int {
	b.Helper()
	list, err := testcluster.Dynamic(b, cfg).Resource(pods).List(context.Background(), metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		b.Fatal(err)
	}
	return len(list.Items)
}

// syncFleetPods syncs the fleet's Pods into one index and returns how long
// it took until health said every cluster was SYNCED with all its Pods.
func syncFleetPods(b *testing.B, fleet []fleetMember) time.Duration {
	ix := index.New(index.Options{})
	tr := health.NewTracker(ix, health.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	var run sync.WaitGroup
	defer func() { cancel(); run.Wait() }()
	begin := time.Now()
	for _, m := range fleet {
		ing, err := informers.NewIngester(m.name, m.cfg, ix, tr, informers.Options{Resources: []string{"pods"}})
		if err != nil {
			b.Fatal(err)
		}
		run.Go(func() { _ = ing.Start(ctx) })
	}
	for _, m := range fleet {
		for {
			if s, _ := tr.Cluster(m.name); s.Status == health.Synced && ix.ObjectCount(m.name, "pods") >= m.want {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return time.Since(begin)
}

// syncCarefulPods syncs the fleet's Pods as a careful client-go user
// would, one dynamic informer per cluster whose transform drops
// managedFields, and returns how long it took until all had synced.
func syncCarefulPods(b *testing.B, fleet []fleetMember) time.Duration {
	cfgs := make([]*rest.Config, len(fleet))
	for i, m := range fleet {
		cfgs[i] = m.cfg
	}
	begin := time.Now()
	infs, stop := startInformers(b, cfgs, pods, dropManagedFields)
	defer stop()
	for i, inf := range infs {
		for !inf.HasSynced() || len(inf.GetStore().ListKeys()) < fleet[i].want {
			time.Sleep(5 * time.Millisecond)
		}
	}
	return time.Since(begin)
}

// processCPU returns the CPU time this process has used, user and system.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// serversCPUTime returns the CPU time the package's API servers have used,
// user and system, read from /proc: the processes whose command line
// carries one of their ports.
func serversCPUTime(b *testing.B) time.Duration {
	env := testbed.Env(b)
	var ports []string
	for _, c := range env.Clusters() {
		u := c.URL()
		ports = append(ports, "\x00--secure-port\x00"+u[strings.LastIndex(u, ":")+1:]+"\x00")
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		b.Fatal(err)
	}
	var total time.Duration
	for _, p := range procs {
		cmdline, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err != nil || !slices.ContainsFunc(ports, func(port string) bool { return strings.Contains(string(cmdline), port) }) {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", p.Name(), "stat"))
		if err != nil {
			continue // it ended
		}
		// utime and stime are the 14th and 15th fields, in clock ticks
		// (100 a second on Linux), counted after the command in parentheses.
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		utime, _ := strconv.ParseInt(f[11], 10, 64)
		stime, _ := strconv.ParseInt(f[12], 10, 64)
		total += time.Duration(utime+stime) * 10 * time.Millisecond
	}
	return total
}
