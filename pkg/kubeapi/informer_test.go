package kubeapi_test

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/fleetcache/fleetcache/internal/app"
	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/kubeapi"
)

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// TestDynamicInformer: a client-go dynamic informer syncs through
// fleetcache, follows changes, resumes its watch from its resourceVersion
// after its connection is cut, and lists again after the 410 Gone that
// fleetcache answers once the deletions it would have to replay are no
// longer retained.
func TestDynamicInformer(t *testing.T) {
	// Two tombstones: three deletions while the informer is cut off are
	// more than fleetcache can replay.
	f := startFleetWith(t, app.Options{KubeAPI: kubeapiOptions(), Index: index.Options{MaxTombstones: 2}})
	const ns = "informer"
	objs := newFleetObjects(t, f, ns)
	for i := range 5 {
		objs.put("c1", fmt.Sprintf("cm-%d", i), "0")
	}
	// The informer reaches fleetcache through a proxy the test cuts.
	inf := f.startInformer(t, kubeapi.PathPrefix+"c1", ns)
	converged := func(what string) { t.Helper(); inf.converge(t, what, objs.members) }
	converged("the informer synced")

	objs.put("c1", "cm-0", "1")
	objs.put("c1", "cm-new", "1")
	objs.remove("c1", "cm-1")
	converged("the informer followed a create, an update and a delete")

	// Cut: the informer's watch breaks; a change meanwhile reaches it when
	// its watch resumes from its resourceVersion, with no new list.
	inf.resumesAfterCut(t, f, kubeapi.PathPrefix, objs.members, func() { objs.put("c1", "cm-2", "2") })

	// Cut again, and delete three objects: fleetcache keeps two
	// tombstones, so the resumed watch gets 410 Gone and the informer
	// lists again, and ends with the member's state.
	_, mark := f.requests.since(0)
	inf.proxy.Cut()
	for _, name := range []string{"cm-2", "cm-3", "cm-4"} {
		objs.remove("c1", name)
	}
	testcluster.Eventually(t, 30*time.Second, "fleetcache saw the deletions", func() (bool, string) {
		n := f.agg.Index.ObjectCount("c1", "configmaps")
		out, err := f.kubectl(t, "--context", "fleet-c1", "get", "cm", "-n", ns, "-o", "name")
		return err == nil && !strings.Contains(out, "cm-3") && !strings.Contains(out, "cm-4"), fmt.Sprint(n, out, err)
	})
	if err := inf.proxy.Restore(); err != nil {
		t.Fatal(err)
	}
	converged("the informer relisted after 410 Gone")
	after, _ := f.requests.since(mark)
	gone := slices.IndexFunc(after, func(a answered) bool { return isWatch(a) && a.Status == http.StatusGone })
	if gone < 0 {
		t.Fatalf("no watch answered 410 Gone after the tombstones were dropped: %v", after)
	}
	if !slices.ContainsFunc(after[gone+1:], isList) {
		t.Errorf("the informer did not list again after 410 Gone: %v", after[gone:])
	}
}

// isWatch reports whether a is a watch that resumes (not a streaming list).
func isWatch(a answered) bool {
	return a.Method == http.MethodGet && a.Query.Get("watch") == "true" && a.Query.Get("sendInitialEvents") != "true"
}

// isList reports whether a is a list, plain or streaming (sendInitialEvents).
func isList(a answered) bool {
	if a.Method != http.MethodGet || !strings.HasSuffix(a.Path, "/configmaps") {
		return false
	}
	return a.Query.Get("watch") != "true" || a.Query.Get("sendInitialEvents") == "true"
}

// TestTypedInformer: a typed informer whose client asks for protobuf first,
// as Kubernetes' own controllers do, gets JSON, syncs and follows changes.
func TestTypedInformer(t *testing.T) {
	f := startFleet(t, kubeapiOptions())
	const ns = "typed-informer"
	kube := kubernetes.NewForConfigOrDie(f.env.Cluster("c1").AdminConfig())
	ctx := t.Context()
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: ns}, Data: map[string]string{"v": "1"}}
	if _, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := f.restConfig("c1")
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns))
	lister := factory.Core().V1().ConfigMaps().Lister()
	reg, err := factory.Core().V1().ConfigMaps().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	factory.Start(stop)
	defer func() {
		close(stop)
		factory.Shutdown()
	}()
	value := func() string {
		got, err := lister.ConfigMaps(ns).Get("a")
		if err != nil {
			return err.Error()
		}
		return got.Data["v"]
	}
	testcluster.Eventually(t, 60*time.Second, "the typed informer synced", func() (bool, string) {
		return reg.HasSynced() && value() == "1", value()
	})
	cm.Data["v"] = "2"
	if _, err := kube.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	testcluster.Eventually(t, 30*time.Second, "the typed informer followed an update", func() (bool, string) {
		return value() == "2", value()
	})
	seen, _ := f.requests.since(0)
	if n := slices.IndexFunc(seen, func(a answered) bool { return a.Status == http.StatusNotAcceptable }); n >= 0 {
		t.Errorf("a request was refused 406: %+v", seen[n])
	}
}

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

// cutInformer is a client-go dynamic informer of ConfigMaps that reaches
// fleetcache through a proxy the test cuts.
type cutInformer struct {
	informer cache.SharedIndexInformer
	reg      cache.ResourceEventHandlerRegistration
	proxy    *testcluster.Proxy
}

// startInformer starts a dynamic informer of the ConfigMaps of ns at
// fleetcache's path (/clusters/c1, /fleet) as the user admin, through a
// proxy; the test's end stops both.
func (f *fleet) startInformer(t *testing.T, path, ns string) *cutInformer {
	t.Helper()
	proxy, err := testcluster.StartProxy(strings.TrimPrefix(f.url, "https://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	cfg := f.restConfig("c1")
	cfg.Host = "https://" + proxy.Addr() + path
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
	t.Cleanup(func() {
		close(stop)
		factory.Shutdown()
	})
	return &cutInformer{informer: informer, reg: reg, proxy: proxy}
}

// state returns the informer's ConfigMaps, cluster/name → value: the
// cluster of the fleetcache.io/cluster annotation (the fleet's API), else
// c1 (the informers of /clusters/c1).
func (ci *cutInformer) state() map[string]string {
	out := map[string]string{}
	for _, o := range ci.informer.GetStore().List() {
		u := o.(*unstructured.Unstructured)
		v, _, _ := unstructured.NestedString(u.Object, "data", "v")
		cluster := u.GetAnnotations()[kubeapi.ClusterAnnotation]
		if cluster == "" {
			cluster = "c1"
		}
		if u.GetName() != "kube-root-ca.crt" {
			out[cluster+"/"+u.GetName()] = v
		}
	}
	return out
}

// converge waits until the informer has synced and holds what want returns.
func (ci *cutInformer) converge(t *testing.T, what string, want func() map[string]string) {
	t.Helper()
	testcluster.Eventually(t, 60*time.Second, what, func() (bool, string) {
		w, got := want(), ci.state()
		return ci.reg.HasSynced() && maps.Equal(w, got), cmp.Diff(w, got)
	})
}

// resumesAfterCut cuts the informer's connection, makes change meanwhile
// and restores it: the informer catches up with want by resuming its watch
// from a resourceVersion (of a path under prefix), with no new list.
func (ci *cutInformer) resumesAfterCut(t *testing.T, f *fleet, prefix string, want func() map[string]string, change func()) {
	t.Helper()
	_, mark := f.requests.since(0)
	ci.proxy.Cut()
	change()
	if err := ci.proxy.Restore(); err != nil {
		t.Fatal(err)
	}
	ci.converge(t, "the informer caught up after its connection was cut", want)
	after, _ := f.requests.since(mark)
	if slices.ContainsFunc(after, isList) {
		t.Errorf("the informer listed again after a cut connection: %v", after)
	}
	if !slices.ContainsFunc(after, func(a answered) bool {
		rv := a.Query.Get("resourceVersion")
		return isWatch(a) && strings.HasPrefix(a.Path, prefix) && rv != "" && rv != "0" && a.Status == http.StatusOK
	}) {
		t.Errorf("no watch resumed from a resourceVersion after the cut: %v", after)
	}
}
