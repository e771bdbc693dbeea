package api_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/fleetcache/fleetcache/internal/app"
	"github.com/fleetcache/fleetcache/internal/apptest"
	"github.com/fleetcache/fleetcache/internal/testcluster"
)

// cached are the types the real-server tests cache, with their kind names.
var cached = []struct {
	resource string
	gvr      schema.GroupVersionResource
	kind     string // Type.KindName()
}{
	{"namespaces", schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, "Namespace"},
	{"configmaps", schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, "ConfigMap"},
	{"pods", schema.GroupVersionResource{Version: "v1", Resource: "pods"}, "Pod"},
	{"deployments.apps", schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, "Deployment.apps"},
	{"replicasets.apps", schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}, "ReplicaSet.apps"},
}

// fleet is the aggregator over the three test clusters, with its HTTP
// handler (GraphQL at /graphql) served on 127.0.0.1.
type fleet struct {
	*app.Aggregator
	url string
	// stop stops the aggregator and the HTTP server; it also runs when the
	// test ends.
	stop func()
}

// newFleet starts an aggregator with opts over the three test clusters.
func newFleet(t *testing.T, opts app.Options) *fleet {
	t.Helper()
	f := apptest.Start(t, testbed.Env(t), opts)
	return &fleet{Aggregator: f.Aggregator, url: f.URL + "/graphql", stop: f.Stop}
}

func startFleet(t *testing.T, resources ...string) *fleet {
	t.Helper()
	return newFleet(t, app.Options{Informers: apptest.Informers(resources...)})
}

// gqlError is an error of a GraphQL response.
type gqlError struct {
	Message    string
	Extensions struct{ Code string }
}

// query posts a query and decodes the response's data into out (if not
// nil). It returns the response's errors.
func (f *fleet) query(t *testing.T, q string, vars map[string]any, out any) []gqlError {
	t.Helper()
	return f.queryAs(t, "", q, vars, out)
}

// queryAs is query with a bearer token ("" for none).
func (f *fleet) queryAs(t *testing.T, token, q string, vars map[string]any, out any) []gqlError {
	t.Helper()
	body, err := json.Marshal(map[string]any{"query": q, "variables": vars})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, f.url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/graphql-response+json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var r struct {
		Data   json.RawMessage
		Errors []gqlError
	}
	if err := json.NewDecoder(res.Body).Decode(&r); err != nil {
		t.Fatalf("decode response (status %d): %v", res.StatusCode, err)
	}
	if out != nil && len(r.Data) > 0 {
		if err := json.Unmarshal(r.Data, out); err != nil {
			t.Fatalf("decode data %s: %v", r.Data, err)
		}
	}
	return r.Errors
}

// mustQuery is query for queries that must succeed.
func (f *fleet) mustQuery(t *testing.T, q string, vars map[string]any, out any) {
	t.Helper()
	if errs := f.query(t, q, vars, out); len(errs) > 0 {
		t.Fatalf("query failed: %+v\nquery: %s", errs, q)
	}
}

func (f *fleet) waitSynced(t *testing.T) {
	t.Helper()
	env := testbed.Env(t)
	testcluster.Eventually(t, 90*time.Second, "every cluster SYNCED", func() (bool, string) {
		var got struct {
			Clusters []struct{ Name, Status string }
		}
		f.mustQuery(t, `{ clusters { name status } }`, nil, &got)
		synced := 0
		for _, c := range got.Clusters {
			if c.Status == "SYNCED" {
				synced++
			}
		}
		return synced == len(env.Clusters()), fmt.Sprint(got.Clusters)
	})
}

// item is one object, as the oracle and the API report it.
type item struct {
	Cluster, Kind, Namespace, Name, UID string
	labels                              labels.Set
	owners                              []string
}

func (i item) String() string { return i.Cluster + "/" + i.Namespace + "/" + i.Name + " " + i.Kind }

func compareItems(a, b item) int {
	return cmp.Or(cmp.Compare(a.Cluster, b.Cluster), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Kind, b.Kind))
}

func dyn(t testing.TB, c *testcluster.Cluster) dynamic.Interface {
	t.Helper()
	return testcluster.Dynamic(t, c.AdminConfig())
}

// oracle lists every cached type from every API server, in index order.
func oracle(t *testing.T) []item {
	t.Helper()
	env := testbed.Env(t)
	var out []item
	for _, c := range env.Clusters() {
		d := dyn(t, c)
		for _, ty := range cached {
			list, err := d.Resource(ty.gvr).List(t.Context(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, u := range list.Items {
				it := item{Cluster: c.Name(), Kind: ty.kind, Namespace: u.GetNamespace(), Name: u.GetName(), UID: string(u.GetUID()), labels: u.GetLabels()}
				for _, r := range u.GetOwnerReferences() {
					it.owners = append(it.owners, string(r.UID))
				}
				out = append(out, it)
			}
		}
	}
	slices.SortFunc(out, compareItems)
	return out
}

// filter is a ResourceFilter and its meaning, for the oracle.
type filter struct {
	Clusters      []string `json:"clusters,omitempty"`
	Kinds         []string `json:"kinds,omitempty"`
	Namespaces    []string `json:"namespaces,omitempty"`
	LabelSelector string   `json:"labelSelector,omitempty"`
	NameContains  string   `json:"nameContains,omitempty"`
	OwnerUID      string   `json:"ownerUid,omitempty"`
	FieldSelector string   `json:"fieldSelector,omitempty"`
	Search        string   `json:"search,omitempty"`
}

func (f filter) vars() map[string]any {
	var m map[string]any
	b, _ := json.Marshal(f)
	_ = json.Unmarshal(b, &m)
	return m
}

func (f filter) matches(t *testing.T, i item) bool {
	t.Helper()
	sel, err := labels.Parse(f.LabelSelector)
	if err != nil {
		t.Fatal(err)
	}
	kindOK := len(f.Kinds) == 0
	for _, k := range f.Kinds {
		bare, _, _ := strings.Cut(i.Kind, ".")
		kindOK = kindOK || k == i.Kind || (!strings.Contains(k, ".") && k == bare)
	}
	return (len(f.Clusters) == 0 || slices.Contains(f.Clusters, i.Cluster)) && kindOK &&
		(len(f.Namespaces) == 0 || slices.Contains(f.Namespaces, i.Namespace)) &&
		sel.Matches(i.labels) && strings.Contains(i.Name, f.NameContains) &&
		(f.OwnerUID == "" || slices.Contains(i.owners, f.OwnerUID))
}

// pageQuery pages through resources.
const pageQuery = `query($filter: ResourceFilter, $sort: [ResourceSort!], $first: Int, $after: String) {
  resources(filter: $filter, sort: $sort, first: $first, after: $after) {
    edges { node { cluster kind resource namespace name uid } }
    pageInfo { hasNextPage endCursor }
    totalCount revision staleClusters
  }
}`

type connection struct {
	Edges []struct {
		Node struct {
			Cluster, Kind, Resource, Name, UID string
			Namespace                          *string
		}
	}
	PageInfo struct {
		HasNextPage bool
		EndCursor   *string
	}
	TotalCount    int
	Revision      string
	StaleClusters []string
}

// items returns the page's objects as items, with the kind as a filter
// names it (Kind plus the resource's group).
func (c connection) items() []item {
	var out []item
	for _, e := range c.Edges {
		n := e.Node
		kind := n.Kind
		if _, group, ok := strings.Cut(n.Resource, "."); ok {
			kind += "." + group
		}
		ns := ""
		if n.Namespace != nil {
			ns = *n.Namespace
		}
		out = append(out, item{Cluster: n.Cluster, Kind: kind, Namespace: ns, Name: n.Name, UID: n.UID})
	}
	return out
}

// list pages through every object matching f, size at a time, and returns
// them with the first page's totalCount.
func (f *fleet) list(t *testing.T, flt filter, size int) ([]item, int) {
	t.Helper()
	return f.listSorted(t, flt, nil, size, nil)
}

// listSorted is list in the order of sort (nil: none), calling between
// after each page but the last.
func (f *fleet) listSorted(t *testing.T, flt filter, sort []any, size int, between func()) ([]item, int) {
	t.Helper()
	vars := map[string]any{"filter": flt.vars(), "sort": sort, "first": size}
	var out []item
	total := -1
	for {
		var got struct{ Resources connection }
		f.mustQuery(t, pageQuery, vars, &got)
		if total < 0 {
			total = got.Resources.TotalCount
		}
		out = append(out, got.Resources.items()...)
		if !got.Resources.PageInfo.HasNextPage {
			return out, total
		}
		vars["after"] = *got.Resources.PageInfo.EndCursor
		if between != nil {
			between()
		}
	}
}

func strs(items []item) []string {
	out := []string{}
	for _, i := range items {
		out = append(out, i.String()+" "+i.UID)
	}
	return out
}

func createNamespace(t *testing.T, d dynamic.Interface, name string) {
	t.Helper()
	create(t, d, cached[0].gvr, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name, "labels": map[string]any{"fleetcache-test": "graphql"}},
	}})
}

// create creates u, or returns the existing object of that name.
func create(t testing.TB, d dynamic.Interface, gvr schema.GroupVersionResource, u *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	r := d.Resource(gvr).Namespace(u.GetNamespace())
	out, err := r.Create(context.Background(), u, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		out, err = r.Get(context.Background(), u.GetName(), metav1.GetOptions{})
	}
	if err != nil {
		t.Fatalf("create %s %s/%s: %v", gvr.Resource, u.GetNamespace(), u.GetName(), err)
	}
	return out
}

func configMap(ns, name string, lbls map[string]any, data map[string]any) *unstructured.Unstructured {
	meta := map[string]any{"namespace": ns, "name": name}
	if lbls != nil {
		meta["labels"] = lbls
	}
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}}
}

func podSpec() map[string]any {
	return map[string]any{"containers": []any{map[string]any{"name": "web", "image": "registry.example/web:1"}}}
}

func ownerRef(u *unstructured.Unstructured) map[string]any {
	return map[string]any{"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(), "name": u.GetName(), "uid": string(u.GetUID()), "controller": true}
}

// workload is a Deployment, its ReplicaSet and its two Pods, created by the
// test with real owner references (no controller-manager runs).
type workload struct {
	deployment, replicaSet *unstructured.Unstructured
	pods                   []*unstructured.Unstructured
}

func createWorkload(t *testing.T, d dynamic.Interface, ns string) workload {
	t.Helper()
	sel := map[string]any{"app": "web"}
	template := map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "web", "tier": "fe"}}, "spec": podSpec()}
	var w workload
	w.deployment = create(t, d, cached[3].gvr, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"namespace": ns, "name": "web", "labels": map[string]any{"app": "web"}},
		"spec":     map[string]any{"replicas": int64(2), "selector": map[string]any{"matchLabels": sel}, "template": template},
	}})
	w.replicaSet = create(t, d, cached[4].gvr, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "ReplicaSet",
		"metadata": map[string]any{"namespace": ns, "name": "web-5d8f", "labels": map[string]any{"app": "web", "pod-template-hash": "5d8f"},
			"ownerReferences": []any{ownerRef(w.deployment)}},
		"spec": map[string]any{"replicas": int64(2), "selector": map[string]any{"matchLabels": sel}, "template": template},
	}})
	for _, name := range []string{"web-5d8f-a", "web-5d8f-b"} {
		w.pods = append(w.pods, create(t, d, cached[2].gvr, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"namespace": ns, "name": name, "labels": map[string]any{"app": "web", "tier": "fe", "pod-template-hash": "5d8f"},
				"ownerReferences": []any{ownerRef(w.replicaSet)}},
			"spec": podSpec(),
		}}))
	}
	return w
}

// setup creates the objects the query tests read: in every cluster,
// namespace gq with ConfigMaps cm-0…cm-3 (app=web or db, tier=fe or be)
// and identity (data.cluster = the cluster's name); in c2 also
// gq/canary (app=web, canary=true); in c1 a workload in gq.
func setup(t *testing.T) workload {
	t.Helper()
	env := testbed.Env(t)
	var w workload
	for _, c := range env.Clusters() {
		d := dyn(t, c)
		createNamespace(t, d, "gq")
		for i := range 4 {
			app, tier := []string{"web", "db"}[i%2], []string{"fe", "be"}[i/2]
			create(t, d, cached[1].gvr, configMap("gq", fmt.Sprintf("cm-%d", i), map[string]any{"app": app, "tier": tier}, nil))
		}
		create(t, d, cached[1].gvr, configMap("gq", "identity", nil, map[string]any{"cluster": c.Name()}))
		if c.Name() == "c2" {
			create(t, d, cached[1].gvr, configMap("gq", "canary", map[string]any{"app": "web", "tier": "fe", "canary": "true"}, nil))
		}
		if c.Name() == "c1" {
			w = createWorkload(t, d, "gq")
		}
	}
	return w
}

// waitConverged waits until the API lists exactly what the API servers do.
func (f *fleet) waitConverged(t *testing.T) []item {
	t.Helper()
	var want []item
	testcluster.Eventually(t, 60*time.Second, "the index to hold what the API servers list", func() (bool, string) {
		want = oracle(t)
		got, _ := f.list(t, filter{}, 1000)
		diff := gocmp.Diff(strs(want), strs(got))
		return diff == "", "(-servers +api):\n" + diff
	})
	return want
}

func TestFiltersOnRealClusters(t *testing.T) {
	env := testbed.Env(t)
	w := setup(t)
	f := startFleet(t, "namespaces", "configmaps", "pods", "deployments.apps", "replicasets.apps")
	f.waitSynced(t)
	all := f.waitConverged(t)
	for _, tc := range []struct {
		name   string
		filter filter
		min    int // the oracle must find at least this many: the case tests something
	}{
		{name: "clusters", filter: filter{Clusters: []string{"c2"}}, min: 10},
		{name: "kinds", filter: filter{Kinds: []string{"ConfigMap"}}, min: 15},
		{name: "kinds with group", filter: filter{Kinds: []string{"ReplicaSet.apps", "Deployment.apps"}}, min: 2},
		{name: "bare kind of a group", filter: filter{Kinds: []string{"Deployment"}}, min: 1},
		{name: "namespaces", filter: filter{Namespaces: []string{"gq"}}, min: 19},
		{name: "cluster-scoped", filter: filter{Namespaces: []string{""}}, min: 12},
		{name: "label selector", filter: filter{LabelSelector: "app=web,tier in (fe),!canary"}, min: 5},
		{name: "label exists", filter: filter{LabelSelector: "canary"}, min: 1},
		{name: "name contains", filter: filter{NameContains: "5d8f"}, min: 3},
		{name: "owner uid", filter: filter{OwnerUID: string(w.replicaSet.GetUID())}, min: 2},
		{name: "combined", filter: filter{Clusters: []string{"c1", "c2"}, Kinds: []string{"ConfigMap", "Pod"}, Namespaces: []string{"gq"},
			LabelSelector: "tier=fe", NameContains: "-"}, min: 5},
		{name: "nothing", filter: filter{Clusters: []string{"c1"}, LabelSelector: "app=none"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want []item
			for _, i := range all {
				if tc.filter.matches(t, i) {
					want = append(want, i)
				}
			}
			if len(want) < tc.min {
				t.Fatalf("the oracle finds %d objects, want at least %d: the case proves nothing", len(want), tc.min)
			}
			got, total := f.list(t, tc.filter, 7)
			if diff := gocmp.Diff(strs(want), strs(got)); diff != "" {
				t.Errorf("objects (-servers +api):\n%s", diff)
			}
			if total != len(want) {
				t.Errorf("totalCount = %d, want %d", total, len(want))
			}
		})
	}

	t.Run("facets", func(t *testing.T) {
		type facet struct {
			Value string
			Count int
		}
		count := func(flt filter, key func(item) (string, bool)) []facet {
			m := map[string]int{}
			for _, i := range all {
				if v, ok := key(i); ok && flt.matches(t, i) {
					m[v]++
				}
			}
			out := []facet{}
			for v, n := range m {
				out = append(out, facet{v, n})
			}
			slices.SortFunc(out, func(a, b facet) int { return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Value, b.Value)) })
			return out
		}
		gq := filter{Namespaces: []string{"gq"}}
		for _, tc := range []struct {
			name, args string
			vars       map[string]any
			want       []facet
		}{
			{name: "cluster", args: `by: CLUSTER, filter: $filter`, vars: map[string]any{"filter": gq.vars()},
				want: count(gq, func(i item) (string, bool) { return i.Cluster, true })},
			{name: "namespace", args: `by: NAMESPACE, filter: $filter`, vars: map[string]any{"filter": filter{}.vars()},
				want: count(filter{}, func(i item) (string, bool) { return i.Namespace, true })},
			{name: "kind", args: `by: KIND, filter: $filter`, vars: map[string]any{"filter": filter{Clusters: []string{"c1"}}.vars()},
				want: count(filter{Clusters: []string{"c1"}}, func(i item) (string, bool) { return i.Kind, true })},
			{name: "label", args: `by: LABEL, labelKey: "app", filter: $filter`, vars: map[string]any{"filter": gq.vars()},
				want: count(gq, func(i item) (string, bool) { v, ok := i.labels["app"]; return v, ok })},
		} {
			t.Run(tc.name, func(t *testing.T) {
				var got struct{ Facets []facet }
				f.mustQuery(t, `query($filter: ResourceFilter) { facets(`+tc.args+`) { value count } }`, tc.vars, &got)
				if diff := gocmp.Diff(tc.want, got.Facets); diff != "" {
					t.Errorf("facets (-servers +api):\n%s", diff)
				}
			})
		}
	})

	t.Run("owners and children", func(t *testing.T) {
		type ref struct{ Kind, Name, UID string }
		type node struct {
			UID      string
			Owners   []ref
			Children []ref
		}
		var got struct{ D, RS, Pod node }
		f.mustQuery(t, `{
			d: resource(cluster: "c1", kind: "Deployment.apps", namespace: "gq", name: "web") { uid owners { kind name uid } children { kind name uid } }
			rs: resource(cluster: "c1", kind: "ReplicaSet.apps", namespace: "gq", name: "web-5d8f") { uid owners { kind name uid } children { kind name uid } }
			pod: resource(cluster: "c1", kind: "Pod", namespace: "gq", name: "web-5d8f-a") { uid owners { kind name uid } children { kind name uid } }
		}`, nil, &got)
		r := func(u *unstructured.Unstructured) ref { return ref{u.GetKind(), u.GetName(), string(u.GetUID())} }
		want := struct{ D, RS, Pod node }{
			D:   node{UID: string(w.deployment.GetUID()), Owners: []ref{}, Children: []ref{r(w.replicaSet)}},
			RS:  node{UID: string(w.replicaSet.GetUID()), Owners: []ref{r(w.deployment)}, Children: []ref{r(w.pods[0]), r(w.pods[1])}},
			Pod: node{UID: string(w.pods[0].GetUID()), Owners: []ref{r(w.replicaSet)}, Children: []ref{}},
		}
		if diff := gocmp.Diff(want, got); diff != "" {
			t.Errorf("owners and children (-want +got):\n%s", diff)
		}
	})

	t.Run("resource by key", func(t *testing.T) {
		for _, c := range env.Clusters() {
			var got struct {
				CM *struct {
					UID    string
					Object struct {
						Data     map[string]string
						Metadata map[string]any
					}
				}
				NS *struct {
					Namespace *string
					Name      string
				}
			}
			f.mustQuery(t, `query($c: String!) {
				cm: resource(cluster: $c, kind: "ConfigMap", namespace: "gq", name: "identity") { uid object }
				ns: resource(cluster: $c, kind: "Namespace", name: "gq") { namespace name }
			}`, map[string]any{"c": c.Name()}, &got)
			u, err := dyn(t, c).Resource(cached[1].gvr).Namespace("gq").Get(t.Context(), "identity", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got.CM == nil || got.CM.UID != string(u.GetUID()) || got.CM.Object.Data["cluster"] != c.Name() {
				t.Errorf("%s: identity = %+v, want UID %s and data.cluster %s", c.Name(), got.CM, u.GetUID(), c.Name())
			}
			if got.CM != nil && got.CM.Object.Metadata["managedFields"] != nil {
				t.Errorf("%s: object carries managedFields", c.Name())
			}
			if got.NS == nil || got.NS.Namespace != nil || got.NS.Name != "gq" {
				t.Errorf("%s: namespace gq = %+v, want a cluster-scoped object", c.Name(), got.NS)
			}
		}
	})
}

func TestStaleClustersOnRealClusters(t *testing.T) {
	env := testbed.Env(t)
	setup(t)
	f := startFleet(t, "namespaces", "configmaps")
	f.waitSynced(t)
	stale := func(flt filter) []string {
		var got struct{ Resources connection }
		f.mustQuery(t, `query($filter: ResourceFilter) { resources(filter: $filter, first: 1) { staleClusters edges { node { name } } } }`,
			map[string]any{"filter": flt.vars()}, &got)
		return got.Resources.StaleClusters
	}
	if got := stale(filter{}); len(got) != 0 {
		t.Fatalf("staleClusters = %v with every cluster up", got)
	}

	c3 := env.Cluster("c3")
	if err := c3.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c3.Restart(context.Background()); err != nil {
			t.Errorf("restart c3: %v", err)
		}
	})
	testcluster.Eventually(t, 60*time.Second, "c3 DISCONNECTED", func() (bool, string) {
		var got struct{ Cluster struct{ Status string } }
		f.mustQuery(t, `{ cluster(name: "c3") { status } }`, nil, &got)
		return got.Cluster.Status == "DISCONNECTED", got.Cluster.Status
	})
	for _, tc := range []struct {
		name   string
		filter filter
		want   []string
	}{
		{name: "all clusters", want: []string{"c3"}},
		{name: "the stopped one", filter: filter{Clusters: []string{"c3"}}, want: []string{"c3"}},
		{name: "others", filter: filter{Clusters: []string{"c1", "c2"}}, want: []string{}},
	} {
		if diff := gocmp.Diff(tc.want, stale(tc.filter)); diff != "" {
			t.Errorf("%s: staleClusters (-want +got):\n%s", tc.name, diff)
		}
	}
	// The last known objects of c3 are still served.
	var got struct {
		Resource *struct{ Name string }
		Cluster  struct {
			Stale   bool
			Message *string
		}
	}
	f.mustQuery(t, `{ resource(cluster: "c3", kind: "ConfigMap", namespace: "gq", name: "identity") { name } cluster(name: "c3") { stale message } }`, nil, &got)
	if got.Resource == nil {
		t.Error("c3's objects are gone while it is down")
	}
	if !got.Cluster.Stale || got.Cluster.Message == nil {
		t.Errorf("c3 = %+v, want stale with a message", got.Cluster)
	}

	// kubectl fleet get prints c3's rows too, and warns about it on
	// stderr, as kubectl prints an API server's warnings; exit 0.
	code, out, errOut := kubectlFleet(t.Context(), "get", "configmaps", "-n", "gq", "--server", f.serverURL())
	if code != 0 || !strings.Contains(out, "c3 ") || !strings.Contains(errOut, `Warning: cluster "c3" is DISCONNECTED (data stale `) ||
		strings.Contains(errOut, `"c1"`) || strings.Contains(errOut, `"c2"`) {
		t.Errorf("kubectl fleet get with c3 down: exit %d, stdout:\n%s\nstderr:\n%s\nwant 0, c3's rows and a warning about c3 alone", code, out, errOut)
	}
}

// TestPagingDuringChurn pages through 2,000 ConfigMaps, 50 at a time, while
// another goroutine creates and deletes other ConfigMaps whose names sort
// among them, with at least one change reaching the index between two
// pages: every ConfigMap that exists throughout is listed exactly once.
func TestPagingDuringChurn(t *testing.T) {
	env := testbed.Env(t)
	const n, ns = 2000, "gq-churn"
	c1 := env.Cluster("c1")
	d := dyn(t, c1)
	createNamespace(t, d, ns)
	stable := make([]string, n)
	var wg sync.WaitGroup
	names := make(chan string)
	for range 16 {
		wg.Go(func() {
			for name := range names {
				create(t, d, cached[1].gvr, configMap(ns, name, map[string]any{"set": "stable"}, nil))
			}
		})
	}
	for i := range n {
		stable[i] = fmt.Sprintf("cm-%04d", i)
		names <- stable[i]
	}
	close(names)
	wg.Wait()

	f := startFleet(t, "configmaps")
	f.waitSynced(t)
	scope := filter{Clusters: []string{"c1"}, Namespaces: []string{ns}}
	testcluster.Eventually(t, 60*time.Second, "2,000 ConfigMaps in the index", func() (bool, string) {
		var got struct{ Resources connection }
		f.mustQuery(t, `query($f: ResourceFilter) { resources(filter: $f, first: 0) { totalCount } }`, map[string]any{"f": scope.vars()}, &got)
		return got.Resources.TotalCount >= n, fmt.Sprint(got.Resources.TotalCount)
	})

	ctx, stop := context.WithCancel(t.Context())
	var changes atomic.Int64
	churn := sync.WaitGroup{}
	churn.Go(func() {
		cms := d.Resource(cached[1].gvr).Namespace(ns)
		var alive []string
		for seq := 0; ctx.Err() == nil; seq++ {
			name := fmt.Sprintf("cm-%04d-churn-%d", rand.IntN(n), seq)
			if _, err := cms.Create(ctx, configMap(ns, name, map[string]any{"set": "churn"}, nil), metav1.CreateOptions{}); err != nil {
				if ctx.Err() == nil {
					t.Errorf("churn: create %s: %v", name, err)
				}
				return
			}
			alive = append(alive, name)
			changes.Add(1)
			if len(alive) > 20 {
				i := rand.IntN(len(alive))
				if err := cms.Delete(ctx, alive[i], metav1.DeleteOptions{}); err != nil {
					if ctx.Err() == nil {
						t.Errorf("churn: delete %s: %v", alive[i], err)
					}
					return
				}
				alive = slices.Delete(alive, i, i+1)
				changes.Add(1)
			}
		}
	})
	defer churn.Wait()
	defer stop()

	seen := map[string]int{}
	vars := map[string]any{"filter": scope.vars(), "first": 50}
	pages := 0
	for {
		var got struct{ Resources connection }
		f.mustQuery(t, pageQuery, vars, &got)
		pages++
		if len(got.Resources.Edges) > 50 {
			t.Fatalf("page of %d", len(got.Resources.Edges))
		}
		for _, e := range got.Resources.Edges {
			seen[e.Node.Name]++
		}
		if !got.Resources.PageInfo.HasNextPage {
			break
		}
		vars["after"] = *got.Resources.PageInfo.EndCursor
		// Let at least one more change reach the index before the next page.
		if err := f.Index.Wait(t.Context(), f.Index.Revision()); err != nil {
			t.Fatal(err)
		}
	}
	stop()
	churn.Wait()

	if pages < n/50 {
		t.Errorf("%d pages, want at least %d", pages, n/50)
	}
	missing, repeated, churned := 0, 0, 0
	for _, name := range stable {
		switch seen[name] {
		case 0:
			missing++
		case 1:
		default:
			repeated++
		}
	}
	for name, k := range seen {
		if k > 1 {
			t.Errorf("%s listed %d times", name, k)
		}
		if strings.Contains(name, "-churn-") {
			churned++
		}
	}
	if missing > 0 || repeated > 0 {
		t.Errorf("of %d stable ConfigMaps, %d missing and %d repeated", n, missing, repeated)
	}
	t.Logf("%d pages while %d changes happened; %d churning ConfigMaps listed along", pages, changes.Load(), churned)
	if changes.Load() < int64(pages-1) {
		t.Errorf("only %d changes during %d pages", changes.Load(), pages)
	}
}
