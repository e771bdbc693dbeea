package kubeapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/inventory"
	"github.com/fleetcache/fleetcache/pkg/kubeapi"
)

// TestFleetWatch: kubectl get -w on the fleet's API prints every cluster's
// changes with their cluster; a client-go informer over /fleet syncs,
// follows changes in every cluster, resumes its watch from the fleet's
// resourceVersion after its connection is cut (no new list), and sees
// each object annotated with its cluster. ?clusterSelector= narrows lists
// and watches to the clusters whose labels match; get finds an object in
// the first cluster that has it.
func TestFleetWatch(t *testing.T) {
	f := startFleet(t, kubeapiOptions())
	const ns = "fleet-watch"
	objs := newFleetObjects(t, f, ns)
	objs.put("c1", "a", "1")
	objs.put("c2", "b", "1")
	testcluster.Eventually(t, 30*time.Second, "the ConfigMaps cached", func() (bool, string) {
		out, err := f.kubectl(t, "--context", "fleet", "get", "cm", "-n", ns, "-l", "!x", "-o", "name")
		return err == nil && strings.Count(out, "\n") == 2, fmt.Sprint(out, err)
	})

	t.Run("kubectl", func(t *testing.T) {
		out := f.startKubectl(t, "--context", "fleet", "get", "cm", "-n", ns, "-l", "!x", "-w", "--output-watch-events")
		testcluster.Eventually(t, 30*time.Second, "the list printed", func() (bool, string) {
			s := out.String()
			return strings.Contains(s, "c1 ") && strings.Contains(s, "c2 "), s
		})
		objs.put("c1", "c", "1")
		objs.put("c2", "b", "2")
		objs.remove("c1", "a")
		want := []*regexp.Regexp{
			regexp.MustCompile(`(?m)^EVENT\s+CLUSTER\s+NAME\s+DATA\s+AGE$`),
			regexp.MustCompile(`(?m)^ADDED\s+c1\s+a\s+1\s`),
			regexp.MustCompile(`(?m)^ADDED\s+c2\s+b\s+1\s`),
			regexp.MustCompile(`(?m)^ADDED\s+c1\s+c\s+1\s`),
			regexp.MustCompile(`(?m)^MODIFIED\s+c2\s+b\s+1\s`),
			regexp.MustCompile(`(?m)^DELETED\s+c1\s+a\s+1\s`),
		}
		testcluster.Eventually(t, 30*time.Second, "every change printed with its cluster", func() (bool, string) {
			s := out.String()
			for _, re := range want {
				if !re.MatchString(s) {
					return false, fmt.Sprintf("no line matches %s in:\n%s", re, s)
				}
			}
			return true, ""
		})
	})

	t.Run("informer", func(t *testing.T) {
		inf := f.startInformer(t, "/fleet", ns)
		converged := func(what string) { t.Helper(); inf.converge(t, what, objs.members) }
		converged("the informer synced")
		objs.put("c1", "d", "1")
		objs.put("c2", "e", "1")
		objs.put("c2", "b", "3")
		objs.remove("c2", "e")
		converged("the informer followed changes in both clusters")

		inf.resumesAfterCut(t, f, "/fleet/", objs.members, func() {
			objs.put("c2", "f", "1")
			objs.put("c1", "d", "2")
		})
	})

	t.Run("clusterSelector and get", func(t *testing.T) {
		f.agg.Inventory.Set(map[string]inventory.Info{"c1": {Labels: map[string]string{"env": "prod"}}, "c2": {Labels: map[string]string{"env": "dev"}}})
		c := f.http(t)
		base := kubeapi.FleetPrefix + "api/v1/namespaces/" + ns + "/configmaps"
		clustersOf := func(body []byte) []string {
			var l struct {
				Items []struct{ Metadata metav1.ObjectMeta }
			}
			if err := json.Unmarshal(body, &l); err != nil {
				t.Fatalf("%s: %v", body, err)
			}
			var out []string
			for _, it := range l.Items {
				if it.Metadata.Name != "kube-root-ca.crt" {
					out = append(out, it.Metadata.Annotations[kubeapi.ClusterAnnotation]+"/"+it.Metadata.Name)
				}
			}
			return out
		}
		for _, tt := range []struct {
			selector string
			want     []string
		}{
			{"env=prod", []string{"c1/c", "c1/d"}},
			{"env!=prod", []string{"c2/b", "c2/f"}},
			{"env=test", nil},
		} {
			status, _, body := c.get(t, base+"?clusterSelector="+url.QueryEscape(tt.selector), "")
			if got := clustersOf(body); status != http.StatusOK || !cmp.Equal(got, tt.want) {
				t.Errorf("list with clusterSelector %s: %d %v, want %v", tt.selector, status, got, tt.want)
			}
		}
		if status, _, body := c.get(t, base+"?clusterSelector=env%3D%3D%3D", ""); status != http.StatusBadRequest {
			t.Errorf("a bad selector: %d %s", status, body)
		}

		// A watch of the clusters labelled env=dev sees c2's changes only.
		res := c.do(t, http.MethodGet, base+"?watch=true&clusterSelector=env%3Ddev", "")
		events := json.NewDecoder(res.Body)
		objs.put("c1", "g", "1")
		objs.put("c2", "g", "1")
		var seen []string
		for !slices.Contains(seen, "ADDED c2/g") {
			var e struct {
				Type   string
				Object struct{ Metadata metav1.ObjectMeta }
			}
			if err := events.Decode(&e); err != nil {
				t.Fatalf("the watch ended after %v: %v", seen, err)
			}
			seen = append(seen, e.Type+" "+e.Object.Metadata.Annotations[kubeapi.ClusterAnnotation]+"/"+e.Object.Metadata.Name)
		}
		if slices.ContainsFunc(seen, func(s string) bool { return strings.Contains(s, " c1/") }) {
			t.Errorf("the watch of env=dev saw c1's objects: %v", seen)
		}

		// get: the first cluster that has the name, the others warned.
		testcluster.Eventually(t, 30*time.Second, "g cached in both clusters", func() (bool, string) {
			res := c.do(t, http.MethodGet, base+"/g", "")
			return res.StatusCode == http.StatusOK && strings.Contains(res.Header.Get("Warning"), "also in cluster c2"), fmt.Sprint(res.Status, res.Header)
		})
		out, err := f.kubectl(t, "--context", "fleet", "get", "cm", "g", "-n", ns)
		if err != nil || !regexp.MustCompile(`(?m)^c1\s+g\s+1\s`).MatchString(out) {
			t.Errorf("kubectl get cm g on the fleet: %q %v", out, err)
		}
		if _, err := f.kubectl(t, "--context", "fleet", "get", "cm", "nothing", "-n", ns); err == nil || !strings.Contains(err.Error(), "NotFound") {
			t.Errorf("kubectl get of a missing name: %v", err)
		}
	})
}
