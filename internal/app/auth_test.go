package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/fleetcache/fleetcache/internal/app"
	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/authz"
	"github.com/fleetcache/fleetcache/pkg/informers"
)

// authFixture is an aggregator with authentication by c1 and authorization
// by each member cluster, over three clusters seeded with ConfigMaps and
// Pods in two namespaces.
type authFixture struct {
	addr string
	kube map[string]kubernetes.Interface
	dyn  map[string]dynamic.Interface
	// removed marks what remove deleted: the test's end leaves it be.
	removed map[obj]bool
	// top is the test that started the fixture.
	top *testing.T
}

const (
	nsA = "auth-team-a"
	nsB = "auth-team-b"
)

func startAuthFixture(t *testing.T) *authFixture {
	t.Helper()
	return startAuthFixtureWith(t, nil)
}

// startAuthFixtureWith is startAuthFixture with edit applied to the
// aggregator's AuthOptions.
func startAuthFixtureWith(t *testing.T, edit func(*app.AuthOptions)) *authFixture {
	t.Helper()
	return startAuthFixtureOpts(t, func(o *app.Options) {
		if edit != nil {
			edit(&o.Auth)
		}
	})
}

// startAuthFixtureOpts is startAuthFixture with edit applied to the
// aggregator's Options.
func startAuthFixtureOpts(t *testing.T, edit func(*app.Options)) *authFixture {
	t.Helper()
	env := testbed.Env(t)
	f := &authFixture{kube: map[string]kubernetes.Interface{}, dyn: map[string]dynamic.Interface{}, removed: map[obj]bool{}, top: t}
	ctx := t.Context()
	for _, c := range env.Clusters() {
		kube := kubernetes.NewForConfigOrDie(c.AdminConfig())
		f.kube[c.Name()] = kube
		f.dyn[c.Name()] = testcluster.Dynamic(t, c.AdminConfig())
		for _, ns := range []string{nsA, nsB} {
			// Both tests of this file seed the same objects.
			if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
				continue
			} else if err != nil {
				t.Fatal(err)
			}
			for i := range 2 {
				f.configMap(t, c.Name(), ns, fmt.Sprintf("cm-%d", i), nil)
			}
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod-0"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example"}}}}
			if _, err := kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// alice may list ConfigMaps in team-a of c1 and c2; bob Pods everywhere in c3.
	cms := rbacv1.PolicyRule{Verbs: []string{"list", "watch"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}
	pods := rbacv1.PolicyRule{Verbs: []string{"list", "watch"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	for _, c := range []string{"c1", "c2"} {
		if err := env.Cluster(c).Grant(ctx, "alice", nsA, cms); err != nil {
			t.Fatal(err)
		}
	}
	if err := env.Cluster("c3").Grant(ctx, "bob", "", pods); err != nil {
		t.Fatal(err)
	}

	kubeconfig := filepath.Join(t.TempDir(), "members")
	if err := env.WriteKubeconfig(kubeconfig, "admin"); err != nil {
		t.Fatal(err)
	}
	auth := app.AuthOptions{
		Authn:         app.AuthnTokenReview,
		AuthnConfig:   env.Cluster("c1").AdminConfig(),
		AuthzCacheTTL: authzTTL, // revocation shows within it
	}
	opts := app.Options{
		Kubeconfigs: []string{kubeconfig},
		Informers:   informers.Options{Resources: []string{"namespaces", "configmaps", "pods"}},
		Auth:        auth,
	}
	if edit != nil {
		edit(&opts)
	}
	f.addr = startRun(t, opts)
	for _, c := range []string{"c1", "c2", "c3"} {
		testcluster.Eventually(t, 60*time.Second, "clusters synced", func() (bool, string) {
			var d struct{ Cluster struct{ Status string } }
			err := f.query("carol", fmt.Sprintf(`{ cluster(name: %q) { status } }`, c), &d)
			return err == nil && d.Cluster.Status == "SYNCED", fmt.Sprint(d, err)
		})
	}
	return f
}

func (f *authFixture) configMap(t *testing.T, cluster, ns, name string, owner *metav1.OwnerReference) *corev1.ConfigMap {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	if owner != nil {
		cm.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	out, err := f.kube[cluster].CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// tempConfigMap is configMap, deleted when the fixture's test ends (not a
// subtest), so that the test finds the seeded objects only when it runs
// again (-count).
func (f *authFixture) tempConfigMap(t *testing.T, cluster, ns, name string, owner *metav1.OwnerReference) *corev1.ConfigMap {
	t.Helper()
	cm := f.configMap(t, cluster, ns, name, owner)
	f.top.Cleanup(func() {
		if err := f.kube[cluster].CoreV1().ConfigMaps(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
			f.top.Errorf("delete ConfigMap %s/%s of %s: %v", ns, name, cluster, err)
		}
	})
	return cm
}

func token(tb testing.TB, user string) string {
	return testbed.Env(tb).Cluster("c1").UserConfig(user).BearerToken
}

// post sends a query with a bearer token ("" for none) and returns the
// status and the decoded body.
func (f *authFixture) post(tok, query string) (int, graphQLResponse, error) {
	return f.postAs(tok, nil, query)
}

// postAs is post with the headers of header added (Impersonate-*).
func (f *authFixture) postAs(tok string, header http.Header, query string) (int, graphQLResponse, error) {
	body, _ := json.Marshal(map[string]string{"query": query})
	req, _ := http.NewRequest(http.MethodPost, "http://"+f.addr+"/graphql", bytes.NewReader(body))
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, graphQLResponse{}, err
	}
	defer resp.Body.Close()
	var r graphQLResponse
	err = json.NewDecoder(resp.Body).Decode(&r)
	return resp.StatusCode, r, err
}

type graphQLResponse struct {
	Data   json.RawMessage
	Errors []struct {
		Message    string
		Extensions struct{ Code string }
	}
}

// query runs a query as user and decodes its data into out.
func (f *authFixture) query(user, query string, out any) error {
	return f.queryAs(user, nil, query, out)
}

// queryAs is query with the headers of header added (Impersonate-*).
func (f *authFixture) queryAs(user string, header http.Header, query string, out any) error {
	status, r, err := f.postAs(token(f.top, user), header, query)
	if err != nil {
		return err
	}
	if status != http.StatusOK || len(r.Errors) > 0 {
		return fmt.Errorf("status %d, errors %+v", status, r.Errors)
	}
	return json.Unmarshal(r.Data, out)
}

// visible returns what user sees of the ConfigMaps and Pods of the two
// namespaces, as cluster/namespace/kind/name, with the total count.
func (f *authFixture) visible(t *testing.T, user string) ([]string, int, []string) {
	t.Helper()
	return f.visibleAs(t, user, nil)
}

// visibleQuery is the query of visible.
var visibleQuery = fmt.Sprintf(`{ resources(filter: {namespaces: [%q, %q], kinds: ["ConfigMap", "Pod"]}, first: 1000) { totalCount deniedClusters edges { node { cluster namespace kind name } } } }`, nsA, nsB)

// visibleAs is visible with the headers of header added (Impersonate-*).
func (f *authFixture) visibleAs(t *testing.T, user string, header http.Header) ([]string, int, []string) {
	t.Helper()
	var d struct {
		Resources struct {
			TotalCount     int
			DeniedClusters []string
			Edges          []struct {
				Node struct{ Cluster, Namespace, Kind, Name string }
			}
		}
	}
	if err := f.queryAs(user, header, visibleQuery, &d); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range d.Resources.Edges {
		n := e.Node
		out = append(out, n.Cluster+"/"+n.Namespace+"/"+n.Kind+"/"+n.Name)
	}
	return out, d.Resources.TotalCount, d.Resources.DeniedClusters
}

func TestAuthorization(t *testing.T) {
	f := startAuthFixture(t)
	parent := f.tempConfigMap(t, "c1", nsA, "parent", nil)
	owner := &metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: parent.Name, UID: parent.UID}
	f.tempConfigMap(t, "c1", nsA, "child", owner)
	if _, err := f.kube["c1"].CoreV1().Pods(nsA).Create(t.Context(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "owned-pod", OwnerReferences: []metav1.OwnerReference{*owner}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.kube["c1"].CoreV1().Pods(nsA).Delete(context.Background(), "owned-pod", metav1.DeleteOptions{}); err != nil {
			t.Errorf("delete the owned Pod: %v", err)
		}
	})
	testcluster.Eventually(t, 30*time.Second, "the owned objects to be cached", func() (bool, string) {
		all, _, _ := f.visible(t, "admin")
		return slices.Contains(all, "c1/"+nsA+"/Pod/owned-pod") && slices.Contains(all, "c1/"+nsA+"/ConfigMap/child"), fmt.Sprint(all)
	})

	t.Run("alice", func(t *testing.T) {
		got, total, denied := f.visible(t, "alice")
		want := []string{
			"c1/" + nsA + "/ConfigMap/child", "c1/" + nsA + "/ConfigMap/cm-0", "c1/" + nsA + "/ConfigMap/cm-1", "c1/" + nsA + "/ConfigMap/parent",
			"c2/" + nsA + "/ConfigMap/cm-0", "c2/" + nsA + "/ConfigMap/cm-1",
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("alice sees (-want +got):\n%s", diff)
		}
		if total != len(want) || len(denied) != 0 {
			t.Errorf("totalCount %d, deniedClusters %v; want %d, none", total, denied, len(want))
		}
		var d struct {
			ByCluster, ByKind, ByNamespace, ByName []struct {
				Value string
				Count int
			}
			Search struct{ TotalCount int }
			Fields struct{ TotalCount int }
			Sorted struct {
				Edges []struct {
					Node struct{ Cluster, Name string }
				}
			}
			Hidden, Shown *struct {
				Name    string
				Columns []struct{ Name, Value string }
			}
			Parent struct {
				Children []struct{ Kind, Name string }
			}
		}
		q := fmt.Sprintf(`{
		  byCluster: facets(by: CLUSTER) { value count }
		  byKind: facets(by: KIND) { value count }
		  byNamespace: facets(by: NAMESPACE) { value count }
		  byName: facets(by: FIELD, field: "metadata.name") { value count }
		  search: resources(filter: {search: "cm 0"}) { totalCount }
		  fields: resources(filter: {fieldSelector: "metadata.name in (cm-0,parent)"}) { totalCount }
		  sorted: resources(sort: [{field: "metadata.name", order: DESC}]) { edges { node { cluster name } } }
		  hidden: resource(cluster: "c1", kind: "ConfigMap", namespace: %q, name: "cm-0") { name columns { name value } }
		  shown: resource(cluster: "c1", kind: "ConfigMap", namespace: %q, name: "cm-0") { name columns { name value } }
		  parent: resource(cluster: "c1", kind: "ConfigMap", namespace: %q, name: "parent") { children { kind name } }
		}`, nsB, nsA, nsA)
		if err := f.query("alice", q, &d); err != nil {
			t.Fatal(err)
		}
		type facet = struct {
			Value string
			Count int
		}
		if diff := cmp.Diff([]facet{{"c1", 4}, {"c2", 2}}, d.ByCluster); diff != "" {
			t.Errorf("facets by cluster (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]facet{{"ConfigMap", 6}}, d.ByKind); diff != "" {
			t.Errorf("facets by kind (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]facet{{nsA, 6}}, d.ByNamespace); diff != "" {
			t.Errorf("facets by namespace (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]facet{{"cm-0", 2}, {"cm-1", 2}, {"child", 1}, {"parent", 1}}, d.ByName); diff != "" {
			t.Errorf("facets by field (-want +got):\n%s", diff)
		}
		if d.Search.TotalCount != 2 {
			t.Errorf("search finds %d objects, want alice's 2 cm-0", d.Search.TotalCount)
		}
		if d.Fields.TotalCount != 3 {
			t.Errorf("fieldSelector finds %d objects, want alice's 2 cm-0 and her parent", d.Fields.TotalCount)
		}
		var sorted []string
		for _, e := range d.Sorted.Edges {
			sorted = append(sorted, e.Node.Cluster+"/"+e.Node.Name)
		}
		if diff := cmp.Diff([]string{"c1/parent", "c1/cm-1", "c2/cm-1", "c1/cm-0", "c2/cm-0", "c1/child"}, sorted); diff != "" {
			t.Errorf("sorted by name, descending (-want +got):\n%s", diff)
		}
		if d.Shown != nil && (len(d.Shown.Columns) == 0 || d.Shown.Columns[0] != struct{ Name, Value string }{"Name", "cm-0"}) {
			t.Errorf("columns of cm-0 = %v, want Name cm-0 first", d.Shown.Columns)
		}
		if d.Hidden != nil || d.Shown == nil {
			t.Errorf("resource in team-b = %v (want null), in team-a = %v (want it)", d.Hidden, d.Shown)
		}
		if diff := cmp.Diff([]struct{ Kind, Name string }{{"ConfigMap", "child"}}, d.Parent.Children); diff != "" {
			t.Errorf("children of parent (-want +got; the owned Pod is hidden):\n%s", diff)
		}
	})

	t.Run("bob", func(t *testing.T) {
		got, total, _ := f.visible(t, "bob")
		want := []string{"c3/" + nsA + "/Pod/pod-0", "c3/" + nsB + "/Pod/pod-0"}
		if diff := cmp.Diff(want, got); diff != "" || total != 2 {
			t.Errorf("bob sees %d (-want +got):\n%s", total, diff)
		}
	})

	t.Run("cluster messages", func(t *testing.T) {
		var d struct {
			Clusters []struct {
				Name      string
				Resources []struct{ Resource string }
			}
		}
		if err := f.query("alice", `{ clusters { name resources { resource } } }`, &d); err != nil {
			t.Fatal(err)
		}
		if len(d.Clusters) != 3 {
			t.Errorf("alice sees %d clusters' health, want all 3", len(d.Clusters))
		}
	})

	// Subscriptions of every change, from one revision on: what each
	// caller receives is what its rights let through, nothing else. admin
	// sees everything: it witnesses that the changes the others must not
	// see reached the index before the marker that ends each scenario.
	var start struct{ Resources struct{ Revision string } }
	if err := f.query("admin", `{ resources(first: 1) { revision } }`, &start); err != nil {
		t.Fatal(err)
	}
	const everything = `subscription($since: String) { resourceEvents(since: $since) { type resource { cluster namespace kind name } } }`
	since := map[string]any{"since": start.Resources.Revision}
	admin := wsSubscribe(t, f.addr, token(t, "admin"), everything, since)
	alice := wsSubscribe(t, f.addr, token(t, "alice"), everything, since)
	bob := wsSubscribe(t, f.addr, token(t, "bob"), everything, since)

	t.Run("events", func(t *testing.T) {
		shown1, shown2 := obj{"c2", nsA, "ConfigMap", "shown-1"}, obj{"c1", nsA, "ConfigMap", "shown-2"}
		gone := obj{"c1", nsA, "ConfigMap", "gone"}
		hidden1, hidden2 := obj{"c1", nsB, "ConfigMap", "hidden-1"}, obj{"c3", nsA, "ConfigMap", "hidden-2"}
		hiddenGone := obj{"c3", nsB, "ConfigMap", "hidden-gone"}
		podC1, podC3 := obj{"c1", nsA, "Pod", "pod-c1"}, obj{"c3", nsB, "Pod", "pod-c3"}
		for _, o := range []obj{hidden1, hidden2, hiddenGone, podC1, podC3, shown1, shown2, gone} {
			f.create(t, o)
		}
		for _, o := range []obj{hidden1, podC1, podC3, shown2} {
			f.edit(t, o)
		}
		f.remove(t, hiddenGone)
		f.remove(t, gone)
		admin.await(t, added(hidden1, hidden2, hiddenGone, podC1, podC3, shown1, shown2, gone),
			modified(hidden1, podC1, podC3, shown2), deleted(hiddenGone, gone))
		// bob's marker first: alice's events up to hers cover it.
		bobMarker, aliceMarker := obj{"c3", nsA, "Pod", "marker-bob"}, obj{"c1", nsA, "ConfigMap", "marker-alice"}
		f.mark(t, admin, bobMarker)
		f.mark(t, admin, aliceMarker)
		for _, tt := range []struct {
			name   string
			stream *eventStream
			marker obj
			want   []event
		}{
			{"alice", alice, aliceMarker, []event{
				{"ADDED", shown1}, {"ADDED", shown2}, {"ADDED", gone}, {"MODIFIED", shown2}, {"DELETED", gone}, {"ADDED", aliceMarker},
			}},
			{"bob", bob, bobMarker, []event{{"ADDED", podC3}, {"MODIFIED", podC3}, {"ADDED", bobMarker}}},
		} {
			if diff := cmp.Diff(byCluster(tt.want), byCluster(tt.stream.upTo(t, tt.marker))); diff != "" {
				t.Errorf("%s's events up to the marker (-want +got; nothing of other namespaces, clusters or types):\n%s", tt.name, diff)
			}
		}
	})

	t.Run("revocation", func(t *testing.T) {
		// Each round asks for alice's results, then makes a change in the
		// namespace revoked and a marker after it; rounds go on until one
		// begins past the bound, whose change must not reach alice, nor
		// its query show c2. Times count from the deletion's return:
		// a query sent, a change requested, from then on. What is checked
		// against the bound is the last moment c2 still showed: a round
		// takes a second or more on a busy machine, so the first round
		// that no longer shows it may begin past the bound although
		// nothing showed past it.
		if err := deleteBindings(t.Context(), f.kube["c2"], nsA, "alice"); err != nil {
			t.Fatal(err)
		}
		deleted := time.Now()
		bound := authzTTL + revocationMargin
		var resultsStopped, eventsStopped time.Duration // 0 until seen
		var resultsShown, eventsShown time.Duration     // the last moment c2 showed
		at := func(d time.Duration) string {
			if d == 0 {
				return "not yet"
			}
			return d.Round(time.Millisecond).String()
		}
		shownAt := func(d time.Duration) string {
			if d == 0 {
				return "never"
			}
			return at(d)
		}
		round := 1
		for ; ; round++ {
			began := time.Since(deleted)
			got, _, _ := f.visible(t, "alice")
			c2 := slices.ContainsFunc(got, func(o string) bool { return strings.HasPrefix(o, "c2/") })
			switch {
			case c2 && resultsStopped > 0:
				t.Fatalf("alice's c2 objects back in a query sent %s after the deletion (gone from %s): %v", at(began), at(resultsStopped), got)
			case !c2 && resultsStopped == 0:
				resultsStopped = began
			case c2:
				resultsShown = began
			}

			probe := obj{"c2", nsA, "ConfigMap", fmt.Sprintf("after-revocation-%d", round)}
			made := time.Since(deleted)
			f.create(t, probe)
			admin.await(t, added(probe))
			marker := obj{"c1", nsA, "ConfigMap", fmt.Sprintf("marker-revocation-%d", round)}
			f.mark(t, admin, marker)
			hidden, shown := []event{{"ADDED", marker}}, []event{{"ADDED", probe}, {"ADDED", marker}}
			switch events := alice.upTo(t, marker); {
			case cmp.Equal(hidden, events):
				if eventsStopped == 0 {
					eventsStopped = made
				}
			case cmp.Equal(shown, events) && eventsStopped == 0:
				eventsShown = made
			default:
				t.Fatalf("alice's events of a change made %s after the deletion (c2's stopped from: %s): %v, want %v",
					at(made), at(eventsStopped), events, hidden)
			}
			if began > bound {
				break
			}
		}
		t.Logf("alice's c2 objects left her results between %s and %s after the deletion of her RoleBinding, her events from changes made between %s and %s after it (decision TTL %s, bound %s, %d rounds)",
			shownAt(resultsShown), at(resultsStopped), shownAt(eventsShown), at(eventsStopped), authzTTL, bound, round)
		for _, s := range []struct {
			what           string
			shown, stopped time.Duration
		}{{"results", resultsShown, resultsStopped}, {"events", eventsShown, eventsStopped}} {
			if s.stopped == 0 || s.shown > bound {
				t.Errorf("alice's c2 %s still showed %s after the deletion (stopped from %s), want within %s (decision TTL %s + %s)", s.what, shownAt(s.shown), at(s.stopped), bound, authzTTL, revocationMargin)
			}
		}

		// The rest of alice's results stays: her ConfigMaps of c1.
		all, _, _ := f.visible(t, "admin")
		var want []string
		for _, o := range all {
			if strings.HasPrefix(o, "c1/"+nsA+"/ConfigMap/") {
				want = append(want, o)
			}
		}
		got, _, _ := f.visible(t, "alice")
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("alice's results after the revocation (-want +got):\n%s", diff)
		}
	})

	t.Run("nothing more", func(t *testing.T) {
		// bob's stream since his last marker: the revocation's changes
		// are all hidden from him.
		marker := obj{"c3", nsB, "Pod", "marker-bob-last"}
		f.mark(t, admin, marker)
		if diff := cmp.Diff([]event{{"ADDED", marker}}, bob.upTo(t, marker)); diff != "" {
			t.Errorf("bob's events up to his last marker (-want +got):\n%s", diff)
		}
	})
}

// Decisions are cached for authzTTL; a revoked right must stop showing
// within it plus revocationMargin (the RBAC informers of the member, a
// query or a round of changes in flight).
const (
	authzTTL         = time.Second
	revocationMargin = 1500 * time.Millisecond
)

// obj names a ConfigMap or Pod of the fixture's clusters.
type obj struct{ Cluster, Namespace, Kind, Name string }

func (o obj) String() string { return o.Cluster + "/" + o.Namespace + "/" + o.Kind + "/" + o.Name }

// objects returns the client of o's kind in o's cluster and namespace.
func (f *authFixture) objects(o obj) dynamic.ResourceInterface {
	resource := map[string]string{"ConfigMap": "configmaps", "Pod": "pods"}[o.Kind]
	return f.dyn[o.Cluster].Resource(schema.GroupVersionResource{Version: "v1", Resource: resource}).Namespace(o.Namespace)
}

// create makes o, deleted when the fixture's test ends unless remove
// deleted it before.
func (f *authFixture) create(t *testing.T, o obj) {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": o.Kind, "metadata": map[string]any{"name": o.Name}}}
	if o.Kind == "Pod" {
		u.Object["spec"] = map[string]any{"containers": []any{map[string]any{"name": "c", "image": "example"}}}
	}
	if _, err := f.objects(o).Create(t.Context(), u, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create %s: %v", o, err)
	}
	f.top.Cleanup(func() {
		if f.removed[o] {
			return
		}
		if err := f.objects(o).Delete(context.Background(), o.Name, metav1.DeleteOptions{}); err != nil {
			f.top.Errorf("delete %s: %v", o, err)
		}
	})
}

// edit labels o: a MODIFIED event.
func (f *authFixture) edit(t *testing.T, o obj) {
	t.Helper()
	patch := []byte(`{"metadata":{"labels":{"edited":"true"}}}`)
	if _, err := f.objects(o).Patch(t.Context(), o.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("edit %s: %v", o, err)
	}
}

// remove deletes o, made by create.
func (f *authFixture) remove(t *testing.T, o obj) {
	t.Helper()
	if err := f.objects(o).Delete(t.Context(), o.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete %s: %v", o, err)
	}
	f.removed[o] = true
}

// mark creates marker and waits until witness (admin's stream) receives
// it: it is then in the index after every change before it, and every
// subscription receives it after them.
func (f *authFixture) mark(t *testing.T, witness *eventStream, marker obj) {
	t.Helper()
	f.create(t, marker)
	witness.await(t, added(marker))
}

// event is a resourceEvents payload, as these tests compare them.
type event struct {
	Type   string
	Object obj
}

func (e event) String() string { return e.Type + " " + e.Object.String() }

func added(objs ...obj) []event    { return eventsOf("ADDED", objs) }
func modified(objs ...obj) []event { return eventsOf("MODIFIED", objs) }
func deleted(objs ...obj) []event  { return eventsOf("DELETED", objs) }

func eventsOf(typ string, objs []obj) []event {
	out := make([]event, len(objs))
	for i, o := range objs {
		out[i] = event{typ, o}
	}
	return out
}

// byCluster sorts events by cluster, keeping the order of each cluster's:
// the changes of two clusters reach the index through two watches, in
// either order.
func byCluster(events []event) []event {
	out := slices.Clone(events)
	slices.SortStableFunc(out, func(a, b event) int { return strings.Compare(a.Object.Cluster, b.Object.Cluster) })
	return out
}

// eventStream is a subscription over a WebSocket.
type eventStream struct {
	conn *websocket.Conn
	ctx  context.Context
}

// wsSubscribe subscribes over a WebSocket as the owner of tok.
func wsSubscribe(t *testing.T, addr, tok, query string, vars map[string]any) *eventStream {
	t.Helper()
	c, _, err := websocket.Dial(t.Context(), "ws://"+addr+"/graphql", &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CloseNow() })
	sub, _ := json.Marshal(map[string]any{"type": "subscribe", "id": "1", "payload": map[string]any{"query": query, "variables": vars}})
	for _, msg := range []string{fmt.Sprintf(`{"type":"connection_init","payload":{"authorization":"Bearer %s"}}`, tok), string(sub)} {
		if err := c.Write(t.Context(), websocket.MessageText, []byte(msg)); err != nil {
			t.Fatal(err)
		}
	}
	return &eventStream{conn: c, ctx: t.Context()}
}

// next reads the next event, failing after 30s.
func (s *eventStream) next(t *testing.T) event {
	t.Helper()
	// A Read cut by its context closes the connection: only on failure.
	ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
	defer cancel()
	for {
		_, data, err := s.conn.Read(ctx)
		if err != nil {
			t.Fatalf("read event: %v", err)
		}
		var m struct {
			Type    string
			Payload struct {
				Data *struct {
					ResourceEvents struct {
						Type     string
						Resource obj
					}
				}
				Errors []any
			}
		}
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		switch {
		case m.Type == "next" && m.Payload.Data != nil:
			e := m.Payload.Data.ResourceEvents
			return event{e.Type, e.Resource}
		case m.Type == "error" || len(m.Payload.Errors) > 0:
			t.Fatalf("subscription failed: %s", data)
		}
		// connection_ack, pings, heartbeats
	}
}

// upTo reads the events up to marker's ADDED, which it returns last.
func (s *eventStream) upTo(t *testing.T, marker obj) []event {
	t.Helper()
	var out []event
	for {
		e := s.next(t)
		out = append(out, e)
		if e == (event{"ADDED", marker}) {
			return out
		}
	}
}

// await reads events until every one of want has come, in any order,
// passing over others: it witnesses changes, it does not check a stream.
func (s *eventStream) await(t *testing.T, want ...[]event) {
	t.Helper()
	missing := map[event]int{}
	for _, es := range want {
		for _, e := range es {
			missing[e]++
		}
	}
	for len(missing) > 0 {
		e := s.next(t)
		if missing[e]--; missing[e] <= 0 {
			delete(missing, e)
		}
	}
}

// TestAuthorizationUnreachableMember stops a member cluster: its access
// reviews fail, so its objects are hidden and the answer says so.
func TestAuthorizationUnreachableMember(t *testing.T) {
	env := testbed.Env(t)
	f := startAuthFixture(t)
	if got, _, _ := f.visible(t, "bob"); len(got) != 2 {
		t.Fatalf("bob sees %v before the outage, want his two Pods", got)
	}
	c3 := env.Cluster("c3")
	if err := c3.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c3.Restart(context.WithoutCancel(t.Context())); err != nil {
			t.Errorf("restart c3: %v", err)
		}
	})
	testcluster.Eventually(t, 30*time.Second, "c3 denied once its decisions expire", func() (bool, string) {
		got, total, denied := f.visible(t, "bob")
		return len(got) == 0 && total == 0 && slices.Equal(denied, []string{"c3"}), fmt.Sprint(got, total, denied)
	})
	var d struct{ Resource *struct{ Name string } }
	status, r, err := f.post(token(t, "bob"), fmt.Sprintf(`{ resource(cluster: "c3", kind: "Pod", namespace: %q, name: "pod-0") { name } }`, nsA))
	if err != nil || status != http.StatusOK {
		t.Fatalf("resource query: %d %v", status, err)
	}
	_ = json.Unmarshal(r.Data, &d)
	if d.Resource != nil || len(r.Errors) != 1 || r.Errors[0].Extensions.Code != "ACCESS_REVIEW_FAILED" {
		t.Errorf("resource of an unreachable member: %+v %+v, want null and ACCESS_REVIEW_FAILED", d.Resource, r.Errors)
	}
}

// TestAuthorizationPolicy decides by the rules of the configuration, not by
// the member clusters: alice gets what the rules give, whatever her RBAC.
func TestAuthorizationPolicy(t *testing.T) {
	f := startAuthFixtureWith(t, func(a *app.AuthOptions) {
		a.Authz = app.AuthzPolicy
		a.PolicyRules = []authz.Rule{
			{Users: []string{"alice"}, Clusters: []string{"c3"}, Namespaces: []string{nsB}, Resources: []string{"pods"}},
			{Groups: []string{"system:masters"}},
		}
	})
	got, total, _ := f.visible(t, "alice")
	if want := []string{"c3/" + nsB + "/Pod/pod-0"}; !slices.Equal(got, want) || total != 1 {
		t.Errorf("alice sees %v (%d), want %v: the policy, not her RBAC", got, total, want)
	}
	if got, _, _ := f.visible(t, "bob"); len(got) != 0 {
		t.Errorf("bob, in no rule, sees %v", got)
	}
	if got, _, _ := f.visible(t, "admin"); len(got) < 12 {
		t.Errorf("admin (group system:masters) sees %d objects, want all of them", len(got))
	}
}

// deleteBindings deletes the RoleBindings of namespace that name user.
func deleteBindings(ctx context.Context, kube kubernetes.Interface, namespace, user string) error {
	list, err := kube.RbacV1().RoleBindings(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, b := range list.Items {
		for _, s := range b.Subjects {
			if s.Name == user {
				if err := kube.RbacV1().RoleBindings(namespace).Delete(ctx, b.Name, metav1.DeleteOptions{}); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func TestAuthentication(t *testing.T) {
	f := startAuthFixture(t)

	// An "expired" token: a ServiceAccount token bound to a Secret, which is
	// deleted. The API server rejects it from then on.
	kube := f.kube["c1"]
	ctx := t.Context()
	if _, err := kube.CoreV1().ServiceAccounts(nsA).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "portal"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bound, err := kube.CoreV1().Secrets(nsA).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "portal-session"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := kube.CoreV1().ServiceAccounts(nsA).CreateToken(ctx, "portal", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Secret", APIVersion: "v1", Name: bound.Name, UID: bound.UID},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if status, _, err := f.post(tr.Status.Token, `{ clusters { name } }`); err != nil || status != http.StatusOK {
		t.Fatalf("the bound token before its Secret is deleted: %d %v", status, err)
	}
	if err := kube.CoreV1().Secrets(nsA).Delete(ctx, bound.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	for _, tt := range []struct{ name, token string }{
		{"no token", ""},
		{"wrong token", "not-a-token"},
		{"expired token", tr.Status.Token},
	} {
		t.Run(tt.name, func(t *testing.T) {
			testcluster.Eventually(t, 15*time.Second, "401", func() (bool, string) {
				status, r, err := f.post(tt.token, `{ resources { totalCount edges { node { name } } } }`)
				ok := err == nil && status == http.StatusUnauthorized && len(r.Errors) == 1 &&
					r.Errors[0].Extensions.Code == "UNAUTHENTICATED" && (len(r.Data) == 0 || string(r.Data) == "null")
				return ok, fmt.Sprintf("%d %s %+v %v", status, r.Data, r.Errors, err)
			})
			code := wsInit(t, f.addr, tt.token)
			if code != 4403 {
				t.Errorf("WebSocket init: close %d, want 4403", code)
			}
		})
	}
	t.Run("token in connection_init", func(t *testing.T) {
		if code := wsInit(t, f.addr, token(t, "alice")); code != 0 {
			t.Errorf("WebSocket init with alice's token: close %d, want connection_ack", code)
		}
	})
}

// wsInit opens a WebSocket, sends connection_init with the token in its
// payload, and returns the close code, or 0 if the server acknowledged it.
func wsInit(t *testing.T, addr, tok string) websocket.StatusCode {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws://"+addr+"/graphql", &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	init := `{"type":"connection_init"}`
	if tok != "" {
		init = fmt.Sprintf(`{"type":"connection_init","payload":{"authorization":"Bearer %s"}}`, tok)
	}
	if err := c.Write(ctx, websocket.MessageText, []byte(init)); err != nil {
		t.Fatal(err)
	}
	_, data, err := c.Read(ctx)
	if err != nil {
		return websocket.CloseStatus(err)
	}
	if !strings.Contains(string(data), "connection_ack") {
		t.Errorf("unexpected message %s", data)
	}
	return 0
}
