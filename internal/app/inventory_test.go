package app_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"github.com/fleetcache/fleetcache/internal/app"
	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/clusters"
	"github.com/fleetcache/fleetcache/pkg/informers"
)

var (
	pluginOnce sync.Once
	pluginPath string
	pluginErr  error
)

// execPlugin builds testdata/execplugin once per test binary and returns
// its path.
func execPlugin(t *testing.T) string {
	t.Helper()
	pluginOnce.Do(func() {
		dir, err := os.MkdirTemp("", "fleetcache-execplugin-")
		if err != nil {
			pluginErr = err
			return
		}
		pluginPath = filepath.Join(dir, "execplugin")
		out, err := exec.Command("go", "build", "-o", pluginPath, "./testdata/execplugin").CombinedOutput()
		if err != nil {
			pluginErr = fmt.Errorf("build exec plugin: %v\n%s", err, out)
		}
	})
	if pluginErr != nil {
		t.Fatal(pluginErr)
	}
	return pluginPath
}

// pluginState is the files an exec plugin run reads and writes: the
// token it returns and its log, one line per run.
type pluginState struct {
	tokenFile, logFile string
}

func newPluginState(t *testing.T, token string) pluginState {
	dir := t.TempDir()
	p := pluginState{tokenFile: filepath.Join(dir, "token"), logFile: filepath.Join(dir, "log")}
	p.setToken(t, token)
	return p
}

func (p pluginState) setToken(t *testing.T, token string) {
	t.Helper()
	if err := os.WriteFile(p.tokenFile, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
}

// runs returns the lines the plugin logged, one per run.
func (p pluginState) runs() []string {
	data, _ := os.ReadFile(p.logFile)
	return strings.Fields(strings.ReplaceAll(string(data), " ", "_"))
}

// env returns the plugin's environment, tokens expiring after expiresIn.
func (p pluginState) env(expiresIn time.Duration) map[string]string {
	return map[string]string{"TOKEN_FILE": p.tokenFile, "LOG_FILE": p.logFile, "EXPIRES_IN": expiresIn.String()}
}

// unique returns prefix with a suffix of its own, so that a test can run
// again (-count) against clusters that keep the namespaces of earlier runs.
func unique(prefix string) string {
	uniqueN++
	return fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano()%1e9, uniqueN)
}

var uniqueN int

var clusterProfiles = schema.GroupVersionResource{Group: "multicluster.x-k8s.io", Version: "v1alpha1", Resource: "clusterprofiles"}

// installProfileCRD installs testdata/clusterprofile-crd.yaml in the
// cluster of dc, once (it stays for the other tests).
func installProfileCRD(t *testing.T, dc dynamic.Interface) {
	t.Helper()
	data, err := os.ReadFile("testdata/clusterprofile-crd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	crd := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &crd.Object); err != nil {
		t.Fatal(err)
	}
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	if _, err := dc.Resource(crds).Create(t.Context(), crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	testcluster.Eventually(t, 30*time.Second, "the ClusterProfile API to be served", func() (bool, string) {
		_, err := dc.Resource(clusterProfiles).Namespace("default").List(t.Context(), metav1.ListOptions{})
		return err == nil, fmt.Sprint(err)
	})
}

// accessProvider is a ClusterProfile's status.accessProviders entry
// reaching c.
func accessProvider(name string, c *testcluster.Cluster, extension map[string]any) map[string]any {
	cluster := map[string]any{
		"server":                     c.URL(),
		"certificate-authority-data": base64.StdEncoding.EncodeToString(c.AdminConfig().CAData),
	}
	if extension != nil {
		cluster["extensions"] = []any{map[string]any{"name": "client.authentication.k8s.io/exec", "extension": extension}}
	}
	return map[string]any{"name": name, "cluster": cluster}
}

// putProfile creates or replaces a ClusterProfile with labels and status.
func putProfile(t *testing.T, dc dynamic.Interface, ns, name string, labels map[string]string, status map[string]any) {
	t.Helper()
	res := dc.Resource(clusterProfiles).Namespace(ns)
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ClusterProfile",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"displayName": name, "clusterManager": map[string]any{"name": "test"}},
	}}
	u.SetLabels(labels)
	cur, err := res.Get(t.Context(), name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if cur, err = res.Create(t.Context(), u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	case err != nil:
		t.Fatal(err)
	default:
		cur.SetLabels(labels)
		if cur, err = res.Update(t.Context(), cur, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cur.Object["status"] = status
	if _, err := res.UpdateStatus(t.Context(), cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func controlPlane(healthy bool) []any {
	status := "False"
	if healthy {
		status = "True"
	}
	return []any{map[string]any{"type": "ControlPlaneHealthy", "status": status, "reason": "Probe",
		"message": "from the cluster manager", "lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}}
}

// clusterInventory is what the API shows of a cluster's inventory.
type clusterInventory struct {
	Name                string
	Status              string
	Message             *string
	Labels              map[string]string
	Source              *string
	ControlPlaneHealthy *bool
}

func inventoryOf(t *testing.T, addr, name string) (clusterInventory, bool) {
	t.Helper()
	var d struct{ Cluster *clusterInventory }
	if err := gql(addr, fmt.Sprintf(`{ cluster(name: %q) { name status message labels source controlPlaneHealthy } }`, name), &d); err != nil || d.Cluster == nil {
		return clusterInventory{}, false
	}
	return *d.Cluster, true
}

// TestClusterProfilesLive registers clusters from ClusterProfiles in c1
// (the hub), reached through a KEP-5339 exec plugin whose tokens expire,
// and follows the profiles: add, relabel, credentials rotated, a profile
// without a known provider, removal.
func TestClusterProfilesLive(t *testing.T) {
	env := testbed.Env(t)
	c1, c2, c3 := env.Cluster("c1"), env.Cluster("c2"), env.Cluster("c3")
	plugin := execPlugin(t)
	home := filepath.Join(t.TempDir(), "hub")
	if err := env.WriteKubeconfig(home, "admin", c1); err != nil {
		t.Fatal(err)
	}
	dc := testcluster.Dynamic(t, c1.AdminConfig())
	installProfileCRD(t, dc)
	ns := unique("fleet-profiles")
	testcluster.CreateNamespace(t, dc, ns)

	state := newPluginState(t, c2.AdminConfig().BearerToken)
	var envList []any
	for k, v := range state.env(2 * time.Second) {
		envList = append(envList, map[string]any{"name": k, "value": v})
	}
	providers, _ := json.Marshal(map[string]any{"providers": []any{map[string]any{
		"name": "fleet-token",
		"execConfig": map[string]any{
			"apiVersion": "client.authentication.k8s.io/v1", "command": plugin, "env": envList,
			"provideClusterInfo": true, "interactiveMode": "Never",
		},
	}}})
	providersFile := filepath.Join(t.TempDir(), "providers.json")
	if err := os.WriteFile(providersFile, providers, 0o600); err != nil {
		t.Fatal(err)
	}

	putProfile(t, dc, ns, "east", map[string]string{"env": "prod", "x-k8s.io/cluster-manager": "test"}, map[string]any{
		"conditions": controlPlane(true),
		"accessProviders": []any{
			accessProvider("someone-else", c3, nil),
			accessProvider("fleet-token", c2, map[string]any{"audience": "fleetcache-test"}),
		},
	})
	putProfile(t, dc, ns, "west", nil, map[string]any{
		// The deprecated name of accessProviders.
		"credentialProviders": []any{accessProvider("fleet-token", c3, nil)},
	})

	addr := startRun(t, app.Options{
		ClusterProfiles: app.InventorySourceOptions{Enabled: true, Kubeconfig: home, ProvidersFile: providersFile},
		// Short watches: each new watch request needs a current token.
		Informers: informers.Options{Resources: []string{"namespaces", "configmaps"}, WatchTimeout: time.Second},
	})
	waitCluster(t, addr, "east", "east from its profile", status("SYNCED"))
	waitCluster(t, addr, "west", "west from credentialProviders", status("SYNCED"))
	east, _ := inventoryOf(t, addr, "east")
	if east.Labels["env"] != "prod" || east.ControlPlaneHealthy == nil || !*east.ControlPlaneHealthy ||
		east.Source == nil || *east.Source != "ClusterProfile "+ns+"/east" {
		t.Errorf("east's inventory: %+v", east)
	}
	// The plugin got the cluster and its extension (provideClusterInfo).
	if runs := state.runs(); len(runs) == 0 || !strings.Contains(strings.Join(runs, "\n"), "server="+c2.URL()+`_config={"audience":"fleetcache-test"}`) {
		t.Errorf("plugin runs %q: none with east's server and extension", runs)
	}

	// Tokens expire every 2s: the plugin runs again and east stays synced.
	before := len(state.runs())
	testcluster.Eventually(t, 30*time.Second, "expired tokens to be refreshed", func() (bool, string) {
		n := len(state.runs())
		return n >= before+3, fmt.Sprintf("%d runs, %d before", n, before)
	})
	waitCluster(t, addr, "east", "east synced on refreshed tokens", status("SYNCED"))

	// The plugin's identity changes to one without rights: east follows
	// it at the next refresh, and back.
	state.setToken(t, c2.UserConfig("carol").BearerToken)
	waitCluster(t, addr, "east", "east on carol's refreshed token (forbidden)", func(c *clusterState) bool {
		return c != nil && c.Status == "DEGRADED" && c.Message != nil && strings.Contains(*c.Message, "forbidden")
	})
	state.setToken(t, c2.AdminConfig().BearerToken)
	waitCluster(t, addr, "east", "east back on admin's token", status("SYNCED"))

	// Relabel and a control plane turned unhealthy: no restart needed.
	putProfile(t, dc, ns, "east", map[string]string{"env": "staging"}, map[string]any{
		"conditions":      controlPlane(false),
		"accessProviders": []any{accessProvider("fleet-token", c2, map[string]any{"audience": "fleetcache-test"})},
	})
	testcluster.Eventually(t, 30*time.Second, "east relabelled", func() (bool, string) {
		c, _ := inventoryOf(t, addr, "east")
		return c.Labels["env"] == "staging" && c.ControlPlaneHealthy != nil && !*c.ControlPlaneHealthy, fmt.Sprintf("%+v", c)
	})

	// A profile that names no provider of the file: an error on its
	// cluster; the others keep running.
	putProfile(t, dc, ns, "north", map[string]string{"env": "prod", "region": "north"}, map[string]any{"accessProviders": []any{accessProvider("unknown-provider", c3, nil)}})
	waitCluster(t, addr, "north", "north with its error", func(c *clusterState) bool {
		return c != nil && c.Message != nil && strings.Contains(*c.Message,
			"clusterprofile "+ns+"/north: no access provider of the profile (unknown-provider) is in the providers file (fleet-token)")
	})
	// Unusable, it keeps its profile's labels and source: a portal that
	// filters clusters by label sees it.
	testcluster.Eventually(t, 30*time.Second, "north's labels and source", func() (bool, string) {
		c, _ := inventoryOf(t, addr, "north")
		return c.Labels["region"] == "north" && c.Source != nil && *c.Source == "ClusterProfile "+ns+"/north", fmt.Sprintf("%+v", c)
	})
	// The profile moves to another server: west follows.
	putProfile(t, dc, ns, "west", nil, map[string]any{"accessProviders": []any{accessProvider("fleet-token", c2, nil)}})
	testcluster.Eventually(t, 30*time.Second, "west on c2", func() (bool, string) {
		runs := state.runs()
		last := strings.Join(runs, "\n")
		return strings.Count(last, "server="+c2.URL()+"_config=null") > 0, last
	})
	waitCluster(t, addr, "west", "west synced on c2", status("SYNCED"))

	for _, name := range []string{"east", "west", "north"} {
		if err := dc.Resource(clusterProfiles).Namespace(ns).Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitCluster(t, addr, name, "a deleted profile's cluster to go", gone)
	}
}

// TestClusterAPISecretsLive registers Cluster API workload clusters from
// their <cluster>-kubeconfig Secrets in c1 and follows them.
func TestClusterAPISecretsLive(t *testing.T) {
	env := testbed.Env(t)
	c1, c2, c3 := env.Cluster("c1"), env.Cluster("c2"), env.Cluster("c3")
	home := filepath.Join(t.TempDir(), "mgmt")
	if err := env.WriteKubeconfig(home, "admin", c1); err != nil {
		t.Fatal(err)
	}
	kube1 := kubernetes.NewForConfigOrDie(c1.AdminConfig())
	capiA, capiB := unique("capi-a"), unique("capi-b")
	for _, ns := range []string{capiA, capiB} {
		if _, err := kube1.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	kubeconfigOf := func(c *testcluster.Cluster, user string) []byte {
		path := filepath.Join(t.TempDir(), "kc")
		if err := env.WriteKubeconfig(path, user, c); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	put := func(ns, cluster, secretName string, labels map[string]string, data map[string][]byte) {
		t.Helper()
		all := map[string]string{clusters.CAPIClusterNameLabel: cluster}
		for k, v := range labels {
			all[k] = v
		}
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secretName, Labels: all}, Data: data, Type: "cluster.x-k8s.io/secret"}
		secrets := kube1.CoreV1().Secrets(ns)
		if _, err := secrets.Update(t.Context(), s, metav1.UpdateOptions{}); apierrors.IsNotFound(err) {
			_, err = secrets.Create(t.Context(), s, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
		} else if err != nil {
			t.Fatal(err)
		}
	}
	addr := startRun(t, app.Options{ClusterAPI: app.InventorySourceOptions{Enabled: true, Kubeconfig: home}})

	put(capiA, "prod-1", "prod-1-kubeconfig", map[string]string{"env": "prod"}, map[string][]byte{"value": kubeconfigOf(c2, "admin")})
	// The cluster's other Secrets carry the label too, and register nothing.
	put(capiA, "prod-1", "prod-1-ca", nil, map[string][]byte{"tls.crt": []byte("x")})
	put(capiB, "dev-1", "dev-1-kubeconfig", nil, map[string][]byte{"value": kubeconfigOf(c3, "admin")})
	waitCluster(t, addr, "prod-1", "prod-1 from its kubeconfig Secret", status("SYNCED"))
	waitCluster(t, addr, "dev-1", "dev-1 from another namespace", status("SYNCED"))
	if c, _ := inventoryOf(t, addr, "prod-1"); c.Labels["env"] != "prod" || c.Labels[clusters.CAPIClusterNameLabel] != "" {
		t.Errorf("prod-1's labels %v: want env=prod without the marker label", c.Labels)
	}
	if cs, _ := clustersOf(addr); len(cs) != 2 {
		t.Errorf("clusters %v: want prod-1 and dev-1 only", cs)
	}

	// Rotated credentials: Cluster API rewrites the Secret.
	put(capiA, "prod-1", "prod-1-kubeconfig", map[string]string{"env": "prod"}, map[string][]byte{"value": kubeconfigOf(c2, "carol")})
	waitCluster(t, addr, "prod-1", "prod-1 on carol's credentials (forbidden)", func(c *clusterState) bool {
		return c != nil && c.Status == "DEGRADED" && c.Message != nil && strings.Contains(*c.Message, "forbidden")
	})
	put(capiA, "prod-1", "prod-1-kubeconfig", map[string]string{"env": "prod"}, map[string][]byte{"value": kubeconfigOf(c2, "admin")})
	waitCluster(t, addr, "prod-1", "prod-1 back on admin's", status("SYNCED"))

	// A Secret without value: an error on its cluster, the rest run.
	put(capiB, "broken", "broken-kubeconfig", nil, map[string][]byte{"other": []byte("x")})
	waitCluster(t, addr, "broken", "broken with its error", func(c *clusterState) bool {
		return c != nil && c.Message != nil &&
			strings.Contains(*c.Message, "cluster api secret "+capiB+`/broken-kubeconfig: no kubeconfig: data key "value" is missing or empty`)
	})
	if cs, _ := clustersOf(addr); cs["prod-1"].Status != "SYNCED" || cs["dev-1"].Status != "SYNCED" {
		t.Errorf("the others changed with the bad Secret: %+v", cs)
	}

	for _, s := range [][2]string{{capiA, "prod-1-kubeconfig"}, {capiB, "dev-1-kubeconfig"}, {capiB, "broken-kubeconfig"}} {
		if err := kube1.CoreV1().Secrets(s[0]).Delete(t.Context(), s[1], metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"prod-1", "dev-1", "broken"} {
		waitCluster(t, addr, name, "a deleted Secret's cluster to go", gone)
	}
}

// TestArgoCDSecretsLive registers the clusters of Argo CD's cluster
// Secrets in c1 and follows them, including one whose credentials come
// from an exec plugin with expiring tokens.
func TestArgoCDSecretsLive(t *testing.T) {
	env := testbed.Env(t)
	c1, c2, c3 := env.Cluster("c1"), env.Cluster("c2"), env.Cluster("c3")
	plugin := execPlugin(t)
	home := filepath.Join(t.TempDir(), "argocd")
	if err := env.WriteKubeconfig(home, "admin", c1); err != nil {
		t.Fatal(err)
	}
	kube1 := kubernetes.NewForConfigOrDie(c1.AdminConfig())
	ns := unique("argocd")
	if _, err := kube1.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	secrets := kube1.CoreV1().Secrets(ns)
	put := func(secretName string, labels map[string]string, data map[string]string) {
		t.Helper()
		all := map[string]string{clusters.ArgoCDSecretTypeLabel: clusters.ArgoCDSecretTypeCluster}
		for k, v := range labels {
			all[k] = v
		}
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secretName, Labels: all}, Data: map[string][]byte{}}
		for k, v := range data {
			s.Data[k] = []byte(v)
		}
		if _, err := secrets.Update(t.Context(), s, metav1.UpdateOptions{}); apierrors.IsNotFound(err) {
			if _, err = secrets.Create(t.Context(), s, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		} else if err != nil {
			t.Fatal(err)
		}
	}
	tokenConfig := func(c *testcluster.Cluster, user string) string {
		b, _ := json.Marshal(map[string]any{"bearerToken": c.UserConfig(user).BearerToken,
			"tlsClientConfig": map[string]any{"caData": c.AdminConfig().CAData}})
		return string(b)
	}
	state := newPluginState(t, c3.AdminConfig().BearerToken)
	execConfig, _ := json.Marshal(map[string]any{
		"execProviderConfig": map[string]any{"command": plugin, "apiVersion": "client.authentication.k8s.io/v1", "env": state.env(2 * time.Second)},
		"tlsClientConfig":    map[string]any{"caData": c3.AdminConfig().CAData},
	})

	addr := startRun(t, app.Options{
		ArgoCD:    app.InventorySourceOptions{Enabled: true, Namespace: ns, Kubeconfig: home, AllowExecPlugins: true},
		Informers: informers.Options{Resources: []string{"namespaces", "configmaps"}, WatchTimeout: time.Second},
	})
	put("cluster-east", map[string]string{"env": "prod"}, map[string]string{"name": "argo-east", "server": c2.URL(), "config": tokenConfig(c2, "admin"), "project": "default"})
	put("cluster-west", nil, map[string]string{"name": "argo-west", "server": c3.URL(), "config": string(execConfig)})
	waitCluster(t, addr, "argo-east", "argo-east from its bearer token", status("SYNCED"))
	waitCluster(t, addr, "argo-west", "argo-west from its exec plugin", status("SYNCED"))
	if c, _ := inventoryOf(t, addr, "argo-east"); c.Labels["env"] != "prod" || len(c.Labels) != 1 {
		t.Errorf("argo-east's labels %v: want env=prod only", c.Labels)
	}
	before := len(state.runs())
	testcluster.Eventually(t, 30*time.Second, "argo-west's expired tokens to be refreshed", func() (bool, string) {
		n := len(state.runs())
		return n >= before+3, fmt.Sprintf("%d runs, %d before", n, before)
	})
	waitCluster(t, addr, "argo-west", "argo-west synced on refreshed tokens", status("SYNCED"))

	// Rotated token in the Secret.
	put("cluster-east", map[string]string{"env": "prod"}, map[string]string{"name": "argo-east", "server": c2.URL(), "config": tokenConfig(c2, "carol")})
	waitCluster(t, addr, "argo-east", "argo-east on carol's token (forbidden)", func(c *clusterState) bool {
		return c != nil && c.Status == "DEGRADED" && c.Message != nil && strings.Contains(*c.Message, "forbidden")
	})
	put("cluster-east", map[string]string{"env": "prod"}, map[string]string{"name": "argo-east", "server": c2.URL(), "config": tokenConfig(c2, "admin")})
	waitCluster(t, addr, "argo-east", "argo-east back on admin's token", status("SYNCED"))

	// A malformed config, and one with a field fleetcache does not
	// support: errors on their clusters, the rest running.
	put("cluster-bad", nil, map[string]string{"name": "argo-bad", "server": c3.URL(), "config": `{"bearerToken": `})
	put("cluster-aws", nil, map[string]string{"name": "argo-aws", "server": c3.URL(), "config": `{"awsAuthConfig": {"clusterName": "x"}}`})
	waitCluster(t, addr, "argo-bad", "argo-bad with its error", func(c *clusterState) bool {
		return c != nil && c.Message != nil && strings.Contains(*c.Message, "argo cd cluster secret "+ns+"/cluster-bad: config:")
	})
	waitCluster(t, addr, "argo-aws", "argo-aws with its error", func(c *clusterState) bool {
		return c != nil && c.Message != nil && strings.Contains(*c.Message, "awsAuthConfig is not supported")
	})
	if cs, _ := clustersOf(addr); cs["argo-east"].Status != "SYNCED" || cs["argo-west"].Status != "SYNCED" {
		t.Errorf("the others changed with the bad Secrets: %+v", cs)
	}

	for _, name := range []string{"cluster-east", "cluster-west", "cluster-bad", "cluster-aws"} {
		if err := secrets.Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"argo-east", "argo-west", "argo-bad", "argo-aws"} {
		waitCluster(t, addr, name, "a deleted Secret's cluster to go", gone)
	}
}

// TestClusterSelectorLive selects clusters by their labels (an Argo CD
// Secret's, and configured ones) in queries, facets and a subscription over
// WebSocket, and relabels them while the subscription runs: a cluster that
// starts matching brings its objects as ADDED, one that stops takes them
// away as DELETED.
func TestClusterSelectorLive(t *testing.T) {
	env := testbed.Env(t)
	c1, c2, c3 := env.Cluster("c1"), env.Cluster("c2"), env.Cluster("c3")
	home := filepath.Join(t.TempDir(), "argocd")
	if err := env.WriteKubeconfig(home, "admin", c1); err != nil {
		t.Fatal(err)
	}
	argoNS, ns := unique("argocd-selector"), unique("selector-test")
	kube1 := kubernetes.NewForConfigOrDie(c1.AdminConfig())
	if _, err := kube1.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: argoNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	members := map[string]*testcluster.Cluster{"sel-a": c2, "sel-b": c3}
	kubes := map[string]kubernetes.Interface{}
	for name, c := range members {
		kubes[name] = kubernetes.NewForConfigOrDie(c.AdminConfig())
		if _, err := kubes[name].CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	createCM := func(cluster, name string) {
		t.Helper()
		if _, err := kubes[cluster].CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	label := func(cluster, env string) {
		t.Helper()
		c := members[cluster]
		config, _ := json.Marshal(map[string]any{"bearerToken": c.AdminConfig().BearerToken, "tlsClientConfig": map[string]any{"caData": c.AdminConfig().CAData}})
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: cluster, Labels: map[string]string{
			clusters.ArgoCDSecretTypeLabel: clusters.ArgoCDSecretTypeCluster, "env": env,
		}}, Data: map[string][]byte{"name": []byte(cluster), "server": []byte(c.URL()), "config": config}}
		secrets := kube1.CoreV1().Secrets(argoNS)
		if _, err := secrets.Update(t.Context(), s, metav1.UpdateOptions{}); apierrors.IsNotFound(err) {
			if _, err = secrets.Create(t.Context(), s, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		} else if err != nil {
			t.Fatal(err)
		}
	}
	createCM("sel-a", "first-a")
	createCM("sel-b", "first-b")
	label("sel-a", "prod")
	label("sel-b", "dev")
	addr := startRun(t, app.Options{
		ArgoCD:        app.InventorySourceOptions{Enabled: true, Namespace: argoNS, Kubeconfig: home},
		ClusterLabels: map[string]map[string]string{"sel-b": {"region": "eu"}},
	})
	waitCluster(t, addr, "sel-a", "sel-a synced", status("SYNCED"))
	waitCluster(t, addr, "sel-b", "sel-b synced", status("SYNCED"))

	// Queries: resources, clusters and facets by the clusters' labels.
	names := func(selector string) []string {
		var d struct {
			Resources struct {
				Edges []struct {
					Node struct{ Cluster, Name string }
				}
			}
		}
		q := fmt.Sprintf(`{ resources(filter: {clusterSelector: %q, namespaces: [%q], kinds: ["ConfigMap"]}) { edges { node { cluster name } } } }`, selector, ns)
		if err := gql(addr, q, &d); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range d.Resources.Edges {
			out = append(out, e.Node.Cluster+"/"+e.Node.Name)
		}
		return out
	}
	testcluster.Eventually(t, 30*time.Second, "the ConfigMaps in the index", func() (bool, string) {
		got := names("")
		return len(got) == 2, fmt.Sprint(got)
	})
	for selector, want := range map[string][]string{
		"env=prod":          {"sel-a/first-a"},
		"region=eu":         {"sel-b/first-b"}, // configured
		"env=qa":            nil,
		"env in (prod,dev)": {"sel-a/first-a", "sel-b/first-b"},
	} {
		if got := names(selector); !slices.Equal(got, want) {
			t.Errorf("clusterSelector %q: %v, want %v", selector, got, want)
		}
	}
	var cs struct{ Clusters []struct{ Name string } }
	if err := gql(addr, `{ clusters(selector: "region=eu") { name } }`, &cs); err != nil || len(cs.Clusters) != 1 || cs.Clusters[0].Name != "sel-b" {
		t.Errorf("clusters(selector: region=eu) = %+v, %v; want sel-b", cs.Clusters, err)
	}
	var fs struct {
		Facets []struct {
			Value string
			Count int
		}
	}
	if err := gql(addr, fmt.Sprintf(`{ facets(by: CLUSTER_LABEL, labelKey: "env", filter: {namespaces: [%q], kinds: ["ConfigMap"]}) { value count } }`, ns), &fs); err != nil {
		t.Fatal(err)
	}
	if want := []struct {
		Value string
		Count int
	}{{"dev", 1}, {"prod", 1}}; !slices.Equal(fs.Facets, want) {
		t.Errorf("facets by CLUSTER_LABEL env: %+v, want %+v", fs.Facets, want)
	}

	// A subscription from a listed revision, so that nothing is missed.
	var rev struct{ Resources struct{ Revision string } }
	if err := gql(addr, `{ resources(first: 0) { revision } }`, &rev); err != nil {
		t.Fatal(err)
	}
	sub := wsSubscribe(t, addr, "", `subscription($f: ResourceFilter, $since: String) {
		resourceEvents(filter: $f, since: $since) { type resource { cluster namespace kind name } } }`,
		map[string]any{"since": rev.Resources.Revision, "f": map[string]any{"clusterSelector": "env=prod", "namespaces": []any{ns}}})
	cm := func(cluster, name string) obj { return obj{cluster, ns, "ConfigMap", name} }
	createCM("sel-b", "live-b") // not selected
	createCM("sel-a", "live-a")
	if e := sub.next(t); e != (event{"ADDED", cm("sel-a", "live-a")}) {
		t.Fatalf("first event %v, want ADDED live-a", e)
	}

	// sel-b starts matching: its objects arrive as ADDED.
	label("sel-b", "prod")
	var got []event
	for range 2 {
		got = append(got, sub.next(t))
	}
	if want := added(cm("sel-b", "first-b"), cm("sel-b", "live-b")); !slices.Equal(got, want) {
		t.Errorf("sel-b relabelled into the selector: %v, want %v", got, want)
	}
	// sel-a stops matching: its objects go as DELETED.
	label("sel-a", "dev")
	got = nil
	for range 2 {
		got = append(got, sub.next(t))
	}
	if want := deleted(cm("sel-a", "first-a"), cm("sel-a", "live-a")); !slices.Equal(got, want) {
		t.Errorf("sel-a relabelled out of the selector: %v, want %v", got, want)
	}
	// Afterwards only sel-b's changes come: sel-a's reach the index first.
	createCM("sel-a", "after-a")
	testcluster.Eventually(t, 30*time.Second, "after-a in the index", func() (bool, string) {
		got := names("")
		return slices.Contains(got, "sel-a/after-a"), fmt.Sprint(got)
	})
	createCM("sel-b", "after-b")
	if e := sub.next(t); e != (event{"ADDED", cm("sel-b", "after-b")}) {
		t.Errorf("after the relabels: %v, want ADDED after-b", e)
	}
}

// TestKubeconfigExecPluginRefresh registers a cluster from a kubeconfig
// file whose user is an exec credential plugin (as EKS, GKE and AKS write
// them) with tokens that expire every 2s: the plugin runs again as they
// expire, the cluster stays synced, and a plugin that starts returning
// another identity takes effect at its next run.
func TestKubeconfigExecPluginRefresh(t *testing.T) {
	env := testbed.Env(t)
	c2 := env.Cluster("c2")
	plugin := execPlugin(t)
	state := newPluginState(t, c2.AdminConfig().BearerToken)
	kc := clientcmdapi.NewConfig()
	kc.Clusters["eks-like"] = &clientcmdapi.Cluster{Server: c2.URL(), CertificateAuthorityData: c2.AdminConfig().CAData}
	exec := &clientcmdapi.ExecConfig{Command: plugin, APIVersion: "client.authentication.k8s.io/v1", InteractiveMode: clientcmdapi.NeverExecInteractiveMode}
	for k, v := range state.env(2 * time.Second) {
		exec.Env = append(exec.Env, clientcmdapi.ExecEnvVar{Name: k, Value: v})
	}
	kc.AuthInfos["eks-like"] = &clientcmdapi.AuthInfo{Exec: exec}
	kc.Contexts["eks-like"] = &clientcmdapi.Context{Cluster: "eks-like", AuthInfo: "eks-like"}
	dir := t.TempDir()
	if err := clientcmd.WriteToFile(*kc, filepath.Join(dir, "config")); err != nil {
		t.Fatal(err)
	}
	addr := startRun(t, app.Options{
		KubeconfigDir: dir, DirInterval: 100 * time.Millisecond,
		ClusterLabels: map[string]map[string]string{"eks-like": {"cloud": "aws"}},
		Informers:     informers.Options{Resources: []string{"namespaces", "configmaps"}, WatchTimeout: time.Second},
	})
	waitCluster(t, addr, "eks-like", "the exec-plugin cluster synced", status("SYNCED"))
	if c, _ := inventoryOf(t, addr, "eks-like"); c.Labels["cloud"] != "aws" {
		t.Errorf("labels %v: want the configured cloud=aws", c.Labels)
	}
	before := len(state.runs())
	testcluster.Eventually(t, 30*time.Second, "expired tokens to be refreshed", func() (bool, string) {
		n := len(state.runs())
		return n >= before+3, fmt.Sprintf("%d runs, %d before", n, before)
	})
	waitCluster(t, addr, "eks-like", "synced on refreshed tokens", status("SYNCED"))
	state.setToken(t, c2.UserConfig("carol").BearerToken)
	waitCluster(t, addr, "eks-like", "carol's refreshed token (forbidden)", func(c *clusterState) bool {
		return c != nil && c.Status == "DEGRADED" && c.Message != nil && strings.Contains(*c.Message, "forbidden")
	})
	state.setToken(t, c2.AdminConfig().BearerToken)
	waitCluster(t, addr, "eks-like", "back on admin's token", status("SYNCED"))
}
