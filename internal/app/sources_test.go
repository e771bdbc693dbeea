package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/fleetcache/fleetcache/internal/app"
	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/clusters"
	"github.com/fleetcache/fleetcache/pkg/informers"
)

// clusterState is a cluster as the GraphQL API shows it.
type clusterState struct {
	Name, Status string
	Message      *string
	ObjectCount  int
}

// gql posts a query to the aggregator at addr and decodes data into out.
func gql(addr, query string, out any) error {
	body, _ := json.Marshal(map[string]string{"query": query})
	resp, err := http.Post("http://"+addr+"/graphql", "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var r struct {
		Data   json.RawMessage
		Errors []struct{ Message string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return err
	}
	if len(r.Errors) > 0 {
		return fmt.Errorf("graphql: %s", r.Errors[0].Message)
	}
	return json.Unmarshal(r.Data, out)
}

// clustersOf returns the clusters the aggregator at addr serves, by name.
func clustersOf(addr string) (map[string]clusterState, error) {
	var d struct{ Clusters []clusterState }
	if err := gql(addr, "{ clusters { name status message objectCount } }", &d); err != nil {
		return nil, err
	}
	out := map[string]clusterState{}
	for _, c := range d.Clusters {
		out[c.Name] = c
	}
	return out, nil
}

// waitCluster waits until the aggregator serves the named cluster in a state
// that ok accepts (nil state: the cluster is not served).
func waitCluster(t *testing.T, addr, name, what string, ok func(*clusterState) bool) {
	t.Helper()
	testcluster.Eventually(t, 60*time.Second, what, func() (bool, string) {
		cs, err := clustersOf(addr)
		if err != nil {
			return false, err.Error()
		}
		c, found := cs[name]
		if !found {
			return ok(nil), fmt.Sprintf("%+v", cs)
		}
		return ok(&c), fmt.Sprintf("%+v", cs)
	})
}

func status(want string) func(*clusterState) bool {
	return func(c *clusterState) bool { return c != nil && c.Status == want }
}

func gone(c *clusterState) bool { return c == nil }

// writeContext writes a kubeconfig with one context, name, reaching cfg.
func writeContext(t *testing.T, path, name string, cfg *rest.Config) {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters[name] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	kc.CurrentContext = name
	// Write then rename, as a mounted volume changes: never half a file.
	tmp := filepath.Join(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err := clientcmd.WriteToFile(*kc, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// startRun runs the aggregator with opts until the test ends, on a free
// port of 127.0.0.1 unless opts.Addr is set.
func startRun(t *testing.T, opts app.Options) string {
	t.Helper()
	if opts.Addr == "" {
		opts.Addr = freeAddr(t)
	}
	if len(opts.Informers.Resources) == 0 {
		opts.Informers.Resources = []string{"namespaces", "configmaps"}
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx, opts) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	testcluster.Eventually(t, 30*time.Second, "the aggregator to serve", func() (bool, string) {
		resp, err := http.Get("http://" + opts.Addr + "/healthz")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})
	return opts.Addr
}

// TestKubeconfigDirLive adds, changes and removes a kubeconfig file while
// the aggregator runs.
func TestKubeconfigDirLive(t *testing.T) {
	env := testbed.Env(t)
	c2, c3 := env.Cluster("c2"), env.Cluster("c3")
	marker := "only-in-c3-" + strings.ToLower(t.Name())
	kube3 := kubernetes.NewForConfigOrDie(c3.AdminConfig())
	if _, err := kube3.CoreV1().ConfigMaps("default").Create(t.Context(),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: marker}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	addr := startRun(t, app.Options{KubeconfigDir: dir, DirInterval: 100 * time.Millisecond})
	file := filepath.Join(dir, "member")

	writeContext(t, file, "member", c2.AdminConfig())
	waitCluster(t, addr, "member", "a cluster from a new file", status("SYNCED"))

	markerCount := func() int {
		var d struct{ Resources struct{ TotalCount int } }
		q := fmt.Sprintf(`{ resources(filter: {clusters: ["member"], nameContains: %q}) { totalCount } }`, marker)
		if err := gql(addr, q, &d); err != nil {
			return -1
		}
		return d.Resources.TotalCount
	}
	if n := markerCount(); n != 0 {
		t.Fatalf("c3's ConfigMap found under member before the change: %d", n)
	}
	writeContext(t, file, "member", c3.AdminConfig())
	testcluster.Eventually(t, 60*time.Second, "member to follow its file to c3", func() (bool, string) {
		n := markerCount()
		return n == 1, fmt.Sprintf("%d ConfigMaps named %s", n, marker)
	})

	if err := os.WriteFile(file, []byte("{{{ not a kubeconfig"), 0o600); err != nil {
		t.Fatal(err)
	}
	waitCluster(t, addr, "member", "a broken file to keep its cluster, marked", func(c *clusterState) bool {
		return c != nil && c.Status == "DEGRADED" && c.Message != nil && strings.Contains(*c.Message, file)
	})
	if n := markerCount(); n != 1 {
		t.Errorf("objects of member after its file broke: %d, want 1 (still served)", n)
	}

	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	waitCluster(t, addr, "member", "a removed file's cluster to go", gone)
}

// TestClusterSecretsLive registers clusters through Secrets in c1 and follows
// their changes: credentials, bad content, removal.
func TestClusterSecretsLive(t *testing.T) {
	env := testbed.Env(t)
	c1, c2, c3 := env.Cluster("c1"), env.Cluster("c2"), env.Cluster("c3")
	home := filepath.Join(t.TempDir(), "home")
	if err := env.WriteKubeconfig(home, "admin", c1); err != nil {
		t.Fatal(err)
	}
	kube1 := kubernetes.NewForConfigOrDie(c1.AdminConfig())
	const ns = "fleet-secrets"
	if _, err := kube1.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	secrets := kube1.CoreV1().Secrets(ns)
	put := func(name string, data map[string]string, labelled bool) {
		t.Helper()
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, StringData: data}
		if labelled {
			s.Labels = map[string]string{clusters.SecretLabel: "true"}
		}
		if _, err := secrets.Get(t.Context(), name, metav1.GetOptions{}); err == nil {
			// Replace the data wholesale: StringData only adds keys.
			s.Data = map[string][]byte{}
			if _, err := secrets.Update(t.Context(), s, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			return
		}
		if _, err := secrets.Create(t.Context(), s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	serverToken := func(c *testcluster.Cluster, user string) map[string]string {
		cfg := c.UserConfig(user)
		return map[string]string{"server": cfg.Host, "ca.crt": string(cfg.CAData), "token": cfg.BearerToken}
	}

	addr := startRun(t, app.Options{ClusterSecretsNamespace: ns, ClusterSecretsKubeconfig: home})

	put("east", serverToken(c2, "admin"), true)
	put("unlabelled", serverToken(c3, "admin"), false)
	kc := filepath.Join(t.TempDir(), "kc")
	writeContext(t, kc, "whatever", c3.AdminConfig())
	kcData, err := os.ReadFile(kc)
	if err != nil {
		t.Fatal(err)
	}
	put("west-secret", map[string]string{"name": "west", "kubeconfig": string(kcData)}, true)
	waitCluster(t, addr, "east", "east from server and token", status("SYNCED"))
	waitCluster(t, addr, "west", "west from a kubeconfig, named by its name key", status("SYNCED"))
	if cs, _ := clustersOf(addr); len(cs) != 2 {
		t.Errorf("clusters %v, want east and west only (the unlabelled Secret registers nothing)", cs)
	}

	// New credentials without the rights: the cluster follows them.
	put("east", serverToken(c2, "carol"), true)
	waitCluster(t, addr, "east", "east on carol's credentials (forbidden)", func(c *clusterState) bool {
		return c != nil && c.Status == "DEGRADED" && c.Message != nil && strings.Contains(*c.Message, "forbidden")
	})
	put("east", serverToken(c2, "admin"), true)
	waitCluster(t, addr, "east", "east back on admin's credentials", status("SYNCED"))

	// Bad content: that cluster keeps its last good configuration and says
	// why; a new bad Secret shows as a cluster with its error; nothing else
	// changes.
	put("east", map[string]string{"server": c2.URL()}, true)
	put("broken", map[string]string{"kubeconfig": "{{{"}, true)
	waitCluster(t, addr, "east", "east marked with its Secret's error", func(c *clusterState) bool {
		return c != nil && c.Status == "DEGRADED" && c.Message != nil &&
			strings.Contains(*c.Message, `cluster secret fleet-secrets/east: "server" is set but "token" is empty`) && c.ObjectCount > 0
	})
	waitCluster(t, addr, "broken", "a bad new Secret shown with its error", func(c *clusterState) bool {
		return c != nil && c.Status == "DISCONNECTED" && c.Message != nil && strings.Contains(*c.Message, "cluster secret fleet-secrets/broken")
	})
	if cs, _ := clustersOf(addr); cs["west"].Status != "SYNCED" {
		t.Errorf("west changed with the bad Secrets: %+v", cs["west"])
	}
	// A bad Secret does not take the service out of rotation.
	resp, err := http.Get("http://" + addr + "/readyz?verbose")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || strings.Contains(string(body), "cluster:broken") {
		t.Errorf("/readyz with a bad Secret: %s\n%s", resp.Status, body)
	}

	for _, name := range []string{"east", "broken", "west-secret"} {
		if err := secrets.Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"east", "broken", "west"} {
		waitCluster(t, addr, name, "a deleted Secret's cluster to go", gone)
	}
}

// TestRunSecretsKubeconfigMissing fails fast when the cluster holding the
// Secrets cannot be reached from the configuration.
func TestRunSecretsKubeconfigMissing(t *testing.T) {
	err := app.Run(t.Context(), app.Options{
		Addr: freeAddr(t), ClusterSecretsNamespace: "x", ClusterSecretsKubeconfig: "/nonexistent/home",
		Informers: informers.Options{Resources: []string{"namespaces"}},
	})
	if err == nil || !strings.Contains(err.Error(), "cluster secrets") {
		t.Fatalf("Run: %v, want a cluster secrets error", err)
	}
}

// TestRunDefaultKubeconfig registers every context of $KUBECONFIG when no
// cluster source is configured.
func TestRunDefaultKubeconfig(t *testing.T) {
	env := testbed.Env(t)
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	if err := env.WriteKubeconfig(a, "admin", env.Cluster("c1")); err != nil {
		t.Fatal(err)
	}
	if err := env.WriteKubeconfig(b, "admin", env.Cluster("c2"), env.Cluster("c3")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", a+string(filepath.ListSeparator)+b)
	addr := startRun(t, app.Options{})
	for _, name := range []string{"c1", "c2", "c3"} {
		waitCluster(t, addr, name, "every context of $KUBECONFIG", status("SYNCED"))
	}
}
