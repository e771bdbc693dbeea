package informers_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/fleetcache/fleetcache/internal/app"
	"github.com/fleetcache/fleetcache/internal/apptest"
	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/clusters"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/compact"
	"github.com/fleetcache/fleetcache/pkg/index/feed"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
	"github.com/fleetcache/fleetcache/pkg/informers"
)

var (
	configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	crds       = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	widgets    = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
)

// fleet is fleetcache's core as the aggregator wires it: a registry running
// one informers.Ingester per cluster into one index and one health tracker.
type fleet struct {
	index    *index.Index
	health   *health.Tracker
	registry *clusters.Registry
}

// testOptions probe often so that tests observe state changes quickly,
// and compress the objects' bodies once a few kilobytes of each type have
// been seen, so that every test reads compressed objects too.
func testOptions(resources ...string) informers.Options {
	opts := apptest.Informers(resources...)
	opts.Codecs = &compact.Codecs{TrainBytes: 2048}
	return opts
}

func startFleet(t testing.TB, ixOpts index.Options, opts informers.Options, cs ...clusters.Cluster) *fleet {
	t.Helper()
	agg, err := app.New(app.Options{Index: ixOpts, Informers: opts})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if err := agg.Registry.Add(c); err != nil {
			t.Fatal(err)
		}
	}
	// The informers tests need the clusters and the fleet's prober (recovery
	// waits on a probe), which the aggregator's Start runs beside the API.
	runAggregator(t, agg)
	// Start starts its parts in goroutines of its own: until they run, a
	// test's snapshot of the goroutines (TestRemoveCluster) would miss
	// them and count them as leaks later.
	testcluster.Eventually(t, 10*time.Second, "the aggregator's parts running", func() (bool, string) {
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		for _, part := range []string{"fanout.(*Hub[...]).heartbeats", "informers.(*prober).Start"} {
			if !strings.Contains(stacks, part) {
				return false, part + " not running"
			}
		}
		return true, ""
	})
	return &fleet{index: agg.Index, health: agg.Health, registry: agg.Registry}
}

// runAggregator runs agg until the test ends or stop is called, and checks
// that it stops cleanly.
func runAggregator(tb testing.TB, agg *app.Aggregator) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- agg.Start(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				tb.Errorf("aggregator: %v", err)
			}
		})
	}
	tb.Cleanup(stop)
	return stop
}

func admin(c *testcluster.Cluster) clusters.Cluster {
	return clusters.Cluster{Name: c.Name(), Config: c.AdminConfig()}
}

func all(tb testing.TB) []clusters.Cluster {
	var out []clusters.Cluster
	for _, c := range testbed.Env(tb).Clusters() {
		out = append(out, admin(c))
	}
	return out
}

func waitStatus(t testing.TB, f *fleet, cluster string, want health.Status) health.ClusterStatus {
	t.Helper()
	var got health.ClusterStatus
	testcluster.Eventually(t, 90*time.Second, fmt.Sprintf("cluster %s %s", cluster, want), func() (bool, string) {
		got, _ = f.health.Cluster(cluster)
		return got.Status == want, fmt.Sprintf("%+v", got)
	})
	return got
}

func configMap(ns, name string, data map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"namespace": ns, "name": name},
		"data":     data,
	}}
}

func create(t testing.TB, c dynamic.Interface, u *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	out, err := c.Resource(configMaps).Namespace(u.GetNamespace()).Create(t.Context(), u, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func update(t testing.TB, c dynamic.Interface, ns, name string, data map[string]any) *unstructured.Unstructured {
	t.Helper()
	u, err := c.Resource(configMaps).Namespace(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	u.Object["data"] = data
	out, err := c.Resource(configMaps).Namespace(ns).Update(t.Context(), u, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func remove(t testing.TB, c dynamic.Interface, ns, name string) {
	t.Helper()
	if err := c.Resource(configMaps).Namespace(ns).Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// version is what identifies one state of one object.
type version struct {
	UID             types.UID
	ResourceVersion string
}

// serverState lists a type from the API server: key "namespace/name" → version.
func serverState(t testing.TB, c dynamic.Interface, gvr schema.GroupVersionResource) map[string]version {
	t.Helper()
	list, err := c.Resource(gvr).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]version{}
	for _, u := range list.Items {
		out[u.GetNamespace()+"/"+u.GetName()] = version{u.GetUID(), u.GetResourceVersion()}
	}
	return out
}

func indexState(ix *index.Index, cluster, resource string) map[string]version {
	out := map[string]version{}
	for _, o := range ix.Objects(cluster, resource) {
		out[o.Namespace+"/"+o.Name] = version{o.UID, o.ResourceVersion}
	}
	return out
}

// waitConverged waits until the index holds exactly what the server lists.
func waitConverged(t testing.TB, f *fleet, cluster string, c dynamic.Interface, gvr schema.GroupVersionResource, resource string) {
	t.Helper()
	testcluster.Eventually(t, 90*time.Second, "index equal to the server's list of "+resource+" in "+cluster, func() (bool, string) {
		diff := cmp.Diff(serverState(t, c, gvr), indexState(f.index, cluster, resource))
		return diff == "", "(-server +index):\n" + diff
	})
}

// eventsAfter returns every event after rev, up to the current revision.
func eventsAfter(t testing.TB, ix *index.Index, after uint64) []feed.Event[*object.Object] {
	t.Helper()
	events, err := ix.Events(after, 0)
	if err != nil {
		t.Fatal(err)
	}
	return events
}

// replay applies events to a state like indexState's, as a follower would.
func replay(state map[string]version, events []feed.Event[*object.Object], cluster, resource string) map[string]version {
	out := maps.Clone(state)
	for _, e := range events {
		o := e.Object
		if o.Cluster != cluster || o.Type.Resource != resource {
			continue
		}
		k := o.Namespace + "/" + o.Name
		if e.Type == feed.Deleted {
			delete(out, k)
		} else {
			out[k] = version{o.UID, o.ResourceVersion}
		}
	}
	return out
}

func eventsFor(events []feed.Event[*object.Object], cluster, namespace string) []string {
	var out []string
	for _, e := range events {
		if e.Object.Cluster == cluster && e.Object.Namespace == namespace {
			out = append(out, e.Type.String()+" "+e.Object.Name)
		}
	}
	return out
}

func TestSameNameInThreeClusters(t *testing.T) {
	env := testbed.Env(t)
	var uids []types.UID
	for _, c := range env.Clusters() {
		dc := testcluster.Dynamic(t, c.AdminConfig())
		testcluster.CreateNamespace(t, dc, "same")
		uids = append(uids, create(t, dc, configMap("same", "twin", map[string]any{"cluster": c.Name()})).GetUID())
	}
	f := startFleet(t, index.Options{}, testOptions("configmaps"), all(t)...)
	for _, c := range env.Clusters() {
		waitStatus(t, f, c.Name(), health.Synced)
	}
	var got []types.UID
	for _, c := range env.Clusters() {
		o := f.index.Get(object.Key{Cluster: c.Name(), Resource: "configmaps", Namespace: "same", Name: "twin"})
		if o == nil {
			t.Fatalf("%s/same/twin not in the index", c.Name())
		}
		if !bytes.Contains(o.Raw(), []byte(`"cluster":"`+c.Name()+`"`)) {
			t.Errorf("%s/same/twin holds another cluster's object: %s", c.Name(), o.Raw())
		}
		got = append(got, o.UID)
	}
	if diff := cmp.Diff(uids, got); diff != "" {
		t.Errorf("UIDs (-created +indexed):\n%s", diff)
	}
	if n := planner.Count(f.index, planner.Filter{Namespaces: []string{"same"}}); n != 3 {
		t.Errorf("objects in namespace same = %d, want 3", n)
	}
}

func TestChangesReachIndexAndFeed(t *testing.T) {
	env := testbed.Env(t)
	c1 := env.Cluster("c1")
	dc := testcluster.Dynamic(t, c1.AdminConfig())
	testcluster.CreateNamespace(t, dc, "changes")
	f := startFleet(t, index.Options{}, testOptions("configmaps", "namespaces"), all(t)...)
	for _, c := range env.Clusters() {
		waitStatus(t, f, c.Name(), health.Synced)
	}
	rev := f.index.Revision()

	create(t, dc, configMap("changes", "a", map[string]any{"v": "1"}))
	create(t, dc, configMap("changes", "b", map[string]any{"v": "1"}))
	update(t, dc, "changes", "a", map[string]any{"v": "2"})
	remove(t, dc, "changes", "b")

	waitConverged(t, f, "c1", dc, configMaps, "configmaps")
	want := []string{"ADDED a", "ADDED b", "MODIFIED a", "DELETED b"}
	testcluster.Eventually(t, 30*time.Second, "the feed to carry every change", func() (bool, string) {
		got := eventsFor(eventsAfter(t, f.index, rev), "c1", "changes")
		return cmp.Equal(want, got), fmt.Sprint(got)
	})
	a := f.index.Get(object.Key{Cluster: "c1", Resource: "configmaps", Namespace: "changes", Name: "a"})
	if a == nil || !bytes.Contains(a.Raw(), []byte(`"v":"2"`)) {
		t.Errorf("c1/changes/a = %v, want data v=2", a)
	}
	for _, c := range env.Clusters() {
		if s, _ := f.health.Cluster(c.Name()); s.Status != health.Synced {
			t.Errorf("cluster %s is %s, want SYNCED: %s", c.Name(), s.Status, s.Message)
		}
	}
}

// outage stops c's API server, changes the cluster through a second API
// server on the same etcd prefix, optionally compacts etcd, restarts it and
// checks that the index converges and the feed carried every difference.
func outage(t *testing.T, cluster string, compact bool) {
	env := testbed.Env(t)
	c := env.Cluster(cluster)
	dc := testcluster.Dynamic(t, c.AdminConfig())
	ns := "outage"
	if compact {
		ns = "compacted"
	}
	seedOutage(t, dc, ns)
	f := startFleet(t, index.Options{}, testOptions("configmaps"), all(t)...)
	for _, c := range env.Clusters() {
		waitStatus(t, f, c.Name(), health.Synced)
	}
	waitConverged(t, f, cluster, dc, configMaps, "configmaps")
	before := indexState(f.index, cluster, "configmaps")
	rev := f.index.Revision()
	oldRecreate := f.index.Get(object.Key{Cluster: cluster, Resource: "configmaps", Namespace: ns, Name: "recreate"}).UID
	relists := resourceStatus(t, f, cluster, "configmaps").Relists
	second, err := c.StartSecondary(t.Context())
	if err != nil {
		t.Fatal(err)
	}

	outageRound(t, f, env, c, second, ns, compact)
	if err := second.Stop(); err != nil {
		t.Fatal(err)
	}
	waitConverged(t, f, cluster, dc, configMaps, "configmaps")
	after := indexState(f.index, cluster, "configmaps")
	if diff := cmp.Diff(after, replay(before, eventsAfter(t, f.index, rev), cluster, "configmaps")); diff != "" {
		t.Errorf("the feed does not carry the outage's differences (-index +replayed feed):\n%s", diff)
	}
	got := eventsFor(eventsAfter(t, f.index, rev), cluster, ns)
	for _, want := range []string{"ADDED new", "MODIFIED change", "DELETED gone", "ADDED recreate"} {
		if !slices.Contains(got, want) {
			t.Errorf("feed after the outage lacks %q; got %v", want, got)
		}
	}
	if slices.Contains(got, "DELETED keep") || slices.Contains(got, "MODIFIED keep") {
		t.Errorf("feed carries a change of an unchanged object: %v", got)
	}
	if uid := f.index.Get(object.Key{Cluster: cluster, Resource: "configmaps", Namespace: ns, Name: "recreate"}).UID; uid == oldRecreate {
		t.Errorf("recreated object still has the old UID %s", uid)
	}
	if compact {
		if n := resourceStatus(t, f, cluster, "configmaps").Relists; n <= relists {
			t.Errorf("relists = %d after compaction, want more than %d", n, relists)
		}
	}
}

func resourceStatus(t testing.TB, f *fleet, cluster, resource string) health.ResourceStatus {
	t.Helper()
	s, ok := f.health.Cluster(cluster)
	if !ok {
		t.Fatalf("cluster %s unknown to health", cluster)
	}
	for _, r := range s.Resources {
		if r.Resource == resource {
			return r
		}
	}
	t.Fatalf("cluster %s has no resource %s: %+v", cluster, resource, s)
	return health.ResourceStatus{}
}

func TestOutage(t *testing.T) { outage(t, "c2", false) }

func TestOutageWithCompaction(t *testing.T) { outage(t, "c3", true) }

func TestForbiddenType(t *testing.T) {
	env := testbed.Env(t)
	c := env.Cluster("c1")
	if err := c.Grant(t.Context(), "alice", "", rbacv1.PolicyRule{
		APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list", "watch"},
	}); err != nil {
		t.Fatal(err)
	}
	f := startFleet(t, index.Options{}, testOptions("configmaps", "namespaces"),
		clusters.Cluster{Name: "c1", Config: c.UserConfig("alice")})
	s := waitStatus(t, f, "c1", health.Degraded)
	byName := map[string]health.ResourceStatus{}
	for _, r := range s.Resources {
		byName[r.Resource] = r
	}
	testcluster.Eventually(t, 30*time.Second, "configmaps SYNCED", func() (bool, string) {
		r := resourceStatus(t, f, "c1", "configmaps")
		return r.Status == health.Synced, fmt.Sprintf("%+v", r)
	})
	ns := resourceStatus(t, f, "c1", "namespaces")
	if ns.Status != health.Degraded || !bytes.Contains([]byte(ns.LastError), []byte("forbidden")) {
		t.Errorf("namespaces = %+v, want DEGRADED with a forbidden error", ns)
	}
	if n := f.index.ObjectCount("c1", "configmaps"); n == 0 {
		t.Error("no configmaps cached with list rights on configmaps")
	}
	if s, _ := f.health.Cluster("c1"); s.Status != health.Degraded {
		t.Errorf("cluster status %s, want DEGRADED", s.Status)
	}
}

func TestRemoveCluster(t *testing.T) {
	env := testbed.Env(t)
	c := env.Cluster("c2")
	dc := testcluster.Dynamic(t, c.AdminConfig())
	testcluster.CreateNamespace(t, dc, "removal")
	create(t, dc, configMap("removal", "x", nil))

	f := startFleet(t, index.Options{}, testOptions("configmaps"))
	// Everything running now (the registry, the test's own connections) may
	// stay; whatever the cluster starts must be gone after its removal.
	goroutines := goleak.IgnoreCurrent()
	if err := f.registry.Add(admin(c)); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, f, "c2", health.Synced)
	held := f.index.ObjectCount("c2", "")
	if held == 0 {
		t.Fatal("nothing cached from c2")
	}
	rev := f.index.Revision()
	if err := f.registry.Remove("c2"); err != nil {
		t.Fatal(err)
	}
	if n := f.index.ObjectCount("c2", ""); n != 0 {
		t.Errorf("%d objects of c2 left after removal", n)
	}
	deleted := 0
	for _, e := range eventsAfter(t, f.index, rev) {
		if e.Type == feed.Deleted && e.Object.Cluster == "c2" {
			deleted++
		}
	}
	if deleted != held {
		t.Errorf("feed carried %d deletions, want %d", deleted, held)
	}
	if _, ok := f.health.Cluster("c2"); ok {
		t.Error("removed cluster still has a health status")
	}
	if err := goleak.Find(goroutines); err != nil {
		t.Errorf("goroutines left after removing the cluster: %v", err)
	}
}

func TestDeleteAndRecreate(t *testing.T) {
	env := testbed.Env(t)
	c := env.Cluster("c1")
	dc := testcluster.Dynamic(t, c.AdminConfig())
	testcluster.CreateNamespace(t, dc, "recreate")
	create(t, dc, configMap("recreate", "phoenix", nil))
	f := startFleet(t, index.Options{}, testOptions("configmaps"), admin(c))
	waitStatus(t, f, "c1", health.Synced)
	remove(t, dc, "recreate", "phoenix")
	uid := create(t, dc, configMap("recreate", "phoenix", map[string]any{"life": "2"})).GetUID()
	key := object.Key{Cluster: "c1", Resource: "configmaps", Namespace: "recreate", Name: "phoenix"}
	testcluster.Eventually(t, 30*time.Second, "the new UID in the index", func() (bool, string) {
		o := f.index.Get(key)
		return o != nil && o.UID == uid, fmt.Sprintf("%v", o)
	})
}

func TestNoManagedFields(t *testing.T) {
	env := testbed.Env(t)
	c := env.Cluster("c1")
	dc := testcluster.Dynamic(t, c.AdminConfig())
	testcluster.CreateNamespace(t, dc, "stripped")
	cm := configMap("stripped", "applied", map[string]any{"k": "v"})
	cm.SetAnnotations(map[string]string{
		"kubectl.kubernetes.io/last-applied-configuration": `{"apiVersion":"v1","kind":"ConfigMap"}`,
		"team": "a",
	})
	created := create(t, dc, cm)
	if len(created.GetManagedFields()) == 0 {
		t.Fatal("the server returned no managedFields: the test proves nothing")
	}
	f := startFleet(t, index.Options{}, testOptions("configmaps", "namespaces"), all(t)...)
	for _, c := range env.Clusters() {
		waitStatus(t, f, c.Name(), health.Synced)
	}
	page := planner.List(f.index, planner.Filter{}, nil, 0)
	if len(page.Objects) == 0 {
		t.Fatal("index is empty")
	}
	for _, o := range page.Objects {
		if bytes.Contains(o.Raw(), []byte(`"managedFields"`)) || bytes.Contains(o.Raw(), []byte("last-applied-configuration")) {
			t.Errorf("%s still carries managedFields or last-applied: %s", o.Key(), o.Raw())
		}
	}
	o := f.index.Get(object.Key{Cluster: "c1", Resource: "configmaps", Namespace: "stripped", Name: "applied"})
	if o == nil || !bytes.Contains(o.Raw(), []byte(`"team":"a"`)) {
		t.Errorf("other annotations must stay: %v", o)
	}
}

func TestFollowerPastRetention(t *testing.T) {
	env := testbed.Env(t)
	c := env.Cluster("c3")
	dc := testcluster.Dynamic(t, c.AdminConfig())
	testcluster.CreateNamespace(t, dc, "retention")
	f := startFleet(t, index.Options{Retention: 5}, testOptions("configmaps"), admin(c))
	waitStatus(t, f, "c3", health.Synced)
	rev := f.index.Revision()
	for i := range 10 {
		create(t, dc, configMap("retention", fmt.Sprintf("cm-%d", i), nil))
	}
	testcluster.Eventually(t, 30*time.Second, "ten more revisions", func() (bool, string) {
		return f.index.Revision() >= rev+10, fmt.Sprint(f.index.Revision())
	})
	if _, err := f.index.Events(rev, 0); !errors.Is(err, feed.ErrExpired) {
		t.Errorf("Events(%d) error = %v, want ErrExpired", rev, err)
	}
	if events, err := f.index.Events(f.index.Revision()-5, 0); err != nil || len(events) != 5 {
		t.Errorf("Events within retention = %d events, %v; want 5, nil", len(events), err)
	}
}

func TestTypeServedLater(t *testing.T) {
	env := testbed.Env(t)
	c := env.Cluster("c2")
	dc := testcluster.Dynamic(t, c.AdminConfig())
	f := startFleet(t, index.Options{}, testOptions("configmaps", "widgets.example.com"), admin(c))
	testcluster.Eventually(t, 30*time.Second, "widgets reported as not served", func() (bool, string) {
		s, _ := f.health.Cluster("c2")
		for _, r := range s.Resources {
			if r.Resource == "widgets.example.com" {
				return r.Status == health.Degraded && s.Status == health.Degraded, fmt.Sprintf("%+v", s)
			}
		}
		return false, fmt.Sprintf("%+v", s)
	})
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "widgets.example.com"},
		"spec": map[string]any{
			"group": "example.com", "scope": "Namespaced",
			"names": map[string]any{"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
			}},
		},
	}}
	if _, err := dc.Resource(crds).Create(t.Context(), crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = dc.Resource(crds).Delete(context.Background(), "widgets.example.com", metav1.DeleteOptions{})
	})
	widget := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"namespace": "default", "name": "w1"},
		"spec":     map[string]any{"size": 3},
	}}
	testcluster.Eventually(t, 30*time.Second, "the widget to be created", func() (bool, string) {
		_, err := dc.Resource(widgets).Namespace("default").Create(t.Context(), widget, metav1.CreateOptions{})
		return err == nil || apierrors.IsAlreadyExists(err), fmt.Sprint(err)
	})
	waitStatus(t, f, "c2", health.Synced)
	testcluster.Eventually(t, 30*time.Second, "the widget in the index", func() (bool, string) {
		o := f.index.Get(object.Key{Cluster: "c2", Resource: "widgets.example.com", Namespace: "default", Name: "w1"})
		return o != nil && o.Type.Kind == "Widget", fmt.Sprint(o)
	})
}

// TestServedVersionMoves serves a CRD at v1beta1, caches it, then makes
// v1 its storage version and stops serving v1beta1: the type moves to v1,
// and its object, unchanged on the server (same resourceVersion), is
// replaced in the index by its v1 body with one MODIFIED event, never
// deleted.
func TestServedVersionMoves(t *testing.T) {
	env := testbed.Env(t)
	c := env.Cluster("c1")
	dc := testcluster.Dynamic(t, c.AdminConfig())
	crd := func(versions ...string) *unstructured.Unstructured {
		var vs []any
		for i, v := range versions {
			vs = append(vs, map[string]any{"name": v, "served": i == len(versions)-1, "storage": i == len(versions)-1,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}})
		}
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": "gadgets.example.com"},
			"spec": map[string]any{"group": "example.com", "scope": "Namespaced",
				"names":    map[string]any{"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
				"versions": vs},
		}}
	}
	if _, err := dc.Resource(crds).Create(t.Context(), crd("v1beta1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Gone before the next test (-count) creates it again.
		_ = dc.Resource(crds).Delete(context.Background(), "gadgets.example.com", metav1.DeleteOptions{})
		testcluster.Eventually(t, 60*time.Second, "the CRD deleted", func() (bool, string) {
			_, err := dc.Resource(crds).Get(context.Background(), "gadgets.example.com", metav1.GetOptions{})
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
	})
	gadgets := schema.GroupVersionResource{Group: "example.com", Version: "v1beta1", Resource: "gadgets"}
	gadget := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1beta1", "kind": "Gadget",
		"metadata": map[string]any{"namespace": "default", "name": "g1"}, "spec": map[string]any{"size": 3}}}
	testcluster.Eventually(t, 30*time.Second, "the gadget to be created", func() (bool, string) {
		_, err := dc.Resource(gadgets).Namespace("default").Create(t.Context(), gadget, metav1.CreateOptions{})
		return err == nil || apierrors.IsAlreadyExists(err), fmt.Sprint(err)
	})
	f := startFleet(t, index.Options{}, testOptions("gadgets.example.com"), admin(c))
	key := object.Key{Cluster: "c1", Resource: "gadgets.example.com", Namespace: "default", Name: "g1"}
	testcluster.Eventually(t, 30*time.Second, "the gadget in the index at v1beta1", func() (bool, string) {
		o := f.index.Get(key)
		return o != nil && o.Type.GVR.Version == "v1beta1", fmt.Sprint(o)
	})
	before := f.index.Get(key)
	after := f.index.Revision()

	// v1 becomes the storage version and v1beta1 stops being served.
	current, err := dc.Resource(crds).Get(t.Context(), "gadgets.example.com", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	current.Object["spec"] = crd("v1beta1", "v1").Object["spec"]
	if _, err := dc.Resource(crds).Update(t.Context(), current, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	testcluster.Eventually(t, 30*time.Second, "the gadget in the index at v1", func() (bool, string) {
		o := f.index.Get(key)
		return o != nil && o.Type.GVR.Version == "v1" && strings.Contains(string(o.Raw()), `"apiVersion":"example.com/v1"`),
			fmt.Sprintf("%v %s", o, o.Raw())
	})
	if o := f.index.Get(key); o.UID != before.UID || o.ResourceVersion != before.ResourceVersion {
		t.Errorf("the gadget at v1 is %s %s, want the same object %s %s", o.UID, o.ResourceVersion, before.UID, before.ResourceVersion)
	}
	if got := eventsFor(eventsAfter(t, f.index, after), "c1", "default"); !slices.Equal(got, []string{"MODIFIED g1"}) {
		t.Errorf("events %v, want one MODIFIED g1", got)
	}
	waitStatus(t, f, "c1", health.Synced)
}

// TestUpdateCredentialsKeepsData switches a cluster to other credentials
// while its API server is down and an object is deleted: the data stays
// through the switch, and the new cache prunes the deleted object with a
// DELETED event although no watch ever saw the deletion.
func TestUpdateCredentialsKeepsData(t *testing.T) {
	env := testbed.Env(t)
	c := env.Cluster("c1")
	dc := testcluster.Dynamic(t, c.AdminConfig())
	testcluster.CreateNamespace(t, dc, "rotate")
	create(t, dc, configMap("rotate", "stays", nil))
	create(t, dc, configMap("rotate", "goes", nil))
	if err := c.Grant(t.Context(), "bob", "", rbacv1.PolicyRule{
		APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list", "watch"},
	}); err != nil {
		t.Fatal(err)
	}
	f := startFleet(t, index.Options{}, testOptions("configmaps"), admin(c))
	waitStatus(t, f, "c1", health.Synced)
	rev := f.index.Revision()

	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, f, "c1", health.Disconnected)
	second, err := c.StartSecondary(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	remove(t, testcluster.Dynamic(t, second.AdminConfig()), "rotate", "goes")
	if err := second.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := f.registry.Update(clusters.Cluster{Name: "c1", Config: c.UserConfig("bob")}); err != nil {
		t.Fatal(err)
	}
	if f.index.Get(object.Key{Cluster: "c1", Resource: "configmaps", Namespace: "rotate", Name: "stays"}) == nil {
		t.Error("objects dropped by the credential change")
	}
	if err := c.Restart(t.Context()); err != nil {
		t.Fatal(err)
	}
	waitConverged(t, f, "c1", dc, configMaps, "configmaps")
	waitStatus(t, f, "c1", health.Synced)
	got := eventsFor(eventsAfter(t, f.index, rev), "c1", "rotate")
	if diff := cmp.Diff([]string{"DELETED goes"}, got); diff != "" {
		t.Errorf("feed across the credential change (-want +got):\n%s", diff)
	}
}

// TestKubeconfigSources registers clusters the way an operator does: from a
// kubeconfig file and from a directory holding a broken file next to a good one.
func TestKubeconfigSources(t *testing.T) {
	env := testbed.Env(t)
	dir := t.TempDir()
	file := dir + "/fleet.yaml"
	if err := env.WriteKubeconfig(file, "admin", env.Cluster("c1"), env.Cluster("c2")); err != nil {
		t.Fatal(err)
	}
	fromFile, err := clusters.FromKubeconfig(file)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfigs := t.TempDir()
	if err := env.WriteKubeconfig(kubeconfigs+"/c3.yaml", "admin", env.Cluster("c3")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kubeconfigs+"/broken.yaml", []byte("clusters: [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fromDir, err := clusters.FromDir(kubeconfigs)
	if err == nil || !strings.Contains(err.Error(), "broken.yaml") {
		t.Errorf("FromDir error = %v, want one naming broken.yaml", err)
	}

	f := startFleet(t, index.Options{}, testOptions("namespaces"))
	if err := f.registry.Set(append(fromFile, fromDir...)); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"c1", "c2", "c3"}, f.registry.Names()); diff != "" {
		t.Errorf("registered clusters (-want +got):\n%s", diff)
	}
	for _, c := range env.Clusters() {
		waitStatus(t, f, c.Name(), health.Synced)
		if f.index.Get(object.Key{Cluster: c.Name(), Resource: "namespaces", Name: "default"}) == nil {
			t.Errorf("namespace default of %s not cached", c.Name())
		}
	}
}
