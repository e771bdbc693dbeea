package api_test

import (
	"strings"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetcache/fleetcache/internal/testcluster"
)

// TestChangesOnRealClusters checks the changes query, and kubectl fleet
// changes, against what the test did to two real API servers: creates,
// an update, a label change that takes an object out of a filter, a
// delete, then the removal of one cluster from the fleet, whose objects
// leave as DELETED. Each change carries the resourceVersion the API
// server gave it.
func TestChangesOnRealClusters(t *testing.T) {
	env := testbed.Env(t)
	ns := freshNamespace("changes")
	f := startFleet(t, "configmaps", "namespaces")
	f.waitSynced(t)
	var start struct{ Resources struct{ Revision string } }
	f.mustQuery(t, `{ resources(first: 0) { revision } }`, nil, &start)

	// What the test does, per cluster, as the changes of the filter
	// {namespaces: [ns], kinds: [ConfigMap], labelSelector: "app=web"}
	// must show it: "TYPE name resourceVersion" ("" where the API server
	// does not say: the version a delete leaves).
	want := map[string][]string{}
	cms := gvr("", "v1", "configmaps")
	two := env.Clusters()[:2]
	for _, c := range two {
		d := dyn(t, c)
		createNamespace(t, d, ns)
		a := create(t, d, cms, configMap(ns, "a", map[string]any{"app": "web"}, map[string]any{"k": "1"}))
		b := create(t, d, cms, configMap(ns, "b", map[string]any{"app": "web"}, nil))
		create(t, d, cms, configMap(ns, "other", map[string]any{"app": "db"}, nil))
		a.Object["data"] = map[string]any{"k": "2"}
		a2, err := d.Resource(cms).Namespace(ns).Update(t.Context(), a, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		b.SetLabels(map[string]string{"app": "db"})
		b2, err := d.Resource(cms).Namespace(ns).Update(t.Context(), b, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Resource(cms).Namespace(ns).Delete(t.Context(), "a", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		c3 := create(t, d, cms, configMap(ns, "c", map[string]any{"app": "web"}, nil))
		want[c.Name()] = []string{
			"ADDED a " + a.GetResourceVersion(), "ADDED b " + b.GetResourceVersion(), "MODIFIED a " + a2.GetResourceVersion(),
			"DELETED b " + b2.GetResourceVersion(), "DELETED a", "ADDED c " + c3.GetResourceVersion(),
		}
	}

	const q = `query($f: ResourceFilter, $since: String, $after: String) {
  changes(filter: $f, since: $since, first: 4, after: $after) {
    edges { type time resource { cluster name resourceVersion } }
    pageInfo { hasNextPage endCursor }
  }
}`
	filter := map[string]any{"namespaces": []any{ns}, "kinds": []any{"ConfigMap"}, "labelSelector": "app=web"}
	// read returns the changes since since, by cluster, a page of 4 at a
	// time (so that paging is crossed), and checks their times.
	read := func(since string) map[string][]string {
		got := map[string][]string{}
		vars := map[string]any{"f": filter, "since": since}
		for {
			var page struct {
				Changes struct {
					Edges []struct {
						Type     string
						Time     time.Time
						Resource struct{ Cluster, Name, ResourceVersion string }
					}
					PageInfo struct {
						HasNextPage bool
						EndCursor   string
					}
				}
			}
			f.mustQuery(t, q, vars, &page)
			for _, e := range page.Changes.Edges {
				line := e.Type + " " + e.Resource.Name
				if e.Type != "DELETED" || e.Resource.Name == "b" {
					line += " " + e.Resource.ResourceVersion
				}
				got[e.Resource.Cluster] = append(got[e.Resource.Cluster], line)
				if time.Since(e.Time) > 5*time.Minute || time.Until(e.Time) > time.Second {
					t.Errorf("change %s of %s at %s: not a time of this test", line, e.Resource.Cluster, e.Time)
				}
			}
			if !page.Changes.PageInfo.HasNextPage {
				return got
			}
			vars["after"] = page.Changes.PageInfo.EndCursor
		}
	}
	testcluster.Eventually(t, 30*time.Second, "the changes of both clusters", func() (bool, string) {
		got := read(start.Resources.Revision)
		return gocmp.Equal(want, got), gocmp.Diff(want, got)
	})
	if diff := gocmp.Diff(want, read("1h")); diff != "" {
		t.Errorf("since 1h (-want +got):\n%s", diff)
	}

	// kubectl fleet changes prints them, oldest first.
	code, out, errOut := kubectlFleet(t.Context(), "changes", "configmaps", "-n", ns, "-l", "app=web", "--since", "10m", "--server", f.serverURL())
	if code != 0 {
		t.Fatalf("kubectl fleet changes: exit %d: %s", code, errOut)
	}
	var printed []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		fs := strings.Fields(l)
		printed = append(printed, fs[1]+" "+fs[2]+" "+fs[3])
	}
	for _, c := range two {
		var cl []string
		for _, p := range printed {
			if strings.HasPrefix(p, c.Name()+" ") {
				cl = append(cl, p)
			}
		}
		var w []string
		for _, line := range want[c.Name()] {
			fs := strings.Fields(line)
			w = append(w, c.Name()+" "+fs[0]+" configmap/"+fs[1])
		}
		if diff := gocmp.Diff(w, cl); diff != "" {
			t.Errorf("kubectl fleet changes of %s (-want +got):\n%s\n%s", c.Name(), diff, out)
		}
	}

	// The second cluster leaves the fleet: its objects leave the cache,
	// and c, the one that matched, is DELETED then.
	removed := two[1].Name()
	if err := f.Registry.Remove(removed); err != nil {
		t.Fatal(err)
	}
	want[removed] = append(want[removed], "DELETED c")
	testcluster.Eventually(t, 30*time.Second, "the removed cluster's objects DELETED", func() (bool, string) {
		got := read(start.Resources.Revision)
		return gocmp.Equal(want, got), gocmp.Diff(want, got)
	})
}
