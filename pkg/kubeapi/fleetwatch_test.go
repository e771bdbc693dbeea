package kubeapi_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/inventory"
	"github.com/fleetcache/fleetcache/pkg/kubeapi"
)

// fleetObjects writes and deletes ConfigMaps of one namespace in the test
// clusters, whose data v is its value.
type fleetObjects struct {
	t    *testing.T
	ns   string
	kube map[string]kubernetes.Interface
}

func newFleetObjects(t *testing.T, f *fleet, ns string) *fleetObjects {
	o := &fleetObjects{t: t, ns: ns, kube: map[string]kubernetes.Interface{}}
	for _, c := range f.env.Clusters() {
		o.kube[c.Name()] = kubernetes.NewForConfigOrDie(c.AdminConfig())
		if _, err := o.kube[c.Name()].CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return o
}

func (o *fleetObjects) put(cluster, name, value string) {
	o.t.Helper()
	cms := o.kube[cluster].CoreV1().ConfigMaps(o.ns)
	cm, err := cms.Get(o.t.Context(), name, metav1.GetOptions{})
	if err != nil {
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: o.ns}}
	}
	cm.Data = map[string]string{"v": value}
	if err == nil {
		_, err = cms.Update(o.t.Context(), cm, metav1.UpdateOptions{})
	} else {
		_, err = cms.Create(o.t.Context(), cm, metav1.CreateOptions{})
	}
	if err != nil {
		o.t.Fatal(err)
	}
}

func (o *fleetObjects) remove(cluster, name string) {
	o.t.Helper()
	if err := o.kube[cluster].CoreV1().ConfigMaps(o.ns).Delete(o.t.Context(), name, metav1.DeleteOptions{}); err != nil {
		o.t.Fatal(err)
	}
}

// members returns the members' ConfigMaps, cluster/name → value.
func (o *fleetObjects) members() map[string]string {
	o.t.Helper()
	out := map[string]string{}
	for c, kube := range o.kube {
		list, err := kube.CoreV1().ConfigMaps(o.ns).List(o.t.Context(), metav1.ListOptions{})
		if err != nil {
			o.t.Fatal(err)
		}
		for _, cm := range list.Items {
			if cm.Name != "kube-root-ca.crt" {
				out[c+"/"+cm.Name] = cm.Data["v"]
			}
		}
	}
	return out
}

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
		proxy, err := testcluster.StartProxy(strings.TrimPrefix(f.url, "https://"))
		if err != nil {
			t.Fatal(err)
		}
		defer proxy.Close()
		cfg := f.restConfig("c1")
		cfg.Host = "https://" + proxy.Addr() + "/fleet"
		client, err := dynamic.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(client, 0, ns, nil)
		informer := factory.ForResource(configMaps).Informer()
		reg, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{})
		if err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		factory.Start(stop)
		defer func() {
			close(stop)
			factory.Shutdown()
		}()
		// The informer's objects are keyed by namespace and name: one per
		// name across clusters. Its state is cluster/name → value, read
		// from the annotation.
		state := func() map[string]string {
			out := map[string]string{}
			for _, o := range informer.GetStore().List() {
				u := o.(*unstructured.Unstructured)
				v, _, _ := unstructured.NestedString(u.Object, "data", "v")
				if u.GetName() != "kube-root-ca.crt" {
					out[u.GetAnnotations()[kubeapi.ClusterAnnotation]+"/"+u.GetName()] = v
				}
			}
			return out
		}
		converged := func(what string) {
			t.Helper()
			testcluster.Eventually(t, 60*time.Second, what, func() (bool, string) {
				want, got := objs.members(), state()
				return reg.HasSynced() && maps.Equal(want, got), cmp.Diff(want, got)
			})
		}
		converged("the informer synced")
		objs.put("c1", "d", "1")
		objs.put("c2", "e", "1")
		objs.put("c2", "b", "3")
		objs.remove("c2", "e")
		converged("the informer followed changes in both clusters")

		_, mark := f.requests.since(0)
		proxy.Cut()
		objs.put("c2", "f", "1")
		objs.put("c1", "d", "2")
		if err := proxy.Restore(); err != nil {
			t.Fatal(err)
		}
		converged("the informer caught up after its connection was cut")
		after, _ := f.requests.since(mark)
		if slices.ContainsFunc(after, isList) {
			t.Errorf("the informer listed again after a cut connection: %v", after)
		}
		if !slices.ContainsFunc(after, func(a answered) bool {
			rv := a.Query.Get("resourceVersion")
			return isWatch(a) && strings.HasPrefix(a.Path, "/fleet/") && rv != "" && rv != "0" && a.Status == http.StatusOK
		}) {
			t.Errorf("no watch of /fleet resumed from a resourceVersion after the cut: %v", after)
		}
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
