package informers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

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

// BenchmarkHeapPerPod compares the heap that fleetcache (informer store and
// index together) and a bare client-go dynamic informer hold per cached Pod.
func BenchmarkHeapPerPod(b *testing.B) {
	const count = 2000
	c := env.Cluster("c3")
	dc := testcluster.Dynamic(b, c.AdminConfig())
	ensure(b, dc, pods, "bench-pods", count, realisticPod)

	list, err := dc.Resource(pods).Namespace("bench-pods").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	var withMF, withoutMF int
	for _, p := range list.Items {
		raw, _ := json.Marshal(p.Object)
		withMF += len(raw)
		p.SetManagedFields(nil)
		raw, _ = json.Marshal(p.Object)
		withoutMF += len(raw)
	}
	n := len(list.Items)
	list = nil

	b.Run("fleetcache", func(b *testing.B) {
		var perObject float64
		for b.Loop() {
			before := heap()
			ix := index.New(index.Options{})
			tr := health.NewTracker(ix, health.Options{})
			cache, err := informers.NewCache("c3", c.AdminConfig(), ix, tr, informers.Options{Resources: []string{"pods"}})
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- cache.Start(ctx) }()
			for s, _ := tr.Cluster("c3"); s.Status != health.Synced; s, _ = tr.Cluster("c3") {
				time.Sleep(5 * time.Millisecond)
			}
			perObject = float64(heap()-before) / float64(ix.ObjectCount("c3", "pods"))
			cancel()
			<-done
			runtime.KeepAlive(ix)
		}
		b.ReportMetric(perObject, "heap-B/object")
		b.ReportMetric(float64(withMF)/float64(n), "json-B/object")
		b.ReportMetric(float64(withoutMF)/float64(n), "json-nomf-B/object")
	})
	b.Run("client-go", func(b *testing.B) {
		var perObject float64
		for b.Loop() {
			before := heap()
			factory := dynamicinformer.NewDynamicSharedInformerFactory(testcluster.Dynamic(b, c.AdminConfig()), 0)
			inf := factory.ForResource(pods).Informer()
			ctx, cancel := context.WithCancel(context.Background())
			factory.Start(ctx.Done())
			for !inf.HasSynced() {
				time.Sleep(5 * time.Millisecond)
			}
			perObject = float64(heap()-before) / float64(len(inf.GetStore().ListKeys()))
			cancel()
			factory.Shutdown()
		}
		b.ReportMetric(perObject, "heap-B/object")
		b.ReportMetric(float64(withMF)/float64(n), "json-B/object")
	})
}

// BenchmarkInitialSync times the initial sync of 3 clusters × 10,000
// ConfigMaps by fleetcache and by bare client-go dynamic informers.
func BenchmarkInitialSync(b *testing.B) {
	const count = 10000
	cm := func(ns, name string) *unstructured.Unstructured {
		return configMap(ns, name, map[string]any{"config.yaml": "replicas: 3\nimage: web:1.2.3\n", "owner": "team-" + name[len(name)-1:]})
	}
	var wg sync.WaitGroup
	for _, c := range env.Clusters() {
		wg.Go(func() { ensure(b, testcluster.Dynamic(b, c.AdminConfig()), configMaps, "bench-sync", count, cm) })
	}
	wg.Wait()

	b.Run("fleetcache", func(b *testing.B) {
		for b.Loop() {
			ix := index.New(index.Options{})
			tr := health.NewTracker(ix, health.Options{})
			ctx, cancel := context.WithCancel(context.Background())
			var run sync.WaitGroup
			for _, c := range env.Clusters() {
				cache, err := informers.NewCache(c.Name(), c.AdminConfig(), ix, tr, informers.Options{Resources: []string{"configmaps"}})
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
			b.StopTimer()
			cancel()
			run.Wait()
			b.StartTimer()
		}
	})
	b.Run("client-go", func(b *testing.B) {
		for b.Loop() {
			ctx, cancel := context.WithCancel(context.Background())
			var factories []dynamicinformer.DynamicSharedInformerFactory
			var synced []cache.InformerSynced
			for _, c := range env.Clusters() {
				f := dynamicinformer.NewDynamicSharedInformerFactory(testcluster.Dynamic(b, c.AdminConfig()), 0)
				synced = append(synced, f.ForResource(configMaps).Informer().HasSynced)
				f.Start(ctx.Done())
				factories = append(factories, f)
			}
			for _, hasSynced := range synced {
				for !hasSynced() {
					time.Sleep(5 * time.Millisecond)
				}
			}
			b.StopTimer()
			cancel()
			for _, f := range factories {
				f.Shutdown()
			}
			b.StartTimer()
		}
	})
}
