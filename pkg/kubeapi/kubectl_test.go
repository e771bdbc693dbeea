package kubeapi_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetcache/fleetcache/internal/testcluster"
)

// widgetsCRD is a custom resource with a short name, a category and printer
// columns, one of them wide.
const widgetsCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList, shortNames: [wd], categories: [fleet]}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              color: {type: string}
              size: {type: integer}
    additionalPrinterColumns:
    - {name: Color, type: string, jsonPath: .spec.color}
    - {name: Size, type: integer, jsonPath: .spec.size}
    - {name: Owner, type: string, jsonPath: .metadata.labels.owner, priority: 1}
`

// installWidgets creates the Widget CRD in c, once, and waits until it is
// established.
func installWidgets(t *testing.T, c *testcluster.Cluster) {
	t.Helper()
	f := &fleet{env: testbed.Env(t), kubeconfig: filepath.Join(t.TempDir(), "kubeconfig")}
	if err := f.env.WriteKubeconfig(f.kubeconfig, "admin", c); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "crd.yaml")
	if err := os.WriteFile(file, []byte(widgetsCRD), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := f.kubectl(t, "apply", "--server-side", "-f", file); err != nil {
		t.Fatal(err)
	}
	if _, err := f.kubectl(t, "wait", "--for", "condition=established", "--timeout", "30s", "crd/widgets.example.com"); err != nil {
		t.Fatal(err)
	}
}

// seed is what TestKubectlGet creates in its namespace.
func seed(ns string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n", ns)
	for i := range 12 {
		tier := []string{"a", "b", "c"}[i%3]
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%02d, namespace: %s, labels: {tier: %s}}\ndata: {k: v%d}\n", i, ns, tier, i)
	}
	for i := range 3 {
		node := ""
		if i == 0 {
			node = "nodeName: node-1\n  "
		}
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: Pod\nmetadata: {name: pod-%d, namespace: %s, labels: {app: web, idx: \"%d\"}}\nspec:\n  %scontainers: [{name: c, image: nginx:1.27}]\n", i, ns, i, node)
	}
	fmt.Fprintf(&b, "---\napiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: %s}\nspec: {selector: {app: web}, ports: [{port: 80}]}\n", ns)
	fmt.Fprintf(&b, "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: %s}\nspec: {replicas: 2, selector: {matchLabels: {app: web}}, template: {metadata: {labels: {app: web}}, spec: {containers: [{name: c, image: nginx:1.27}]}}}\n", ns)
	for i, color := range []string{"blue", "red"} {
		fmt.Fprintf(&b, "---\napiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w-%d, namespace: %s, labels: {owner: team-%d}}\nspec: {color: %s, size: %d}\n", i, ns, i, color, i+3)
	}
	return b.String()
}

// TestKubectlGet: kubectl against /clusters/c1 prints what it prints against
// c1 itself, AGE aside, for get in every output and with every selector and
// paging, api-resources and explain.
func TestKubectlGet(t *testing.T) {
	f := startFleet(t, kubeapiOptions())
	const ns = "kubectl-get"
	file := filepath.Join(t.TempDir(), "seed.yaml")
	if err := os.WriteFile(file, []byte(seed(ns)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := f.kubectl(t, "--context", "c1", "create", "-f", file); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name  string
		args  []string
		table bool
	}{
		{"pods", []string{"get", "pods", "-n", ns}, true},
		{"pods wide", []string{"get", "pods", "-n", ns, "-o", "wide"}, true},
		{"pods all namespaces", []string{"get", "pods", "-A", "-l", "app=web"}, true},
		{"label selector", []string{"get", "configmaps", "-n", ns, "-l", "tier in (a,c)"}, true},
		{"label selector wide", []string{"get", "pods", "-n", ns, "-l", "idx!=1", "-o", "wide"}, true},
		{"field selector", []string{"get", "pods", "-n", ns, "--field-selector", "spec.nodeName=node-1"}, true},
		{"field selector not", []string{"get", "pods", "-n", ns, "--field-selector", "spec.nodeName!=node-1,metadata.name!=pod-2"}, true},
		{"field selector phase", []string{"get", "pods", "-n", ns, "--field-selector", "status.phase=Pending"}, true},
		{"chunks", []string{"get", "configmaps", "-n", ns, "--chunk-size=5"}, true},
		{"one", []string{"get", "pod", "pod-0", "-n", ns}, true},
		{"yaml", []string{"get", "pod", "pod-0", "-n", ns, "-o", "yaml"}, false},
		{"yaml list", []string{"get", "configmaps", "-n", ns, "-l", "tier=b", "-o", "yaml"}, false},
		{"json chunks", []string{"get", "configmaps", "-n", ns, "-o", "json", "--chunk-size=5"}, false},
		{"name", []string{"get", "configmaps,pods", "-n", ns, "-o", "name"}, false},
		{"deployments", []string{"get", "deploy", "-n", ns, "-o", "wide"}, true},
		{"services", []string{"get", "svc", "-n", ns, "-o", "wide"}, true},
		{"custom resources", []string{"get", "widgets", "-n", ns, "-o", "wide"}, true},
		{"short name", []string{"get", "wd", "-n", ns}, true},
		{"category", []string{"get", "fleet", "-n", ns}, true},
		{"namespace", []string{"get", "namespace", ns}, true},
		{"custom columns", []string{"get", "pods", "-n", ns, "-o", "custom-columns=NAME:.metadata.name,IMAGE:.spec.containers[0].image,NODE:.spec.nodeName"}, false},
		{"explain", []string{"explain", "pods.spec.containers.image"}, false},
		{"explain recursive", []string{"explain", "widgets.spec", "--recursive"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			want, err := f.kubectl(t, append([]string{"--context", "c1"}, tt.args...)...)
			if err != nil {
				t.Fatal(err)
			}
			if strings.TrimSpace(want) == "" {
				t.Fatal("the member printed nothing: the comparison would prove nothing")
			}
			if tt.table {
				want = withoutAge(want)
			}
			var got string
			testcluster.Eventually(t, 30*time.Second, "fleetcache's output to be the member's", func() (bool, string) {
				got, err = f.kubectl(t, append([]string{"--context", "fleet-c1"}, tt.args...)...)
				if err != nil {
					return false, err.Error()
				}
				if tt.table {
					got = withoutAge(got)
				}
				return got == want, cmp.Diff(want, got)
			})
		})
	}
}

// TestKubectlAPIResources: kubectl api-resources through fleetcache lists
// the cached types, each as the member lists it.
func TestKubectlAPIResources(t *testing.T) {
	f := startFleet(t, kubeapiOptions())
	rows := func(context string) []string {
		out, err := f.kubectl(t, "--context", context, "api-resources")
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimSpace(withoutAge(out)), "\n")
	}
	member, fleet := rows("c1"), rows("fleet-c1")
	if len(fleet) != 1+len(cachedTypes) {
		t.Errorf("fleetcache lists %d types, want the %d cached: %q", len(fleet)-1, len(cachedTypes), fleet)
	}
	for _, row := range fleet {
		if !slices.Contains(member, row) {
			t.Errorf("fleetcache lists %q, which the member does not", row)
		}
	}
}

// kubeapiOptions are the tests' Options: short waits.
func kubeapiOptions() kubeapiOpts {
	return kubeapiOpts{WaitTimeout: 3 * time.Second, BookmarkInterval: time.Second}
}
