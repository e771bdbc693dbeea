package kubeapi_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/fleetcache/fleetcache/internal/testcluster"
)

// TestFleetList: kubectl get across the fleet's API prints every cluster's
// rows, as each member prints them, with a CLUSTER column first; objects are
// annotated with their cluster; a caller denied in one member sees the
// others, with a warning naming it.
func TestFleetList(t *testing.T) {
	f := startFleet(t, kubeapiOptions())
	const ns = "fleet-list"
	for c, names := range map[string][]string{"c1": {"a", "b"}, "c2": {"b", "c", "d"}} {
		if _, err := f.kubectl(t, "--context", c, "create", "namespace", ns); err != nil {
			t.Fatal(err)
		}
		for _, name := range names {
			if _, err := f.kubectl(t, "--context", c, "create", "configmap", name, "-n", ns, "--from-literal=k="+c); err != nil {
				t.Fatal(err)
			}
		}
	}
	// want is each member's rows, its name first.
	want := func(k *fleet, clusters ...string) string {
		var b strings.Builder
		for i, c := range clusters {
			out, err := k.kubectl(t, "--context", c, "get", "cm", "-n", ns, "-l", "!x")
			if err != nil {
				t.Fatal(err)
			}
			for j, line := range strings.Split(strings.TrimSpace(withoutAge(out)), "\n") {
				switch {
				case j == 0 && i == 0:
					b.WriteString("CLUSTER | " + line + "\n")
				case j > 0:
					b.WriteString(c + " | " + line + "\n")
				}
			}
		}
		return b.String()
	}
	expected := want(f, "c1", "c2")
	for _, chunk := range []string{"500", "1"} {
		testcluster.Eventually(t, 30*time.Second, "the fleet's rows", func() (bool, string) {
			got, err := f.kubectl(t, "--context", "fleet", "get", "cm", "-n", ns, "-l", "!x", "--chunk-size", chunk)
			got = withoutAge(got)
			return err == nil && got == expected, fmt.Sprint(err, cmp.Diff(expected, got))
		})
	}

	out, err := f.kubectl(t, "--context", "fleet", "get", "cm", "-n", ns, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Items []struct {
			Metadata struct {
				Name        string
				Annotations map[string]string
			}
			Data map[string]string
		}
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range list.Items {
		if c := it.Metadata.Annotations["fleetcache.io/cluster"]; c != it.Data["k"] {
			t.Errorf("%s annotated with cluster %q, from %q", it.Metadata.Name, c, it.Data["k"])
		}
		got = append(got, it.Data["k"]+"/"+it.Metadata.Name)
	}
	if diff := cmp.Diff([]string{"c1/a", "c1/b", "c2/b", "c2/c", "c2/d"}, got); diff != "" {
		t.Errorf("-o json (-want +got):\n%s", diff)
	}

	// carol may list ConfigMaps in the namespace of c2 only.
	if err := f.env.Cluster("c2").Grant(t.Context(), "carol", ns, rbacv1.PolicyRule{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}); err != nil {
		t.Fatal(err)
	}
	carol := f.as(t, "carol")
	stdout, stderr, err := carol.kubectlStderr(t, "--context", "fleet", "get", "cm", "-n", ns, "-l", "!x")
	if err != nil {
		t.Fatal(err)
	}
	if w := want(f, "c2"); withoutAge(stdout) != w {
		t.Errorf("carol's rows:\n%s", cmp.Diff(w, withoutAge(stdout)))
	}
	if !strings.Contains(stderr, "fleetcache: cluster c1 left out: forbidden") {
		t.Errorf("carol's warnings: %q", stderr)
	}
	if _, err := carol.kubectl(t, "--context", "fleet", "get", "pods", "-n", ns); err == nil || !strings.Contains(err.Error(), `(Forbidden): pods is forbidden: User "carol" cannot list resource "pods" in API group "" in any cluster`) {
		t.Errorf("carol's Pods: %v", err)
	}
}
