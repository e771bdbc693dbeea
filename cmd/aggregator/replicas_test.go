package main_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/fleetcache/fleetcache/internal/nodetest"
	"github.com/fleetcache/fleetcache/internal/testcluster"
)

// replica is one aggregator process of a test.
type replica struct {
	t          *testing.T
	bin, addr  string
	kubeconfig string
	// snapshot is the replica's snapshot directory, kept across its
	// restarts: a SIGKILL may cut a write short.
	snapshot string
	cmd      *exec.Cmd
	exited   chan error
	stderr   *bytes.Buffer
}

func (r *replica) start() {
	r.t.Helper()
	r.stderr = &bytes.Buffer{}
	r.cmd = exec.Command(r.bin, "--kubeconfig", r.kubeconfig, "--addr", r.addr, "--resources", "configmaps", "--authn=none",
		"--snapshot-dir", r.snapshot, "--snapshot-interval", "200ms")
	r.cmd.Stderr = r.stderr
	if err := r.cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	r.exited = make(chan error, 1)
	go func(cmd *exec.Cmd, exited chan error) { exited <- cmd.Wait() }(r.cmd, r.exited)
	testcluster.Eventually(r.t, 60*time.Second, "replica "+r.addr+" to be ready", func() (bool, string) {
		resp, err := http.Get("http://" + r.addr + "/readyz")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})
}

// stop ends the process with sig and waits for it.
func (r *replica) stop(sig syscall.Signal) {
	r.t.Helper()
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Signal(sig)
	select {
	case <-r.exited:
	case <-time.After(20 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.exited
		r.t.Errorf("replica %s still running 20s after %s", r.addr, sig)
	}
	r.cmd = nil
}

// metric returns the value of an unlabelled metric of the replica.
func (r *replica) metric(name string) float64 {
	r.t.Helper()
	resp, err := http.Get("http://" + r.addr + "/metrics")
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for line := range strings.Lines(string(body)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return 0
}

// TestReplicasLoseNothing runs two aggregators on the same three clusters
// behind a TCP proxy, as a Service in front of two replicas, and a real
// graphql-ws client that lists, then follows from the list's revision
// through the proxy while the clusters change. The replica the client is
// on is killed (SIGKILL, perhaps in the middle of a write of its
// snapshot); later both are restarted one after the other (SIGTERM), each
// on its own snapshot. After each move the client resumes on the other replica from
// its last cursor: it never gets CURSOR_EXPIRED, never an older state of an
// object than it has, and in the end its copy is the API servers' truth.
func TestReplicasLoseNothing(t *testing.T) {
	bin := buildAggregator(t)
	dir := nodetest.Install(t, "graphql-ws@6.4.2", "ws@8.23.0", "graphql@16.15.0")
	env := testbed.Env(t)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig, "admin"); err != nil {
		t.Fatal(err)
	}
	const ns = "failover"
	clients := map[string]kubernetes.Interface{}
	for _, c := range env.Clusters() {
		cs := kubernetes.NewForConfigOrDie(c.AdminConfig())
		clients[c.Name()] = cs
		_, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	a := &replica{t: t, bin: bin, addr: testcluster.FreeAddr(t), kubeconfig: kubeconfig, snapshot: filepath.Join(t.TempDir(), "a")}
	b := &replica{t: t, bin: bin, addr: testcluster.FreeAddr(t), kubeconfig: kubeconfig, snapshot: filepath.Join(t.TempDir(), "b")}
	a.start()
	b.start()
	t.Cleanup(func() { a.stop(syscall.SIGKILL); b.stop(syscall.SIGKILL) })
	proxy, err := testcluster.StartProxy(a.addr, b.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)

	// Churn: creates, updates and deletes in every cluster, about 100 a
	// second in all, until stopped.
	ctx, stopChurn := context.WithCancel(t.Context())
	var churn sync.WaitGroup
	for _, c := range env.Clusters() {
		cms := clients[c.Name()].CoreV1().ConfigMaps(ns)
		churn.Go(func() {
			tick := time.NewTicker(30 * time.Millisecond)
			defer tick.Stop()
			for i := 0; ; i++ {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				name := fmt.Sprintf("cm-%d", i%40)
				var err error
				switch i % 3 {
				case 0, 1:
					cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"i": strconv.Itoa(i)}}
					if _, err = cms.Update(ctx, cm, metav1.UpdateOptions{}); apierrors.IsNotFound(err) {
						_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
					}
				case 2:
					err = cms.Delete(ctx, name, metav1.DeleteOptions{})
					if apierrors.IsNotFound(err) {
						err = nil
					}
				}
				if err != nil && ctx.Err() == nil {
					t.Errorf("%s: %v", c.Name(), err)
					return
				}
			}
		})
	}
	t.Cleanup(func() { stopChurn(); churn.Wait() })

	// List, then follow from the list's revision, through the proxy.
	filter := map[string]any{"kinds": []string{"ConfigMap"}, "namespaces": []string{ns}}
	view := map[string]uint64{} // cluster/name → resourceVersion
	body, _ := json.Marshal(map[string]any{
		"query":     `query($f: ResourceFilter) { resources(filter: $f, first: 1000) { revision edges { node { cluster name resourceVersion } } } }`,
		"variables": map[string]any{"f": filter},
	})
	resp, err := http.Post("http://"+proxy.Addr()+"/graphql", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var listed struct {
		Data struct {
			Resources struct {
				Revision string
				Edges    []struct{ Node node }
			}
		}
	}
	err = json.NewDecoder(resp.Body).Decode(&listed)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range listed.Data.Resources.Edges {
		view[e.Node.Cluster+"/"+e.Node.Name] = rvOf(t, e.Node.ResourceVersion)
	}
	var consumer sync.WaitGroup
	t.Cleanup(consumer.Wait) // after the follower's end closes its reports
	follower := startFollower(t, dir, "ws://"+proxy.Addr()+"/graphql", map[string]any{"filter": filter, "since": listed.Data.Resources.Revision})

	var mu sync.Mutex
	events, resumes := 0, 0
	apply := func(r followerReport) {
		mu.Lock()
		defer mu.Unlock()
		switch r.Type {
		case "closed":
			resumes++
		case "error":
			t.Errorf("the subscription ended: %s", r.Error)
		case "next":
			var p struct {
				Data *struct {
					ResourceEvents struct {
						Type, Cursor string
						Resource     node
					}
				}
				Extensions struct{ Cursor string }
			}
			if err := json.Unmarshal(r.Payload, &p); err != nil {
				t.Errorf("payload %s: %v", r.Payload, err)
				return
			}
			if p.Data == nil {
				return // a heartbeat
			}
			ev := p.Data.ResourceEvents
			events++
			k, rv := ev.Resource.Cluster+"/"+ev.Resource.Name, rvOf(t, ev.Resource.ResourceVersion)
			if have, ok := view[k]; ok && rv < have {
				t.Errorf("%s %s at resourceVersion %d, older than the %d the client has", ev.Type, k, rv, have)
			}
			if ev.Type == "DELETED" {
				delete(view, k)
			} else {
				view[k] = rv
			}
		}
	}
	consumer.Go(func() {
		for r := range follower.reports {
			apply(r)
		}
	})
	progress := func(what string) {
		mu.Lock()
		from := events
		mu.Unlock()
		testcluster.Eventually(t, 60*time.Second, what, func() (bool, string) {
			mu.Lock()
			defer mu.Unlock()
			return events >= from+50, fmt.Sprintf("%d events", events-from)
		})
	}
	// restored checks that r started on its snapshot: it resumes the
	// client's cursors from before its restart, with no wait for a list.
	restored := func(r *replica) {
		if n := r.metric("fleetcache_snapshot_loaded_objects"); n == 0 {
			t.Errorf("replica %s restarted without loading its snapshot", r.addr)
		}
	}

	progress("events through replica A")
	a.stop(syscall.SIGKILL) // the replica the client is on
	progress("events through replica B after A was killed")
	a.start()
	restored(a)
	b.stop(syscall.SIGTERM) // a rolling restart: B, then A
	progress("events through the restarted A")
	b.start()
	restored(b)
	a.stop(syscall.SIGTERM)
	progress("events through the restarted B")

	stopChurn()
	churn.Wait()
	truth := map[string]uint64{}
	for name, cs := range clients {
		list, err := cs.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, cm := range list.Items {
			truth[name+"/"+cm.Name] = rvOf(t, cm.ResourceVersion)
		}
	}
	testcluster.Eventually(t, 60*time.Second, "the client's copy to be the API servers' truth", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		for k, rv := range truth {
			if view[k] != rv {
				return false, fmt.Sprintf("%s at %d, the truth %d", k, view[k], rv)
			}
		}
		for k := range view {
			if _, ok := truth[k]; !ok {
				return false, k + " is deleted"
			}
		}
		return true, ""
	})
	mu.Lock()
	defer mu.Unlock()
	if resumes < 3 {
		t.Errorf("the client resumed %d times, want 3 (a kill and two restarts)", resumes)
	}
	t.Logf("%d events, %d resumes, %d objects", events, resumes, len(truth))
}

type node struct{ Cluster, Name, ResourceVersion string }

func rvOf(t *testing.T, s string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Errorf("resourceVersion %q: %v", s, err)
	}
	return n
}

type followerReport struct {
	Type    string
	Payload json.RawMessage
	Error   json.RawMessage
	Code    int
}

type follower struct{ reports chan followerReport }

// startFollower runs testdata/resume_client.js; it is killed when the
// test ends.
func startFollower(t *testing.T, dir, url string, vars map[string]any) *follower {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node not found (make testdeps installs it): %v", err)
	}
	script, err := filepath.Abs(filepath.Join("testdata", "resume_client.js"))
	if err != nil {
		t.Fatal(err)
	}
	query := `subscription($filter: ResourceFilter, $since: String) {
  resourceEvents(filter: $filter, since: $since) { type cursor resource { cluster name resourceVersion } }
}`
	v, _ := json.Marshal(vars)
	cmd := exec.Command(node, script, url, query, string(v))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NODE_PATH="+filepath.Join(dir, "node_modules"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	f := &follower{reports: make(chan followerReport, 1024)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(f.reports)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			var r followerReport
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Errorf("resume_client.js: bad report %q: %v", sc.Text(), err)
				continue
			}
			f.reports <- r
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		<-done
		if t.Failed() {
			t.Logf("resume_client.js stderr:\n%s", stderr.String())
		}
	})
	return f
}
