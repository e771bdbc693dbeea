package api_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"

	"github.com/fleetcache/fleetcache/internal/app"
	"github.com/fleetcache/fleetcache/internal/apptest"
	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/fanout"
	"github.com/fleetcache/fleetcache/pkg/graphql"
	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
	"github.com/fleetcache/fleetcache/pkg/index/object"
)

// fieldPod is a Pod the field tests create, then give a status through the
// status subresource.
type fieldPod struct {
	name, node string
	app        string
	images     []string
	owner      string // the example.com/owner annotation; "" for none
	phase      corev1.PodPhase
	restarts   []int64 // per container
	deadline   int64   // spec.activeDeadlineSeconds; 0 for none
}

// fieldPods are the Pods of each cluster's first namespace; the second
// namespace holds other, and c2 and c3 differ from c1 so that the cluster
// and namespace matter.
func fieldPods(cluster string) (first, second []fieldPod) {
	first = []fieldPod{
		{name: "web-a", node: "node-1", app: "web", images: []string{"nginx:1.25", "envoy:1.30"}, owner: "team-a", phase: corev1.PodRunning, restarts: []int64{0, 5}},
		{name: "web-b", node: "node-2", app: "web", images: []string{"nginx:1.25"}, phase: corev1.PodPending, restarts: []int64{0}},
		{name: "db-a", node: "node-1", app: "db", images: []string{"redis:7"}, owner: "team-b", phase: corev1.PodFailed, restarts: []int64{2}},
		{name: "batch", app: "batch", images: []string{"busybox:1.36"}, phase: corev1.PodPending},
	}
	second = []fieldPod{{name: "web-c", node: "node-3", app: "web", images: []string{"nginx:1.26"}, phase: corev1.PodRunning, restarts: []int64{4}}}
	switch cluster {
	case "c2":
		first[0].phase, first[0].restarts = corev1.PodFailed, []int64{1, 1}
		first[1].node = "node-1"
	case "c3":
		first[2].phase, first[2].images = corev1.PodRunning, []string{"redis:7", "envoy:1.30"}
		first[2].restarts = []int64{0, 9}
	}
	return first, second
}

var podsGVR = cached[2].gvr

// createFieldPod creates p in ns and sets its status; it returns the
// Pod as the API server stores it.
func createFieldPod(t *testing.T, d dynamic.Interface, ns string, p fieldPod) *unstructured.Unstructured {
	t.Helper()
	var containers []any
	for i, im := range p.images {
		containers = append(containers, map[string]any{"name": fmt.Sprintf("c%d", i), "image": im})
	}
	meta := map[string]any{"namespace": ns, "name": p.name, "labels": map[string]any{"app": p.app}}
	if p.owner != "" {
		meta["annotations"] = map[string]any{"example.com/owner": p.owner}
	}
	spec := map[string]any{"containers": containers}
	if p.node != "" {
		spec["nodeName"] = p.node
	}
	if p.deadline != 0 {
		spec["activeDeadlineSeconds"] = p.deadline
	}
	create(t, d, podsGVR, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}})
	return setPodStatus(t, d, ns, p)
}

// setPodStatus sets the Pod's phase and container statuses through the
// status subresource.
func setPodStatus(t *testing.T, d dynamic.Interface, ns string, p fieldPod) *unstructured.Unstructured {
	t.Helper()
	r := d.Resource(podsGVR).Namespace(ns)
	u, err := r.Get(t.Context(), p.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var statuses []any
	for i, n := range p.restarts {
		statuses = append(statuses, map[string]any{"name": fmt.Sprintf("c%d", i), "image": p.images[i], "imageID": "",
			"ready": p.phase == corev1.PodRunning, "restartCount": n})
	}
	u.Object["status"] = map[string]any{"phase": string(p.phase), "containerStatuses": statuses}
	out, err := r.UpdateStatus(t.Context(), u, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update status of %s/%s: %v", ns, p.name, err)
	}
	return out
}

// startFieldFleet creates the fieldPods of each cluster, and extra in each
// cluster's first namespace, in two fresh namespaces named after prefix;
// then it starts a fleet that caches Pods and waits until it has synced.
func startFieldFleet(t *testing.T, prefix string, extra ...fieldPod) (ns, ns2 string, f *fleet) {
	t.Helper()
	ns, ns2 = seedFieldPods(t, prefix, extra...)
	f = startFleet(t, "pods")
	f.waitSynced(t)
	return ns, ns2, f
}

// seedFieldPods creates the fieldPods of each cluster, and extra in each
// cluster's first namespace, in two fresh namespaces named after prefix.
func seedFieldPods(t *testing.T, prefix string, extra ...fieldPod) (ns, ns2 string) {
	t.Helper()
	ns, ns2 = freshNamespace(prefix), freshNamespace(prefix)
	for _, c := range testbed.Env(t).Clusters() {
		d := dyn(t, c)
		createNamespace(t, d, ns)
		createNamespace(t, d, ns2)
		first, second := fieldPods(c.Name())
		for _, p := range append(first, extra...) {
			createFieldPod(t, d, ns, p)
		}
		for _, p := range second {
			createFieldPod(t, d, ns2, p)
		}
	}
	return ns, ns2
}

// expectPods pages through the objects matching flt, until they and their
// totalCount are the Pods of the API servers that keep selects.
func (f *fleet) expectPods(t *testing.T, flt filter, keep func(clusterPod) bool) {
	t.Helper()
	testcluster.Eventually(t, 30*time.Second, "the API to select what the servers hold", func() (bool, string) {
		var want []string
		for _, p := range podOracle(t) {
			if keep(p) {
				want = append(want, p.String())
			}
		}
		got, total := f.list(t, flt, 3)
		if total != len(got) {
			return false, fmt.Sprintf("totalCount %d, listed %d", total, len(got))
		}
		if len(want) == 0 {
			return false, "the oracle selects nothing: the case tests nothing"
		}
		slices.Sort(want)
		names := strs(got)
		slices.Sort(names)
		diff := gocmp.Diff(want, names)
		return diff == "", "(-servers +api):\n" + diff
	})
}

// podOracle lists the Pods of every API server, with their clusters.
func podOracle(t *testing.T) []clusterPod {
	t.Helper()
	env := testbed.Env(t)
	var out []clusterPod
	for _, c := range env.Clusters() {
		list, err := dyn(t, c).Resource(podsGVR).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range list.Items {
			var p corev1.Pod
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &p); err != nil {
				t.Fatal(err)
			}
			out = append(out, clusterPod{c.Name(), &p})
		}
	}
	return out
}

type clusterPod struct {
	cluster string
	*corev1.Pod
}

func (p clusterPod) String() string {
	return p.cluster + "/" + p.Namespace + "/" + p.Name + " Pod " + string(p.UID)
}

func anyStatus(p clusterPod, fn func(corev1.ContainerStatus) bool) bool {
	return slices.ContainsFunc(p.Status.ContainerStatuses, fn)
}

func anyImage(p clusterPod, image string) bool {
	return slices.ContainsFunc(p.Spec.Containers, func(c corev1.Container) bool { return c.Image == image })
}

// TestFieldSelectorOnRealClusters creates Pods with nodes, images, phases
// and container statuses in three clusters, and checks every operator of
// fieldSelector, alone and with the other filters, against what the API
// servers hold; then Resource.field over scalars and arrays, and bad input.
func TestFieldSelectorOnRealClusters(t *testing.T) {
	ns, ns2, f := startFieldFleet(t, "fields")
	inNS := func(p clusterPod) bool { return p.Namespace == ns || p.Namespace == ns2 }
	owner := func(p clusterPod) string { return p.Annotations["example.com/owner"] }
	tests := []struct {
		name string
		flt  filter
		want func(clusterPod) bool
	}{
		{"equals", filter{FieldSelector: "status.phase=Running"}, func(p clusterPod) bool { return p.Status.Phase == corev1.PodRunning }},
		{"double equals", filter{FieldSelector: "status.phase==Failed"}, func(p clusterPod) bool { return p.Status.Phase == corev1.PodFailed }},
		{"not equals", filter{FieldSelector: "status.phase!=Running"}, func(p clusterPod) bool { return p.Status.Phase != corev1.PodRunning }},
		{"in", filter{FieldSelector: "spec.nodeName in (node-1,node-3)"}, func(p clusterPod) bool { return p.Spec.NodeName == "node-1" || p.Spec.NodeName == "node-3" }},
		{"notin", filter{FieldSelector: "spec.nodeName notin (node-1)"}, func(p clusterPod) bool { return p.Spec.NodeName != "node-1" }},
		{"present", filter{FieldSelector: "spec.nodeName"}, func(p clusterPod) bool { return p.Spec.NodeName != "" }},
		{"absent", filter{FieldSelector: "!spec.nodeName"}, func(p clusterPod) bool { return p.Spec.NodeName == "" }},
		{"greater, some element", filter{FieldSelector: "status.containerStatuses[].restartCount>3"},
			func(p clusterPod) bool {
				return anyStatus(p, func(s corev1.ContainerStatus) bool { return s.RestartCount > 3 })
			}},
		{"less, some element", filter{FieldSelector: "status.containerStatuses[].restartCount<1"},
			func(p clusterPod) bool {
				return anyStatus(p, func(s corev1.ContainerStatus) bool { return s.RestartCount < 1 })
			}},
		{"equals across an array", filter{FieldSelector: "spec.containers[].image=envoy:1.30"}, func(p clusterPod) bool { return anyImage(p, "envoy:1.30") }},
		{"not equals across an array", filter{FieldSelector: "spec.containers[].image!=nginx:1.25"}, func(p clusterPod) bool { return !anyImage(p, "nginx:1.25") }},
		{"notin across an array", filter{FieldSelector: "spec.containers[].image notin (nginx:1.25,redis:7)"},
			func(p clusterPod) bool { return !anyImage(p, "nginx:1.25") && !anyImage(p, "redis:7") }},
		{"quoted key", filter{FieldSelector: `metadata.annotations["example.com/owner"] in (team-a,team-b)`},
			func(p clusterPod) bool { return owner(p) == "team-a" || owner(p) == "team-b" }},
		{"cluster", filter{FieldSelector: "cluster in (c2,c3),status.phase=Running"},
			func(p clusterPod) bool { return p.cluster != "c1" && p.Status.Phase == corev1.PodRunning }},
		{"with labels and namespaces", filter{FieldSelector: "status.phase=Running,spec.containers[].image=nginx:1.25", LabelSelector: "app=web", Namespaces: []string{ns}},
			func(p clusterPod) bool {
				return p.Namespace == ns && p.Labels["app"] == "web" && p.Status.Phase == corev1.PodRunning && anyImage(p, "nginx:1.25")
			}},
		{"with clusters and kinds", filter{FieldSelector: "spec.nodeName=node-1", Clusters: []string{"c1", "c3"}, Kinds: []string{"Pod"}},
			func(p clusterPod) bool { return p.cluster != "c2" && p.Spec.NodeName == "node-1" }},
		{"with a name", filter{FieldSelector: "status.phase!=Pending", NameContains: "web", Namespaces: []string{ns, ns2}},
			func(p clusterPod) bool {
				return inNS(p) && strings.Contains(p.Name, "web") && p.Status.Phase != corev1.PodPending
			}},
		{"with a label set-based selector", filter{FieldSelector: "!metadata.annotations", LabelSelector: "app in (web,batch)", Namespaces: []string{ns}},
			func(p clusterPod) bool {
				return p.Namespace == ns && len(p.Annotations) == 0 && (p.Labels["app"] == "web" || p.Labels["app"] == "batch")
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sel, err := labels.Parse(tt.flt.LabelSelector)
			if err != nil {
				t.Fatal(err)
			}
			f.expectPods(t, tt.flt, func(p clusterPod) bool {
				return tt.want(p) && sel.Matches(labels.Set(p.Labels)) && (len(tt.flt.Namespaces) == 0 || slices.Contains(tt.flt.Namespaces, p.Namespace)) &&
					(len(tt.flt.Clusters) == 0 || slices.Contains(tt.flt.Clusters, p.cluster))
			})
		})
	}

	t.Run("field", func(t *testing.T) {
		var got struct {
			Resource map[string]any
		}
		f.mustQuery(t, `query($ns: String) { resource(cluster: "c3", kind: "Pod", namespace: $ns, name: "db-a") {
			phase: field(path: "status.phase") node: field(path: "spec.nodeName") images: field(path: "spec.containers[].image")
			restarts: field(path: "status.containerStatuses[].restartCount") ready: field(path: "status.containerStatuses[].ready")
			owner: field(path: "metadata.annotations[\"example.com/owner\"]") cluster: field(path: "cluster")
			reason: field(path: "status.reason") init: field(path: "spec.initContainers[].image") labels: field(path: "metadata.labels") } }`,
			map[string]any{"ns": ns}, &got)
		want := map[string]any{"phase": "Running", "node": "node-1", "images": []any{"redis:7", "envoy:1.30"}, "restarts": []any{0.0, 9.0},
			"ready": []any{true, true}, "owner": "team-b", "cluster": "c3", "reason": nil, "init": nil, "labels": map[string]any{"app": "db"}}
		if diff := gocmp.Diff(want, got.Resource); diff != "" {
			t.Errorf("fields (-want +got):\n%s", diff)
		}
		// The indexed paths answered from the values the informers kept
		// beside the body, equal to what the body holds.
		o := f.Index.Get(object.Key{Cluster: "c3", Resource: "pods", Namespace: ns, Name: "db-a"})
		for _, p := range []string{"status.phase", "spec.nodeName", "spec.containers[].image"} {
			path := fieldpath.MustParse(p)
			kept, ok := o.Projected(path)
			if body := string(path.AppendJSONIn(nil, o.Doc())); !ok || string(kept) != body {
				t.Errorf("%s: kept beside the body %q (%t), the body holds %s", p, kept, ok, body)
			}
		}
		// On a page, each object's own values.
		var page struct {
			Resources struct {
				Edges []struct{ Node struct{ Name, Phase string } }
			}
		}
		f.mustQuery(t, `query($ns: [String!]) { resources(filter: {namespaces: $ns, clusters: ["c2"]}) { edges { node { name phase: field(path: "status.phase") } } } }`,
			map[string]any{"ns": []any{ns}}, &page)
		phases := map[string]string{}
		for _, e := range page.Resources.Edges {
			phases[e.Node.Name] = e.Node.Phase
		}
		if diff := gocmp.Diff(map[string]string{"batch": "Pending", "db-a": "Failed", "web-a": "Failed", "web-b": "Pending"}, phases); diff != "" {
			t.Errorf("phases (-want +got):\n%s", diff)
		}
	})

	t.Run("bad input", func(t *testing.T) {
		for _, tc := range []struct{ query, reason string }{
			{`{ resources(filter: {fieldSelector: "status.phase=Running,"}) { totalCount } }`, "empty requirement"},
			{`{ resources(filter: {fieldSelector: "status..phase=Running"}) { totalCount } }`, "invalid path"},
			{`{ resources(filter: {fieldSelector: "status.containerStatuses[].restartCount>three"}) { totalCount } }`, `> needs a number, got "three"`},
			{`{ facets(by: CLUSTER, filter: {fieldSelector: "spec.nodeName in node-1"}) { count } }`, "expected ( after in"},
			{`{ resources(first: 1) { edges { node { field(path: "metadata.annotations.example.com/owner") } } } }`, `unexpected '/'`},
			{`{ resources(first: 1) { edges { node { field(path: "spec.containers[0].image") } } } }`, "expected a quoted key"},
		} {
			errs := f.query(t, tc.query, nil, nil)
			if len(errs) != 1 || errs[0].Extensions.Code != "BAD_USER_INPUT" || !strings.Contains(errs[0].Message, tc.reason) {
				t.Errorf("%s: errors %+v, want one BAD_USER_INPUT saying %q", tc.query, errs, tc.reason)
			}
		}
	})
}

// TestFieldSelectorSubscriptionOnRealClusters follows Pods with
// fieldSelector status.phase=Running while their phases change through the
// status subresource: a Pod that fails leaves (DELETED), and enters again
// (ADDED) when it runs again.
func TestFieldSelectorSubscriptionOnRealClusters(t *testing.T) {
	ns := freshNamespace("fields-sub")
	d, fl, f := startPodSubFleet(t, ns)
	vars := map[string]any{"filter": map[string]any{"namespaces": []any{ns}, "fieldSelector": "status.phase=Running"}}
	sub := f.subscribe(t, realEventsQuery, vars)

	pod := fieldPod{name: "p", node: "node-1", app: "web", images: []string{"nginx:1.25"}, phase: corev1.PodPending, restarts: []int64{0}}
	other := fieldPod{name: "q", node: "node-2", app: "web", images: []string{"redis:7"}, phase: corev1.PodRunning, restarts: []int64{0}}
	indexed := func(cluster string, u *unstructured.Unstructured) { waitIndexed(t, fl, cluster, u) }
	set := func(cluster string, p fieldPod, phase corev1.PodPhase, restarts int64) {
		p.phase, p.restarts = phase, []int64{restarts}
		indexed(cluster, setPodStatus(t, d[cluster], ns, p))
	}
	indexed("c1", createFieldPod(t, d["c1"], ns, pod))   // Pending: not yet
	indexed("c2", createFieldPod(t, d["c2"], ns, other)) // Running: ADDED
	set("c1", pod, corev1.PodRunning, 0)                 // enters: ADDED
	set("c1", pod, corev1.PodRunning, 1)                 // still Running: MODIFIED
	set("c1", pod, corev1.PodFailed, 1)                  // leaves: DELETED
	set("c1", pod, corev1.PodFailed, 2)                  // still Failed: nothing
	set("c1", pod, corev1.PodRunning, 2)                 // enters again: ADDED
	set("c2", other, corev1.PodSucceeded, 0)             // leaves: DELETED
	want := []string{"ADDED c2/q", "ADDED c1/p", "MODIFIED c1/p", "DELETED c1/p", "ADDED c1/p", "DELETED c2/q"}
	if diff := gocmp.Diff(want, eventNames(f.drain(t, sub))); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}

	// A malformed field selector is refused before the subscription starts.
	bad, res := f.api.Subscribe(t.Context(), graphql.Request{Query: realEventsQuery,
		Variables: map[string]any{"filter": map[string]any{"fieldSelector": "status.phase in (Running"}}})
	if bad != nil {
		bad.Close()
		t.Fatal("a malformed fieldSelector subscribed")
	}
	b := string(mustMarshal(t, res))
	if !strings.Contains(b, "BAD_USER_INPUT") || !strings.Contains(b, "expected ) to close the list") {
		t.Errorf("result %s, want BAD_USER_INPUT saying why", b)
	}
}

// startPodSubFleet creates namespace ns in every cluster and starts a
// synced fleet of their Pods, whose subscriptions send heartbeats every
// 200 ms (so that drain ends soon); it returns each cluster's client.
func startPodSubFleet(t *testing.T, ns string) (map[string]dynamic.Interface, *fleet, *subFleet) {
	t.Helper()
	env := testbed.Env(t)
	d := map[string]dynamic.Interface{}
	for _, c := range env.Clusters() {
		d[c.Name()] = dyn(t, c)
		createNamespace(t, d[c.Name()], ns)
	}
	fl := newFleet(t, app.Options{Informers: apptest.Informers("pods"),
		GraphQL: graphql.Options{Fanout: fanout.Options{HeartbeatInterval: 200 * time.Millisecond}}})
	f := &subFleet{fleet: fl, api: fl.API}
	fl.waitSynced(t)
	return d, fl, f
}

// waitIndexed waits until the fleet's index holds the Pod u of cluster at
// u's resourceVersion, so that the next change comes after it in the feed.
func waitIndexed(t *testing.T, fl *fleet, cluster string, u *unstructured.Unstructured) {
	t.Helper()
	testcluster.Eventually(t, 30*time.Second, "the index to hold "+cluster+"/"+u.GetName()+" at "+u.GetResourceVersion(), func() (bool, string) {
		o := fl.Index.Get(object.Key{Cluster: cluster, Resource: "pods", Namespace: u.GetNamespace(), Name: u.GetName()})
		if o == nil {
			return false, "absent"
		}
		return o.ResourceVersion == u.GetResourceVersion(), o.ResourceVersion
	})
}

// TestFacetsByFieldOnRealClusters counts Pods per phase, per image (each
// image once per Pod) and per restart count across three clusters, with the
// other filters, fieldSelector included, against what the API servers hold;
// then bad input.
func TestFacetsByFieldOnRealClusters(t *testing.T) {
	// A Pod running the same image twice counts once for it.
	ns, ns2, f := startFieldFleet(t, "facets", fieldPod{name: "twice", node: "node-2", app: "web", images: []string{"nginx:1.25", "nginx:1.25"},
		phase: corev1.PodRunning, restarts: []int64{1, 1}})
	inNS := func(p clusterPod) bool { return p.Namespace == ns || p.Namespace == ns2 }
	type facet struct {
		Value string
		Count int
	}
	tests := []struct {
		name   string
		field  string
		flt    filter
		keep   func(clusterPod) bool
		values func(clusterPod) []string // each Pod's values, possibly repeated
	}{
		{"phase", "status.phase", filter{Namespaces: []string{ns, ns2}}, inNS,
			func(p clusterPod) []string { return []string{string(p.Status.Phase)} }},
		{"images, once per Pod", "spec.containers[].image", filter{Namespaces: []string{ns, ns2}}, inNS,
			func(p clusterPod) []string {
				var out []string
				for _, c := range p.Spec.Containers {
					out = append(out, c.Image)
				}
				return out
			}},
		{"restart counts with a field selector", "status.containerStatuses[].restartCount",
			filter{Namespaces: []string{ns}, FieldSelector: "status.phase!=Pending"},
			func(p clusterPod) bool { return p.Namespace == ns && p.Status.Phase != corev1.PodPending },
			func(p clusterPod) []string {
				var out []string
				for _, s := range p.Status.ContainerStatuses {
					out = append(out, fmt.Sprint(s.RestartCount))
				}
				return out
			}},
		{"nodes with labels and clusters", "spec.nodeName", filter{Namespaces: []string{ns, ns2}, LabelSelector: "app=web", Clusters: []string{"c1", "c2"}},
			func(p clusterPod) bool { return inNS(p) && p.Labels["app"] == "web" && p.cluster != "c3" },
			func(p clusterPod) []string {
				if p.Spec.NodeName == "" {
					return nil
				}
				return []string{p.Spec.NodeName}
			}},
		{"cluster", "cluster", filter{Namespaces: []string{ns}, FieldSelector: "status.phase=Running"},
			func(p clusterPod) bool { return p.Namespace == ns && p.Status.Phase == corev1.PodRunning },
			func(p clusterPod) []string { return []string{p.cluster} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			testcluster.Eventually(t, 30*time.Second, "the facets to count what the servers hold", func() (bool, string) {
				counts := map[string]int{}
				for _, p := range podOracle(t) {
					if !tt.keep(p) {
						continue
					}
					vs := tt.values(p)
					slices.Sort(vs)
					for _, v := range slices.Compact(vs) {
						counts[v]++
					}
				}
				if len(counts) < 2 {
					return false, fmt.Sprintf("the oracle counts %v: the case tests too little", counts)
				}
				var want []facet
				for v, n := range counts {
					want = append(want, facet{v, n})
				}
				slices.SortFunc(want, func(a, b facet) int {
					if a.Count != b.Count {
						return b.Count - a.Count
					}
					return strings.Compare(a.Value, b.Value)
				})
				var got struct{ Facets []facet }
				f.mustQuery(t, `query($filter: ResourceFilter, $field: String) { facets(filter: $filter, by: FIELD, field: $field) { value count } }`,
					map[string]any{"filter": tt.flt.vars(), "field": tt.field}, &got)
				diff := gocmp.Diff(want, got.Facets)
				return diff == "", "(-servers +api):\n" + diff
			})
		})
	}

	t.Run("bad input", func(t *testing.T) {
		for _, tc := range []struct{ query, reason string }{
			{`{ facets(by: FIELD) { count } }`, "facets by FIELD need a field"},
			{`{ facets(by: FIELD, field: "status.containerStatuses[0].restartCount") { count } }`, "expected a quoted key"},
			{`{ facets(by: NAMESPACE, field: "status.phase") { count } }`, "field is only used with by: FIELD"},
		} {
			errs := f.query(t, tc.query, nil, nil)
			if len(errs) != 1 || errs[0].Extensions.Code != "BAD_USER_INPUT" || !strings.Contains(errs[0].Message, tc.reason) {
				t.Errorf("%s: errors %+v, want one BAD_USER_INPUT saying %q", tc.query, errs, tc.reason)
			}
		}
	})
}
