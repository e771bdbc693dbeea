package informers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/fleetcache/fleetcache/internal/procmem"
	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/informers"
)

var pods = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// realisticPod is a Pod as a Deployment would stamp it: two containers with
// env, ports, probes, resources and mounts, and a few volumes: about 5 KiB
// of compact JSON as the server returns it, half of it managedFields.
func realisticPod(ns, name string) *unstructured.Unstructured {
	container := func(n string, port int64) map[string]any {
		var env []any
		for i := range 2 {
			env = append(env, map[string]any{"name": fmt.Sprintf("%s_SETTING_%d", n, i), "value": fmt.Sprintf("value-%d-for-%s", i, n)})
		}
		return map[string]any{
			"name":            n,
			"image":           "registry.example.com/team/" + n + ":1.24.3",
			"imagePullPolicy": "IfNotPresent",
			"args":            []any{"--port", fmt.Sprint(port), "--log-level", "info"},
			"env":             env,
			"ports":           []any{map[string]any{"name": "http", "containerPort": port, "protocol": "TCP"}, map[string]any{"name": "metrics", "containerPort": port + 1000, "protocol": "TCP"}},
			"resources": map[string]any{
				"requests": map[string]any{"cpu": "100m", "memory": "128Mi"},
				"limits":   map[string]any{"cpu": "500m", "memory": "512Mi"},
			},
			"readinessProbe": map[string]any{"httpGet": map[string]any{"path": "/readyz", "port": port}, "periodSeconds": int64(10)},
			"volumeMounts": []any{
				map[string]any{"name": "config", "mountPath": "/etc/" + n},
				map[string]any{"name": "cache", "mountPath": "/var/cache/" + n},
			},
		}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{
			"namespace": ns, "name": name,
			"labels": map[string]any{"app": "web", "tier": "frontend", "pod-template-hash": "7d9f8b6c5d"},
		},
		"spec": map[string]any{
			"containers": []any{container("web", 8080), container("sidecar", 9090)},
			"volumes": []any{
				map[string]any{"name": "config", "configMap": map[string]any{"name": "web-config"}},
				map[string]any{"name": "cache", "emptyDir": map[string]any{}},
			},
			"serviceAccountName": "default",
		},
	}}
}

// ensure creates the namespace and count objects made by mk in it, unless they exist.
func ensure(b *testing.B, dc dynamic.Interface, gvr schema.GroupVersionResource, ns string, count int, mk func(ns, name string) *unstructured.Unstructured) {
	b.Helper()
	testcluster.CreateNamespace(b, dc, ns)
	testcluster.Seed(b, dc, gvr, count, func(i int) *unstructured.Unstructured { return mk(ns, fmt.Sprintf("obj-%05d", i)) })
}

func heap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// The sides of BenchmarkHeapPerPod: ways of holding one cluster's Pods.
const (
	sideFleetcache = "fleetcache"          // an informers.Ingester and the index it feeds
	sideClientGo   = "client-go"           // a bare dynamic informer
	sideTransform  = "client-go-transform" // a dynamic informer whose transform drops managedFields
)

var heapSides = []string{sideFleetcache, sideClientGo, sideTransform}

// heapProbeEnv, set in the environment of this package's test binary, makes
// it a heap probe instead: it syncs one side, prints a heapResult as JSON
// and exits, before TestMain starts any cluster. Its value is a heapProbe
// in JSON.
const heapProbeEnv = "FLEETCACHE_HEAP_PROBE"

// heapProbe is what a probe is asked to measure.
type heapProbe struct {
	Side       string `json:"side"`
	Kubeconfig string `json:"kubeconfig"` // its current context is the cluster
	Cluster    string `json:"cluster"`
	Want       int    `json:"want"` // the Pods the cluster holds
}

// heapResult is what a probe measured, in bytes.
type heapResult struct {
	Objects   int    `json:"objects"`
	Heap      int64  `json:"heap"`      // live heap the side added, after GC
	RSSBefore uint64 `json:"rssBefore"` // VmRSS before the side started
	RSS       uint64 `json:"rss"`       // VmRSS once synced, the collector left to itself
	HWM       uint64 `json:"hwm"`       // VmHWM: the peak RSS
	// GoHeld is what the Go runtime holds from the system once synced
	// (MemStats.Sys less HeapReleased): what a memory limit bounds. The
	// rest of the RSS is mostly the binary's own pages.
	GoHeld   uint64 `json:"goHeld"`
	GOGC     int    `json:"gogc"`
	MemLimit int64  `json:"memLimit"`
}

func init() {
	spec := os.Getenv(heapProbeEnv)
	if spec == "" {
		return
	}
	res, err := runHeapProbe(spec)
	if err != nil {
		fmt.Fprintln(os.Stderr, "heap probe:", err)
		os.Exit(1)
	}
	out, _ := json.Marshal(res)
	fmt.Println(string(out))
	os.Exit(0)
}

// dropManagedFields is the transform a careful client-go user sets:
// managedFields are half of a typical object, and no reader of a cache
// needs them. A tombstone, which has no accessor, passes as it is.
func dropManagedFields(obj any) (any, error) {
	if a, err := meta.Accessor(obj); err == nil {
		a.SetManagedFields(nil)
	}
	return obj, nil
}

// runHeapProbe syncs the Pods of one cluster one way and measures the live
// heap and the RSS that it added to this process.
func runHeapProbe(spec string) (heapResult, error) {
	var p heapProbe
	if err := json.Unmarshal([]byte(spec), &p); err != nil {
		return heapResult{}, fmt.Errorf("decode %s: %w", heapProbeEnv, err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", p.Kubeconfig)
	if err != nil {
		return heapResult{}, fmt.Errorf("load %s: %w", p.Kubeconfig, err)
	}
	var res heapResult
	res.GOGC = debug.SetGCPercent(100)
	debug.SetGCPercent(res.GOGC)
	res.MemLimit = debug.SetMemoryLimit(-1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	before := heap()
	mem, err := procmem.Read()
	if err != nil {
		return res, err
	}
	res.RSSBefore = mem.RSS
	synced, count, stop, err := startSide(ctx, p.Side, p.Cluster, cfg)
	if err != nil {
		return res, err
	}
	defer stop()
	for deadline := time.Now().Add(5 * time.Minute); !synced() || count() < p.Want; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			return res, fmt.Errorf("%s: %d of %d Pods after 5 minutes", p.Side, count(), p.Want)
		}
	}
	if mem, err = procmem.Read(); err != nil {
		return res, err
	}
	res.RSS, res.HWM = mem.RSS, mem.PeakRSS
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	res.GoHeld = ms.Sys - ms.HeapReleased
	res.Heap = int64(heap()) - int64(before)
	res.Objects = count()
	return res, nil
}

// startSide starts caching the cluster's Pods the side's way, and returns
// whether it synced, how many Pods it holds, and how to stop it.
func startSide(ctx context.Context, side, cluster string, cfg *rest.Config) (synced func() bool, count func() int, stop func(), err error) {
	ctx, cancel := context.WithCancel(ctx)
	switch side {
	case sideFleetcache:
		ix := index.New(index.Options{})
		tr := health.NewTracker(ix, health.Options{})
		c, err := informers.NewIngester(cluster, cfg, ix, tr, informers.Options{Resources: []string{"pods"}})
		if err != nil {
			cancel()
			return nil, nil, nil, err
		}
		done := make(chan error, 1)
		go func() { done <- c.Start(ctx) }()
		synced = func() bool { s, _ := tr.Cluster(cluster); return s.Status == health.Synced }
		count = func() int { return ix.ObjectCount(cluster, "pods") }
		return synced, count, func() { cancel(); <-done }, nil
	case sideClientGo, sideTransform:
		dc, err := dynamic.NewForConfig(cfg)
		if err != nil {
			cancel()
			return nil, nil, nil, err
		}
		factory := dynamicinformer.NewDynamicSharedInformerFactory(dc, 0)
		inf := factory.ForResource(pods).Informer()
		if side == sideTransform {
			if err := inf.SetTransform(dropManagedFields); err != nil {
				cancel()
				return nil, nil, nil, err
			}
		}
		factory.Start(ctx.Done())
		count = func() int { return len(inf.GetStore().ListKeys()) }
		return inf.HasSynced, count, func() { cancel(); factory.Shutdown() }, nil
	}
	cancel()
	return nil, nil, nil, fmt.Errorf("unknown side %q", side)
}

// runProbe runs this test binary as a heap probe of one side.
func runProbe(b *testing.B, p heapProbe) heapResult {
	b.Helper()
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	spec, _ := json.Marshal(p)
	cmd := exec.CommandContext(b.Context(), exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), heapProbeEnv+"="+string(spec))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("heap probe %s: %v\n%s", p.Side, err, stderr.Bytes())
	}
	var res heapResult
	if err := json.Unmarshal(out, &res); err != nil {
		b.Fatalf("heap probe %s: decode %q: %v", p.Side, out, err)
	}
	return res
}

// heapRound numbers the rounds of BenchmarkHeapPerPod across runs (-count),
// so that each round starts with another side.
var heapRound int

// BenchmarkHeapPerPod compares what holding a cluster's realistic Pods
// costs: fleetcache (informer store and index together), a bare client-go
// dynamic informer, and one whose transform drops managedFields, as a
// careful client-go user writes it. Each side runs in a process of its own,
// this test binary started as a probe: the RSS of a process that did only
// that, at the collector's default settings (whatever GOGC and GOMEMLIMIT
// the benchmark runs with), which an earlier side's garbage, freed but not
// yet returned to the system, would inflate in a shared process. A round
// runs every side once, starting with a different one each round. Every
// round is logged; the metrics are the means.
func BenchmarkHeapPerPod(b *testing.B) {
	env := testbed.Env(b)
	c := env.Cluster("c3")
	// The Pods' two containers both name their ports http and metrics,
	// which the server warns about at every create: not in the log.
	cfg := c.AdminConfig()
	cfg.WarningHandler = rest.NoWarnings{}
	dc := testcluster.Dynamic(b, cfg)
	kubeconfig := filepath.Join(b.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig, "admin", c); err != nil {
		b.Fatal(err)
	}
	for _, count := range []int{2000, 10000} {
		b.Run(fmt.Sprintf("pods=%d", count), func(b *testing.B) {
			ensure(b, dc, pods, "bench-pods", count, realisticPod)
			withMF, withoutMF := podJSONSizes(b, dc)
			sum := map[string]*heapResult{}
			for _, side := range heapSides {
				sum[side] = &heapResult{}
			}
			rounds := 0
			for b.Loop() {
				heapRound++
				rounds++
				for k := range heapSides {
					side := heapSides[(heapRound+k)%len(heapSides)]
					r := runProbe(b, heapProbe{Side: side, Kubeconfig: kubeconfig, Cluster: c.Name(), Want: count})
					if r.Objects != count {
						b.Fatalf("%s holds %d Pods, want %d", side, r.Objects, count)
					}
					b.Logf("round %d, %s: heap %d B/pod; RSS %.1f MiB after sync (%.1f before, peak %.1f), %d B/pod; Go runtime holds %.1f MiB; GOGC=%d, memory limit %d",
						heapRound, side, r.Heap/int64(count), mib(r.RSS), mib(r.RSSBefore), mib(r.HWM), (int64(r.RSS)-int64(r.RSSBefore))/int64(count), mib(r.GoHeld), r.GOGC, r.MemLimit)
					s := sum[side]
					s.Heap += r.Heap
					s.RSS += r.RSS
					s.RSSBefore += r.RSSBefore
					s.HWM += r.HWM
					s.GoHeld += r.GoHeld
				}
			}
			short := map[string]string{sideFleetcache: "fleetcache", sideClientGo: "informer", sideTransform: "transform"}
			for _, side := range heapSides {
				s := sum[side]
				n := float64(rounds * count)
				b.ReportMetric(float64(s.Heap)/n, short[side]+"-heap-B/pod")
				b.ReportMetric((float64(s.RSS)-float64(s.RSSBefore))/n, short[side]+"-rss-B/pod")
				b.ReportMetric(mib(s.RSS)/float64(rounds), short[side]+"-rss-MiB")
				b.ReportMetric(mib(s.GoHeld)/float64(rounds), short[side]+"-go-MiB")
			}
			b.ReportMetric(float64(sum[sideFleetcache].Heap)/float64(sum[sideTransform].Heap), "fleetcache/transform-heap")
			b.ReportMetric(float64(sum[sideFleetcache].Heap)/float64(sum[sideClientGo].Heap), "fleetcache/informer-heap")
			b.ReportMetric(withMF, "json-B/pod")
			b.ReportMetric(withoutMF, "json-nomf-B/pod")
		})
	}
}

func mib(n uint64) float64 { return float64(n) / (1 << 20) }

// podJSONSizes returns the mean compact JSON size of the benchmark's Pods
// as the server returns them, with and without managedFields, over the
// first 500 (they differ only in their names' digits).
func podJSONSizes(b *testing.B, dc dynamic.Interface) (withMF, withoutMF float64) {
	list, err := dc.Resource(pods).Namespace("bench-pods").List(context.Background(), metav1.ListOptions{Limit: 500})
	if err != nil {
		b.Fatal(err)
	}
	var with, without int
	for _, p := range list.Items {
		raw, _ := json.Marshal(p.Object)
		with += len(raw)
		p.SetManagedFields(nil)
		raw, _ = json.Marshal(p.Object)
		without += len(raw)
	}
	n := float64(len(list.Items))
	return float64(with) / n, float64(without) / n
}

// syncRound numbers the rounds of BenchmarkInitialSync across runs, so
// that each round starts with the other side.
var syncRound int

// BenchmarkInitialSync times the initial sync of 3 clusters × 10,000
// ConfigMaps by fleetcache (until health says every cluster is SYNCED) and
// by 3 bare client-go dynamic informers (until HasSynced). Each round syncs
// both, in turn, the first side alternating between rounds; every round is
// logged, and the metrics are the means.
func BenchmarkInitialSync(b *testing.B) {
	env := testbed.Env(b)
	const count = 10000
	cm := func(ns, name string) *unstructured.Unstructured {
		return configMap(ns, name, map[string]any{"config.yaml": "replicas: 3\nimage: web:1.2.3\n", "owner": "team-" + name[len(name)-1:]})
	}
	var wg sync.WaitGroup
	for _, c := range env.Clusters() {
		wg.Go(func() { ensure(b, testcluster.Dynamic(b, c.AdminConfig()), configMaps, "bench-sync", count, cm) })
	}
	wg.Wait()
	sides := []struct {
		name string
		sync func(b *testing.B) time.Duration
	}{{"fleetcache", syncFleetcache}, {"client-go", syncClientGo}}
	b.Run(fmt.Sprintf("objects=%d", 3*count), func(b *testing.B) {
		total := make([]time.Duration, len(sides))
		rounds := 0
		for b.Loop() {
			syncRound++
			rounds++
			var line []string
			for k := range sides {
				i := (syncRound + k) % len(sides)
				runtime.GC() // neither side pays for collecting the other's garbage
				d := sides[i].sync(b)
				total[i] += d
				line = append(line, fmt.Sprintf("%s %.2f s", sides[i].name, d.Seconds()))
			}
			b.Logf("round %d: %s", syncRound, strings.Join(line, ", "))
		}
		for i, s := range sides {
			b.ReportMetric(total[i].Seconds()/float64(rounds), s.name+"-s/sync")
		}
		b.ReportMetric(float64(total[0])/float64(total[1]), "fleetcache/client-go")
	})
}

// syncFleetcache syncs every cluster's ConfigMaps into one index and
// returns how long it took until health said every cluster was SYNCED.
func syncFleetcache(b *testing.B) time.Duration {
	env := testbed.Env(b)
	ix := index.New(index.Options{})
	tr := health.NewTracker(ix, health.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	var run sync.WaitGroup
	defer func() { cancel(); run.Wait() }()
	begin := time.Now()
	for _, c := range env.Clusters() {
		cache, err := informers.NewIngester(c.Name(), c.AdminConfig(), ix, tr, informers.Options{Resources: []string{"configmaps"}})
		if err != nil {
			b.Fatal(err)
		}
		run.Go(func() { _ = cache.Start(ctx) })
	}
	for _, c := range env.Clusters() {
		for s, _ := tr.Cluster(c.Name()); s.Status != health.Synced; s, _ = tr.Cluster(c.Name()) {
			time.Sleep(5 * time.Millisecond)
		}
	}
	return time.Since(begin)
}

// syncClientGo syncs every cluster's ConfigMaps with a bare dynamic
// informer each, and returns how long it took until all had synced.
func syncClientGo(b *testing.B) time.Duration {
	env := testbed.Env(b)
	var cfgs []*rest.Config
	for _, c := range env.Clusters() {
		cfgs = append(cfgs, c.AdminConfig())
	}
	begin := time.Now()
	infs, stop := startInformers(b, cfgs, configMaps, nil)
	defer stop()
	for _, inf := range infs {
		for !inf.HasSynced() {
			time.Sleep(5 * time.Millisecond)
		}
	}
	return time.Since(begin)
}

// startInformers starts, for each of cfgs, a dynamic informer factory
// with one informer of gvr, whose transform is transform unless nil: the
// client-go baselines. stop stops them all.
func startInformers(tb testing.TB, cfgs []*rest.Config, gvr schema.GroupVersionResource, transform cache.TransformFunc) (infs []cache.SharedIndexInformer, stop func()) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	factories := make([]dynamicinformer.DynamicSharedInformerFactory, 0, len(cfgs))
	stop = func() {
		cancel()
		for _, f := range factories {
			f.Shutdown()
		}
	}
	for _, cfg := range cfgs {
		f := dynamicinformer.NewDynamicSharedInformerFactory(testcluster.Dynamic(tb, cfg), 0)
		inf := f.ForResource(gvr).Informer()
		if transform != nil {
			if err := inf.SetTransform(transform); err != nil {
				stop()
				tb.Fatal(err)
			}
		}
		f.Start(ctx.Done())
		factories = append(factories, f)
		infs = append(infs, inf)
	}
	return infs, stop
}
