package mcp_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/fleetcache/fleetcache/internal/app"
	"github.com/fleetcache/fleetcache/internal/apptest"
	"github.com/fleetcache/fleetcache/internal/nodetest"
	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
	"github.com/fleetcache/fleetcache/pkg/index/views"
)

// The namespaces of the seeded objects: alice may list those of nsA.
const (
	nsA = "mcp-team-a"
	nsB = "mcp-team-b"
)

// cachedResources are the types the aggregator caches.
var cachedResources = []string{"namespaces", "configmaps", "pods", "deployments.apps"}

// fleet is the aggregator over the test clusters, serving /mcp on
// 127.0.0.1.
type fleet struct {
	agg *app.Aggregator
	url string // of /mcp
}

// seedOnce seeds the clusters for every test of the package.
var seedOnce sync.Once

// seed creates, in each cluster, the namespaces nsA and nsB, each with two
// ConfigMaps and a Deployment web whose two Pods it owns (no controller
// runs: the test makes them, and they stay Pending); c2's nsA also runs a
// Deployment api with one Pod. alice may list ConfigMaps, Pods and
// Deployments in nsA of both clusters.
func seed(t *testing.T) {
	t.Helper()
	seedOnce.Do(func() {
		env := testbed.Env(t)
		ctx := t.Context()
		for _, c := range env.Clusters() {
			kube := kubernetes.NewForConfigOrDie(c.AdminConfig())
			for _, ns := range []string{nsA, nsB} {
				if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
					t.Fatal(err)
				}
				for i := range 2 {
					cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cfg-%d", i), Labels: map[string]string{"app": "web"}}, Data: map[string]string{"color": "blue"}}
					if _, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
						t.Fatal(err)
					}
				}
				workload(t, kube, ns, "web", 2)
				if c.Name() == "c2" && ns == nsA {
					workload(t, kube, ns, "api", 1)
				}
			}
			rule := rbacv1.PolicyRule{Verbs: []string{"list", "watch"}, APIGroups: []string{"", "apps"}, Resources: []string{"configmaps", "pods", "deployments"}}
			if err := c.Grant(ctx, "alice", nsA, rule); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// workload creates a Deployment and the Pods it owns.
func workload(t *testing.T, kube kubernetes.Interface, ns, name string, pods int) {
	t.Helper()
	labels := map[string]string{"app": name}
	spec := corev1.PodSpec{Containers: []corev1.Container{{Name: name, Image: "registry.example/" + name + ":1.0"}}}
	replicas := int32(pods)
	d, err := kube.AppsV1().Deployments(ns).Create(t.Context(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owner := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name, UID: d.UID}
	for i := range pods {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, i), Labels: labels, OwnerReferences: []metav1.OwnerReference{owner}}, Spec: spec}
		if _, err := kube.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// startFleet runs an aggregator with auth over the seeded test clusters
// and waits until it holds every seeded object.
func startFleet(t *testing.T, auth app.AuthOptions) *fleet {
	t.Helper()
	seed(t)
	a := apptest.Start(t, testbed.Env(t), app.Options{Informers: apptest.Informers(cachedResources...), Auth: auth})
	f := &fleet{agg: a.Aggregator, url: a.URL + "/mcp"}
	want := len(oracle(t, nil))
	testcluster.Eventually(t, 60*time.Second, "every seeded object cached", func() (bool, string) {
		n := views.Of(a.Index).CountUnion([]planner.Filter{{Namespaces: []string{nsA, nsB}, Kinds: []string{"ConfigMap", "Pod", "Deployment.apps"}}})
		return n == want, fmt.Sprintf("%d of %d", n, want)
	})
	return f
}

// object is one object of the truth or of an answer:
// cluster/namespace/kind/name.
type object = string

// oracle lists the seeded namespaces' ConfigMaps, Pods and Deployments
// from the API servers, as admin, keeping those that keep returns true
// for (all with nil).
func oracle(t *testing.T, keep func(o object) bool) []object {
	t.Helper()
	var out []object
	for _, c := range testbed.Env(t).Clusters() {
		kube := kubernetes.NewForConfigOrDie(c.AdminConfig())
		for _, ns := range []string{nsA, nsB} {
			add := func(kind, name string) {
				o := c.Name() + "/" + ns + "/" + kind + "/" + name
				if keep == nil || keep(o) {
					out = append(out, o)
				}
			}
			cms, err := kube.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range cms.Items {
				add("ConfigMap", o.Name)
			}
			pods, err := kube.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range pods.Items {
				add("Pod", o.Name)
			}
			ds, err := kube.AppsV1().Deployments(ns).List(t.Context(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range ds.Items {
				add("Deployment.apps", o.Name)
			}
		}
	}
	return out
}

// token returns user's bearer token, which c1 reviews.
func token(t *testing.T, user string) string {
	return testbed.Env(t).Cluster("c1").UserConfig(user).BearerToken
}

// inspectorPackage is the MCP Inspector's CLI, pinned.
const inspectorPackage = "@modelcontextprotocol/inspector-cli@1.0.3"

// inspect runs the Inspector's CLI against f's /mcp as the user of tok
// (none when empty) and decodes the JSON it prints into out.
func (f *fleet) inspect(t *testing.T, dir, tok string, out any, args ...string) {
	t.Helper()
	cli := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "inspector-cli", "build", "index.js")
	all := []string{f.url, "--transport", "http"}
	if tok != "" {
		all = append(all, "--header", "Authorization: Bearer "+tok)
	}
	// The CLI reads its own package.json as "../package.json" when that
	// exists relative to its working directory, else as the package.json
	// of an enclosing @modelcontextprotocol/inspector: it runs in
	// node_modules, below the installation's package.json. (It imports
	// ES modules: NODE_PATH, which Run sets from the directory, plays no
	// part.)
	stdout := nodetest.Run(t, filepath.Join(dir, "node_modules"), cli, append(all, args...)...)
	// The CLI may print a notice before the JSON.
	text := string(stdout)
	if i := strings.IndexAny(text, "{["); i > 0 {
		text = text[i:]
	}
	if err := json.Unmarshal([]byte(text), out); err != nil {
		t.Fatalf("inspector %s: decode %q: %v", strings.Join(args, " "), stdout, err)
	}
}
