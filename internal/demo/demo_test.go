package demo

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/fleetcache/fleetcache/internal/testcluster"
)

// syncBuffer is a bytes.Buffer that Run writes while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// graphQL posts a query to the demo's aggregator and decodes its data into
// out, failing the test on a transport or GraphQL error.
type graphQL struct {
	client *http.Client
	base   string
}

func (g graphQL) query(t *testing.T, query string, out any) {
	t.Helper()
	if err := g.try(t.Context(), query, out); err != nil {
		t.Fatal(err)
	}
}

func (g graphQL) try(ctx context.Context, query string, out any) error {
	var answer struct {
		Data   json.RawMessage
		Errors []struct{ Message string }
	}
	if err := postQuery(ctx, g.client, g.base, query, &answer); err != nil {
		return err
	}
	if len(answer.Errors) > 0 {
		return fmt.Errorf("query %s: errors %+v", query, answer.Errors)
	}
	if err := json.Unmarshal(answer.Data, out); err != nil {
		return fmt.Errorf("query %s: decode data %s: %w", query, answer.Data, err)
	}
	return nil
}

// userKubeconfig is a kubeconfig of someone who runs the demo.
const userKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: mine
  cluster: {server: "https://127.0.0.1:1"}
users:
- name: mine
  user: {token: not-for-fleetcache}
contexts:
- name: mine
  context: {cluster: mine, user: mine}
current-context: mine
`

// TestRun brings the demo up as "make demo" does, asks the aggregator what
// it seeded, compares with the real API servers, follows the churn over a
// subscription and stops it.
func TestRun(t *testing.T) {
	testcluster.SkipShort(t, "real kube-apiservers")
	addr := testcluster.FreeAddr(t)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	// The user's kubeconfig, where the demo adds the context "fleetcache":
	// it has a context of its own, which stays.
	fleetKubeconfig := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(fleetKubeconfig, []byte(userKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	out := &syncBuffer{}
	ctx, cancel := context.WithCancel(t.Context())
	// returned is closed when Run has returned runErr: read by the wait for
	// the clusters and by stop, which must both see it.
	returned := make(chan struct{})
	var runErr error
	go func() {
		defer close(returned)
		runErr = Run(ctx, Options{Addr: addr, Kubeconfig: kubeconfig, FleetKubeconfig: fleetKubeconfig, ChurnInterval: 200 * time.Millisecond, Out: out})
	}()
	stop := sync.OnceValues(func() (time.Duration, error) {
		begin := time.Now()
		cancel()
		select {
		case <-returned:
			return time.Since(begin), runErr
		case <-time.After(time.Minute):
			// Not Fatal: stop runs inside sync.OnceValues, which a
			// Goexit would turn into a panic.
			t.Error("Run did not return within a minute of the cancel")
			return 0, nil
		}
	})
	t.Cleanup(func() { stop() })

	transport := &http.Transport{}
	defer transport.CloseIdleConnections()
	g := graphQL{client: &http.Client{Transport: transport}, base: "http://" + addr}

	// Up: every cluster SYNCED, and the banner printed.
	testcluster.Eventually(t, 3*time.Minute, "three SYNCED clusters", func() (bool, string) {
		select {
		case <-returned:
			t.Fatalf("Run returned early: %v\noutput:\n%s", runErr, out)
		default:
		}
		var data struct {
			Clusters []struct{ Name, Status string }
		}
		if err := g.try(t.Context(), `{ clusters { name status } }`, &data); err != nil {
			return false, err.Error()
		}
		want := []struct{ Name, Status string }{{"prod-eu", "SYNCED"}, {"prod-us", "SYNCED"}, {"staging", "SYNCED"}}
		return cmp.Equal(data.Clusters, want), fmt.Sprintf("%+v", data.Clusters)
	})
	testcluster.Eventually(t, 30*time.Second, "the banner", func() (bool, string) {
		s := out.String()
		return strings.Contains(s, "GraphiQL     http://"+addr+"/graphql") && strings.Contains(s, "Ctrl-C"), s
	})
	t.Logf("output:\n%s", out)
	if !strings.Contains(out.String(), "kubectl fleet get pods -A") || !strings.Contains(out.String(), `context "fleetcache", added to `+fleetKubeconfig) {
		t.Errorf("the banner names no kubectl fleet line with the context it added:\n%s", out)
	}

	clients, closeClients := clusterClients(t, kubeconfig)
	defer closeClients()

	t.Run("pods per cluster", func(t *testing.T) {
		// The churn scales Deployments: poll until the index and the API
		// servers agree between two changes.
		testcluster.Eventually(t, 30*time.Second, "facets by cluster to match the pods of the API servers", func() (bool, string) {
			var data struct {
				Facets []struct {
					Value string
					Count int
				}
			}
			if err := g.try(t.Context(), `{ facets(by: CLUSTER, filter: {kinds: ["Pod"]}) { value count } }`, &data); err != nil {
				return false, err.Error()
			}
			got := map[string]int{}
			for _, f := range data.Facets {
				got[f.Value] = f.Count
			}
			want := map[string]int{}
			for name, c := range clients {
				pods, err := c.CoreV1().Pods("").List(t.Context(), metav1.ListOptions{})
				if err != nil {
					return false, err.Error()
				}
				want[name] = len(pods.Items)
			}
			return cmp.Equal(got, want), cmp.Diff(want, got)
		})
	})

	t.Run("a few hundred objects per cluster", func(t *testing.T) {
		var data struct {
			Facets []struct {
				Value string
				Count int
			}
		}
		g.query(t, `{ facets(by: CLUSTER) { value count } }`, &data)
		if len(data.Facets) != 3 {
			t.Fatalf("facets %+v, want three clusters", data.Facets)
		}
		t.Logf("objects per cluster: %+v", data.Facets)
		for _, f := range data.Facets {
			if f.Count < 150 {
				t.Errorf("cluster %s caches %d objects, want a few hundred", f.Value, f.Count)
			}
		}
	})

	t.Run("deployment tree", func(t *testing.T) {
		testDeploymentTree(t, g, clients["prod-us"])
	})

	t.Run("widgets", func(t *testing.T) {
		var data struct {
			Facets []struct {
				Value string
				Count int
			}
			Resource struct {
				Kind   string
				Object struct {
					Spec struct{ Color string }
				}
			}
		}
		g.query(t, `{
			facets(by: CLUSTER, filter: {kinds: ["Widget.demo.fleetcache.io"]}) { value count }
			resource(cluster: "prod-eu", kind: "Widget.demo.fleetcache.io", namespace: "team-a", name: "gizmo") { kind object }
		}`, &data)
		if len(data.Facets) != 3 {
			t.Errorf("widgets by cluster %+v, want some in each of three clusters", data.Facets)
		}
		if data.Resource.Kind != "Widget" || data.Resource.Object.Spec.Color != "red" {
			t.Errorf("widget team-a/gizmo of prod-eu: %+v, want a red Widget", data.Resource)
		}
	})

	t.Run("churn", func(t *testing.T) {
		testChurn(t, g)
	})

	t.Run("README kubectl fleet lines", func(t *testing.T) {
		testReadmeKubectlFleet(t, fleetKubeconfig)
	})

	t.Run("nodes ready with a version", func(t *testing.T) {
		testNodes(t, fleetKubeconfig)
	})

	t.Run("graphiql", func(t *testing.T) {
		testGraphiQL(t, g.base)
	})

	t.Run("metrics and GraphiQL", func(t *testing.T) {
		for _, tt := range []struct{ name, path, accept, wantType string }{
			{name: "metrics", path: "/metrics", wantType: "text/plain"},
			{name: "GraphiQL", path: "/graphql", accept: "text/html", wantType: "text/html"},
		} {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, g.base+tt.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tt.accept != "" {
				req.Header.Set("Accept", tt.accept)
			}
			resp, err := g.client.Do(req)
			if err != nil {
				t.Fatalf("%s: %v", tt.name, err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), tt.wantType) {
				t.Errorf("%s: status %s, content type %q, want 200 and %s", tt.name, resp.Status, resp.Header.Get("Content-Type"), tt.wantType)
			}
		}
	})

	// Stop: Run returns nil promptly, and what it started is gone.
	transport.CloseIdleConnections()
	closeClients()
	took, err := stop()
	if err != nil {
		t.Errorf("Run: %v", err)
	}
	t.Logf("Run returned %s after the cancel", took.Round(time.Millisecond))
	if took > 20*time.Second {
		t.Errorf("Run took %s to stop, want a few seconds", took)
	}
	if _, err := os.Stat(kubeconfig); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("kubeconfig after Run: %v, want it removed", err)
	}
	if cfg, err := clientcmd.LoadFromFile(fleetKubeconfig); err != nil {
		t.Errorf("the user's kubeconfig after Run: %v", err)
	} else if _, ok := cfg.Contexts[FleetContext]; ok || cfg.Contexts["mine"] == nil || cfg.CurrentContext != "mine" {
		t.Errorf("the user's kubeconfig after Run has contexts %v, current %q: want the demo's gone and the user's as it was", slices.Collect(maps.Keys(cfg.Contexts)), cfg.CurrentContext)
	}
	if _, err := clients["prod-eu"].Discovery().ServerVersion(); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("API server of prod-eu after Run: error %v, want connection refused", err)
	}
	if _, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		t.Errorf("aggregator still listening on %s after Run", addr)
	}
}

// testDeploymentTree checks that a Deployment's child is its ReplicaSet and
// the ReplicaSet's children are the Pods the API server has for it, and that
// a Deployment with history has its old, empty ReplicaSet too.
func testDeploymentTree(t *testing.T, g graphQL, client kubernetes.Interface) {
	type node struct {
		Kind, Name string
		Labels     map[string]string
		Owners     []struct{ Kind, Name string }
		Children   []node
	}
	const tree = `{ kind name labels owners { kind name } children { kind name labels owners { kind name } children { kind name labels owners { kind name } } } }`
	testcluster.Eventually(t, 30*time.Second, "the Pods of team-a/api to match the API server", func() (bool, string) {
		var data struct{ Resource node }
		if err := g.try(t.Context(), `{ resource(cluster: "prod-us", kind: "Deployment.apps", namespace: "team-a", name: "api") `+tree+` }`, &data); err != nil {
			return false, err.Error()
		}
		d := data.Resource
		if len(d.Children) != 1 || d.Children[0].Kind != "ReplicaSet" {
			t.Fatalf("children of deployment team-a/api: %+v, want one ReplicaSet", d.Children)
		}
		rs := d.Children[0]
		hash := rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
		if hash == "" || rs.Name != "api-"+hash {
			t.Fatalf("replica set %s has pod-template-hash %q, want its name's suffix", rs.Name, hash)
		}
		if len(rs.Owners) != 1 || rs.Owners[0].Name != "api" {
			t.Fatalf("owners of replica set %s: %+v, want deployment api", rs.Name, rs.Owners)
		}
		var got []string
		for _, p := range rs.Children {
			if p.Kind != "Pod" || p.Labels[appsv1.DefaultDeploymentUniqueLabelKey] != hash || !strings.HasPrefix(p.Name, rs.Name+"-") {
				t.Fatalf("child %+v of replica set %s: want a Pod named after it with pod-template-hash %s", p, rs.Name, hash)
			}
			got = append(got, p.Name)
		}
		pods, err := client.CoreV1().Pods("team-a").List(t.Context(), metav1.ListOptions{LabelSelector: "pod-template-hash=" + hash})
		if err != nil {
			return false, err.Error()
		}
		var want []string
		for _, p := range pods.Items {
			want = append(want, p.Name)
		}
		slices.Sort(got)
		slices.Sort(want)
		return len(got) > 0 && slices.Equal(got, want), cmp.Diff(want, got)
	})

	var data struct{ Resource node }
	g.query(t, `{ resource(cluster: "prod-eu", kind: "Deployment.apps", namespace: "payments", name: "api") `+tree+` }`, &data)
	pods := map[string]int{}
	for _, rs := range data.Resource.Children {
		pods[rs.Kind] += len(rs.Children)
	}
	if len(data.Resource.Children) != 2 || pods["ReplicaSet"] == 0 {
		t.Errorf("deployment payments/api of prod-eu: %+v, want two ReplicaSets, one with Pods", data.Resource)
	}
}

// testChurn follows resourceEvents over SSE from the current revision and
// waits until each kind of churn change has been seen.
func testChurn(t *testing.T, g graphQL) {
	var data struct{ Resources struct{ Revision string } }
	g.query(t, `{ resources(first: 0) { revision } }`, &data)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	body, err := json.Marshal(map[string]any{
		"query":     `subscription($since: String) { resourceEvents(since: $since) { type cursor resource { cluster kind namespace name labels } } }`,
		"variables": map[string]any{"since": data.Resources.Revision},
	})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.base+"/graphql", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := g.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("subscribe: status %s", resp.Status)
	}
	// Every kind of churn change, as the events it makes. A Pod DELETED
	// means the Pod is gone, not merely marked for deletion.
	want := map[string]bool{"Pod ADDED": false, "Pod DELETED": false, "ConfigMap MODIFIED": false, "Widget ADDED": false, "Widget DELETED": false}
	var seen []string
	s := bufio.NewScanner(resp.Body)
	s.Buffer(nil, 1<<20)
	for s.Scan() {
		line, ok := strings.CutPrefix(s.Text(), "data: ")
		if !ok {
			continue
		}
		var payload struct {
			Data struct {
				ResourceEvents struct {
					Type     string
					Resource struct {
						Cluster, Kind, Namespace, Name string
						Labels                         map[string]string
					}
				}
			}
			Errors []struct{ Message string }
		}
		if err := json.Unmarshal([]byte(line), &payload); err != nil {
			t.Fatalf("event %s: %v", line, err)
		}
		if len(payload.Errors) > 0 {
			t.Fatalf("subscription error: %+v", payload.Errors)
		}
		ev := payload.Data.ResourceEvents
		if ev.Type == "" {
			continue // a heartbeat
		}
		r := ev.Resource
		seen = append(seen, fmt.Sprintf("%s %s %s/%s/%s", ev.Type, r.Kind, r.Cluster, r.Namespace, r.Name))
		key := r.Kind + " " + ev.Type
		if _, ok := want[key]; ok && (r.Kind != "ConfigMap" || r.Labels["config-version"] != "v1") {
			want[key] = true
		}
		if !slices.Contains(slices.Collect(maps.Values(want)), false) {
			t.Logf("churn events seen: %d, first: %s", len(seen), seen[0])
			return
		}
	}
	t.Fatalf("subscription ended (%v) before every kind of churn change was seen: %v; events: %q", s.Err(), want, seen)
}

// clusterClients returns a client per context of the demo's kubeconfig, and
// a function that closes their idle connections, so that none outlives the
// test.
func clusterClients(t *testing.T, kubeconfig string) (map[string]kubernetes.Interface, func()) {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatalf("load the demo's kubeconfig: %v", err)
	}
	clients := map[string]kubernetes.Interface{}
	var https []*http.Client
	for name := range cfg.Contexts {
		rc, err := clientcmd.NewNonInteractiveClientConfig(*cfg, name, &clientcmd.ConfigOverrides{}, nil).ClientConfig()
		if err != nil {
			t.Fatalf("context %s: %v", name, err)
		}
		hc, err := rest.HTTPClientFor(rc)
		if err != nil {
			t.Fatal(err)
		}
		c, err := kubernetes.NewForConfigAndClient(rc, hc)
		if err != nil {
			t.Fatal(err)
		}
		clients[name] = c
		https = append(https, hc)
	}
	if len(clients) != 3 {
		t.Fatalf("kubeconfig contexts %v, want three", slices.Sorted(maps.Keys(clients)))
	}
	return clients, func() {
		for _, hc := range https {
			hc.CloseIdleConnections()
		}
	}
}

// TestRunAddressInUse checks that a taken address fails the demo at once,
// before any cluster starts.
func TestRunAddressInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	out := &syncBuffer{}
	begin := time.Now()
	err = Run(t.Context(), Options{Addr: ln.Addr().String(), Out: out})
	if err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Errorf("Run on a taken address: error %v, want address already in use", err)
	}
	if took := time.Since(begin); took > 5*time.Second || out.String() != "" {
		t.Errorf("Run took %s and printed %q, want a prompt failure before starting anything", took, out)
	}
}

func TestDisplayAddr(t *testing.T) {
	tests := []struct {
		name, addr, want string
	}{
		{name: "loopback", addr: "127.0.0.1:8080", want: "127.0.0.1:8080"},
		{name: "no host", addr: ":8080", want: "127.0.0.1:8080"},
		{name: "any IPv4", addr: "0.0.0.0:9090", want: "127.0.0.1:9090"},
		{name: "any IPv6", addr: "[::]:9090", want: "127.0.0.1:9090"},
		{name: "name", addr: "localhost:8080", want: "localhost:8080"},
		{name: "not host:port", addr: "nonsense", want: "nonsense"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := displayAddr(tt.addr); got != tt.want {
				t.Errorf("displayAddr(%q) = %q, want %q", tt.addr, got, tt.want)
			}
		})
	}
}
