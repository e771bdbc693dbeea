package kubeapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/fleetcache/fleetcache/internal/app"
	"github.com/fleetcache/fleetcache/internal/apptest"
	"github.com/fleetcache/fleetcache/internal/graphqltest"
	"github.com/fleetcache/fleetcache/internal/helperproc"
	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/index/compact"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	pkginformers "github.com/fleetcache/fleetcache/pkg/informers"
	"github.com/fleetcache/fleetcache/pkg/kubeapi"
)

// benchPodsEnv sets how many Pods BenchmarkInformerThroughFleetcache
// seeds into the member; default defaultBenchPods, a quick run.
const (
	benchPodsEnv     = "FLEETCACHE_BENCH_PODS"
	defaultBenchPods = 2000
	// followChanges is how many Pods each informer run sees change.
	followChanges = 10
	// informerRunTimeout bounds one informer run: its sync and its changes.
	informerRunTimeout = 15 * time.Minute
)

// informerClientEnv, set in the environment of this package's test binary
// (helperproc), makes it an informer client instead (runInformerClient):
// it syncs a typed Pod informer, says so, follows the changes it is asked
// to and exits, before TestMain starts any cluster. Its value is an
// informerClient in JSON.
const informerClientEnv = "FLEETCACHE_INFORMER_CLIENT"

// informerClient is what an informer client reaches, and how.
type informerClient struct {
	Host  string `json:"host"`
	Token string `json:"token"`
	CA    []byte `json:"ca"`
	// Protobuf makes the client prefer protobuf, as Kubernetes' own
	// components do, JSON second; otherwise it asks for JSON only.
	Protobuf bool `json:"protobuf"`
}

func init() {
	helperproc.Serve(informerClientEnv, func(c informerClient) error { return runInformerClient(c, os.Stdin, os.Stdout) })
}

// followLabel is the label whose value the changes set.
const followLabel = "bench-follow"

// runInformerClient is the careful client-go user: a typed Pod informer
// over every namespace whose transform drops managedFields. Once its event
// handler has every Pod it writes "synced <nanoseconds> <pods>"; then, for
// each line "follow <value> <n>" it reads, it writes "followed" once n
// Pods carry label followLabel=value. It stops at the end of its input.
func runInformerClient(c informerClient, in io.Reader, out io.Writer) error {
	cfg := &rest.Config{Host: c.Host, BearerToken: c.Token, TLSClientConfig: rest.TLSClientConfig{CAData: c.CA}, QPS: -1}
	cfg.ContentType, cfg.AcceptContentTypes = "application/json", "application/json"
	if c.Protobuf {
		cfg.ContentType = "application/vnd.kubernetes.protobuf"
		cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(dropManagedFields))
	inf := factory.Core().V1().Pods().Informer()
	var mu sync.Mutex
	changed := sync.NewCond(&mu)
	seen := map[string]map[string]bool{} // label value → the Pods that carry it
	note := func(obj any) {
		p, ok := obj.(*corev1.Pod)
		if !ok || p.Labels[followLabel] == "" {
			return
		}
		mu.Lock()
		v := p.Labels[followLabel]
		if seen[v] == nil {
			seen[v] = map[string]bool{}
		}
		seen[v][p.Namespace+"/"+p.Name] = true
		changed.Broadcast()
		mu.Unlock()
	}
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: note, UpdateFunc: func(_, obj any) { note(obj) }})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), informerRunTimeout)
	defer func() { cancel(); factory.Shutdown() }()
	start := time.Now()
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
		return errors.New("not synced in time")
	}
	fmt.Fprintf(out, "synced %d %d\n", time.Since(start).Nanoseconds(), len(inf.GetStore().ListKeys()))
	lines := bufio.NewScanner(in)
	for lines.Scan() {
		var value string
		var n int
		if _, err := fmt.Sscanf(lines.Text(), "follow %s %d", &value, &n); err != nil {
			return fmt.Errorf("read %q: %w", lines.Text(), err)
		}
		mu.Lock()
		for len(seen[value]) < n && ctx.Err() == nil {
			changed.Wait() // the handler broadcasts at least once a change
		}
		mu.Unlock()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		fmt.Fprintln(out, "followed")
	}
	return lines.Err()
}

// dropManagedFields is the transform a careful client-go user sets:
// managedFields are half of a typical object and no reader of a cache
// needs them. A tombstone, which has no accessor, passes as it is.
func dropManagedFields(obj any) (any, error) {
	if a, err := meta.Accessor(obj); err == nil {
		a.SetManagedFields(nil)
	}
	return obj, nil
}

// informerRun is what one informer run took and cost.
type informerRun struct {
	sync, follow                  time.Duration // to HasSynced; from the first change to the last one seen
	apiserver, etcd, fleet, child time.Duration // CPU time of each process during the run
}

func (r *informerRun) add(o informerRun) {
	r.sync += o.sync
	r.follow += o.follow
	r.apiserver += o.apiserver
	r.etcd += o.etcd
	r.fleet += o.fleet
	r.child += o.child
}

// cpus are the CPU times of the member's API server, etcd and this
// process, which hosts fleetcache.
type cpus struct{ apiserver, etcd, fleet time.Duration }

func readCPUs(b *testing.B, member *testcluster.Cluster, env *testcluster.Env) cpus {
	b.Helper()
	a, err := member.CPU()
	if err != nil {
		b.Fatal(err)
	}
	e, err := env.EtcdCPU()
	if err != nil {
		b.Fatal(err)
	}
	f, err := testcluster.ProcessCPU(0)
	if err != nil {
		b.Fatal(err)
	}
	return cpus{a, e, f}
}

// settle waits, up to a minute, until the member's API server and etcd
// have used less than 50 ms of CPU in the last second: the garbage of a
// run's list is collected after it, and would be counted in the next run.
func settle(b *testing.B, member *testcluster.Cluster, env *testcluster.Env) {
	b.Helper()
	last := readCPUs(b, member, env)
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		time.Sleep(time.Second)
		now := readCPUs(b, member, env)
		if now.apiserver+now.etcd-last.apiserver-last.etcd < 50*time.Millisecond {
			return
		}
		last = now
	}
	b.Logf("the member did not settle within a minute")
}

// informerRound numbers the rounds across sub-benchmarks, so that each
// round starts with the other side.
var informerRound int

// BenchmarkInformerThroughFleetcache compares a client-go informer's
// initial list and watch of a member's Pods made directly against the
// member's API server and through fleetcache's /clusters/c1: the time to
// HasSynced, the time until it has seen followChanges Pods change, and what
// the run cost in CPU the member's kube-apiserver, the etcd under it,
// fleetcache (this process: its informers follow the member throughout,
// and it serves side "fleetcache") and the client. The client is the
// careful one: a typed informer whose transform drops managedFields, run
// in a process of its own (this test binary, as runInformerClient), so that
// this process's CPU time is fleetcache's. client=protobuf prefers
// protobuf, as Kubernetes' components do (fleetcache answers JSON);
// client=json asks for JSON, as most other tools do. A round runs both
// sides, the first alternating; every run is logged, the metrics are the
// means. The member holds FLEETCACHE_BENCH_PODS realistic Pods
// (graphqltest.RealisticPod, status included), created by 32 concurrent
// clients; fleetcache authenticates the client with TokenReviews and
// authorizes it with SubjectAccessReviews in the member, whose cost is the
// member's. Each run starts once the member is idle again (settle);
// member-idle-cpu-s/s is what its API server and etcd use idle, per
// second, before the runs.
//
//	FLEETCACHE_BENCH_PODS=100000 go test -tags=pebblegozstd -run '^$' -bench BenchmarkInformerThroughFleetcache -benchtime 2x -timeout 60m ./pkg/kubeapi/
func BenchmarkInformerThroughFleetcache(b *testing.B) {
	n := defaultBenchPods
	if s := os.Getenv(benchPodsEnv); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < followChanges {
			b.Fatalf("%s=%q: want a number of Pods, at least %d", benchPodsEnv, s, followChanges)
		}
	}
	env := testbed.Env(b)
	member := env.Cluster("c1")
	b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
		begin := time.Now()
		seedRealisticPods(b, member, n)
		b.Logf("seeded %d Pods in %s", n, time.Since(begin).Round(time.Second))
		f := apptest.StartServing(b, env, app.Options{
			Informers: pkginformers.Options{Resources: []string{"pods"}},
			Auth:      app.AuthOptions{Authn: app.AuthnTokenReview, AuthnConfig: member.AdminConfig()},
		}, apptest.Serving{TLS: true})
		begin = time.Now()
		testcluster.Eventually(b, 20*time.Minute, "fleetcache holds every Pod", func() (bool, string) {
			got := f.Index.ObjectCount(member.Name(), "pods")
			return got == n, fmt.Sprintf("%d of %d", got, n)
		})
		b.Logf("fleetcache synced %d Pods in %s", n, time.Since(begin).Round(time.Second))
		idle0 := readCPUs(b, member, env)
		time.Sleep(5 * time.Second)
		idle1 := readCPUs(b, member, env)
		idle := (idle1.apiserver + idle1.etcd - idle0.apiserver - idle0.etcd).Seconds() / 5
		admin := member.AdminConfig()
		sides := []struct {
			name   string
			client informerClient
		}{
			{"member", informerClient{Host: admin.Host, Token: admin.BearerToken, CA: admin.CAData}},
			{"fleetcache", informerClient{Host: f.URL + kubeapi.PathPrefix + member.Name(), Token: admin.BearerToken, CA: f.CA}},
		}
		for _, protobuf := range []bool{true, false} {
			name := map[bool]string{true: "client=protobuf", false: "client=json"}[protobuf]
			b.Run(name, func(b *testing.B) {
				sum := make([]informerRun, len(sides))
				rounds := 0
				for b.Loop() {
					informerRound++
					rounds++
					for k := range sides {
						i := (informerRound + k) % len(sides)
						c := sides[i].client
						c.Protobuf = protobuf
						r := runInformer(b, env, member, c, n, fmt.Sprintf("r%d-%s", informerRound, sides[i].name))
						b.Logf("round %d, %s: synced in %.2f s, followed %d changes in %.3f s; CPU: member API server %.2f s, etcd %.2f s, fleetcache %.2f s, client %.2f s",
							informerRound, sides[i].name, r.sync.Seconds(), followChanges, r.follow.Seconds(),
							r.apiserver.Seconds(), r.etcd.Seconds(), r.fleet.Seconds(), r.child.Seconds())
						sum[i].add(r)
					}
				}
				for i, s := range sides {
					per := func(d time.Duration) float64 { return d.Seconds() / float64(rounds) }
					b.ReportMetric(per(sum[i].sync), s.name+"-sync-s")
					b.ReportMetric(per(sum[i].follow), s.name+"-follow-s")
					b.ReportMetric(per(sum[i].apiserver), s.name+"-apiserver-cpu-s")
					b.ReportMetric(per(sum[i].etcd), s.name+"-etcd-cpu-s")
					b.ReportMetric(per(sum[i].fleet), s.name+"-fleetcache-cpu-s")
					b.ReportMetric(per(sum[i].child), s.name+"-client-cpu-s")
				}
				b.ReportMetric(idle, "member-idle-cpu-s/s")
			})
		}
	})
}

// runInformer runs one informer client against c until it has synced
// n Pods and seen followChanges of them get label followLabel=value, and
// measures the run.
func runInformer(b *testing.B, env *testcluster.Env, member *testcluster.Cluster, c informerClient, n int, value string) informerRun {
	b.Helper()
	ctx, cancel := context.WithTimeout(b.Context(), informerRunTimeout)
	defer cancel()
	runtime.GC() // the runs do not pay for collecting each other's garbage
	settle(b, member, env)
	before := readCPUs(b, member, env)
	p := helperproc.Start(ctx, b, informerClientEnv, c)
	var r informerRun
	var synced, pods int64
	if _, err := fmt.Sscanf(p.Line(b, "its sync"), "synced %d %d", &synced, &pods); err != nil {
		b.Fatal(err)
	}
	if pods != int64(n) {
		b.Fatalf("informer client against %s synced %d Pods, want %d", c.Host, pods, n)
	}
	r.sync = time.Duration(synced)
	begin := time.Now()
	p.Printf(b, "follow %s %d", value, followChanges)
	labelPods(b, member, value)
	p.Line(b, "the changes")
	r.follow = time.Since(begin)
	after := readCPUs(b, member, env)
	r.child = p.Wait(b)
	r.apiserver, r.etcd, r.fleet = after.apiserver-before.apiserver, after.etcd-before.etcd, after.fleet-before.fleet
	return r
}

// podType is how the index types Pods, for graphqltest.RealisticPod.
var podType = &object.Type{Resource: "pods", GVR: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Kind: "Pod", Namespaced: true,
	Codec: compact.NewCodec("pods", 0)}

// seedRealisticPods creates Pods 0 … n-1 of graphqltest.RealisticPod in
// member, each with its status (a create drops it: an update of the status
// follows), 32 at a time, over protobuf. Pods that exist are left alone.
func seedRealisticPods(b *testing.B, member *testcluster.Cluster, n int) {
	b.Helper()
	cfg := member.AdminConfig()
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.QPS, cfg.Burst = -1, 0
	client := kubernetes.NewForConfigOrDie(cfg)
	ctx := b.Context()
	for i := range graphqltest.PodNamespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ns-%02d", i)}}
		if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			b.Fatal(err)
		}
	}
	base := time.Now().Add(-time.Duration(n) * time.Second)
	work := make(chan int)
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for i := range work {
				if err := createPod(ctx, client, i, base); err != nil {
					select {
					case errs <- fmt.Errorf("pod %d: %w", i, err):
					default:
					}
				}
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
}

// createPod creates RealisticPod i and gives it its status.
func createPod(ctx context.Context, client kubernetes.Interface, i int, base time.Time) error {
	var pod corev1.Pod
	if err := json.Unmarshal(graphqltest.RealisticPod(podType, "", i, base).Raw(), &pod); err != nil {
		return err
	}
	status := pod.Status
	pod.UID, pod.ResourceVersion, pod.CreationTimestamp = "", "", metav1.Time{}
	created, err := client.CoreV1().Pods(pod.Namespace).Create(ctx, &pod, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		return err
	}
	created.Status = status
	_, err = client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{})
	return err
}

// labelPods sets label followLabel=value on the first followChanges Pods
// of the member, one after the other.
func labelPods(b *testing.B, member *testcluster.Cluster, value string) {
	b.Helper()
	client := kubernetes.NewForConfigOrDie(member.AdminConfig())
	patch := fmt.Appendf(nil, `{"metadata":{"labels":{%q:%q}}}`, followLabel, value)
	for i := range followChanges {
		var pod corev1.Pod
		if err := json.Unmarshal(graphqltest.RealisticPod(podType, "", i, time.Time{}).Raw(), &pod); err != nil {
			b.Fatal(err)
		}
		if _, err := client.CoreV1().Pods(pod.Namespace).Patch(b.Context(), pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
