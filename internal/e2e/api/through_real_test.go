package api_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/fleetcache/fleetcache/internal/app"
	"github.com/fleetcache/fleetcache/internal/apptest"
	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/openapi"
)

// throughCase is a filter through relations, and how the truth decides
// it: a Pod's Node (in its cluster) matches node, and its owner or, through
// a ReplicaSet or a Job, its owner's owner is of a kind of ownerKinds
// matching owner; nil does not constrain.
type throughCase struct {
	name       string
	through    map[string]any
	node       labels.Selector
	owner      labels.Selector
	ownerKinds []string
}

// TestThroughOnRealClusters checks filters through Nodes and owners
// (docs/graphql.md, "Filtering through a relation") against the truth
// computed from the API servers' own lists, in pods and resources, with
// totalCount and paging; then after a Node relabelled, a Pod rescheduled
// to another Node and a Deployment relabelled; and for a caller who may
// list the Pods everywhere but the Nodes of c1 and c2 only: the Pods of c3
// are not consulted, and deniedClusters says c3; and for a caller who may
// list ReplicaSets in some of c3's namespaces only: c3 is named too.
func TestThroughOnRealClusters(t *testing.T) {
	testcluster.SkipShort(t, "real clusters")
	env := testbed.Env(t)
	ns := freshNamespace("through")
	// The Nodes' zones differ by cluster: a Pod matches only through the
	// Node of its own cluster, whose name the other clusters share.
	zones := map[string][3]string{"c1": {"a", "b", "a"}, "c2": {"b", "a", "b"}, "c3": {"a", "a", "b"}}
	for _, c := range env.Clusters() {
		seedThrough(t, dyn(t, c), ns, zones[c.Name()])
	}
	ctx := t.Context()
	for _, c := range env.Clusters() {
		pods := rbacv1.PolicyRule{Verbs: []string{"list", "watch"}, APIGroups: []string{""}, Resources: []string{"pods"}}
		if err := c.Grant(ctx, "carol", ns, pods); err != nil {
			t.Fatal(err)
		}
		if c.Name() == "c3" {
			continue
		}
		nodes := rbacv1.PolicyRule{Verbs: []string{"list", "watch"}, APIGroups: []string{""}, Resources: []string{"nodes"}}
		if err := c.Grant(ctx, "carol", "", nodes); err != nil {
			t.Fatal(err)
		}
	}
	f := newFleet(t, app.Options{
		Informers: apptest.Informers("pods", "nodes", "deployments.apps", "replicasets.apps", "jobs.batch", "cronjobs.batch"),
		Schemas:   openapi.Options{Interval: 300 * time.Millisecond},
		Auth:      app.AuthOptions{Authn: app.AuthnTokenReview, AuthnConfig: env.Cluster("c1").AdminConfig()}})
	admin := env.Cluster("c1").AdminConfig().BearerToken
	carol := env.Cluster("c1").UserConfig("carol").BearerToken

	suite := "suite=" + ns
	sel := func(s string) labels.Selector {
		out, err := labels.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	cases := []throughCase{
		{name: "Pods on Nodes of zone a", through: map[string]any{"nodes": map[string]any{"labelSelector": suite + ",zone=a"}},
			node: sel(suite + ",zone=a")},
		{name: "Pods of Deployments labelled tier=fe", through: map[string]any{"owners": map[string]any{"kinds": []any{"Deployment.apps"}, "labelSelector": suite + ",tier=fe"}},
			owner: sel(suite + ",tier=fe"), ownerKinds: []string{"Deployment"}},
		{name: "Pods of CronJobs, through their Jobs", through: map[string]any{"owners": map[string]any{"kinds": []any{"CronJob.batch"}, "labelSelector": suite}},
			owner: sel(suite), ownerKinds: []string{"CronJob"}},
		{name: "Pods of tier=fe owners on Nodes of zone b", through: map[string]any{
			"nodes": map[string]any{"labelSelector": suite + ",zone=b"}, "owners": map[string]any{"labelSelector": suite + ",tier=fe"}},
			node: sel(suite + ",zone=b"), owner: sel(suite + ",tier=fe")},
	}
	expect := func(t *testing.T, token string, tc throughCase, clusters []string, denied []string) {
		t.Helper()
		testcluster.Eventually(t, 60*time.Second, tc.name+": the servers' truth", func() (bool, string) {
			want := throughTruth(t, ns, tc, clusters)
			for _, field := range []string{"pods", "resources"} {
				filter := map[string]any{"namespaces": []any{ns}, "through": tc.through}
				if field == "resources" {
					filter["kinds"] = []any{"Pod"}
				}
				got, total, gotDenied, err := f.throughPages(t, token, field, filter, 100)
				if err != "" {
					return false, err
				}
				if diff := gocmp.Diff(want, got); diff != "" || total != len(want) || !slices.Equal(gotDenied, denied) {
					return false, fmt.Sprintf("%s: totalCount %d, deniedClusters %v (want %v); (-servers +answer):\n%s", field, total, gotDenied, denied, diff)
				}
				paged, total, _, err := f.throughPages(t, token, field, filter, 2)
				if err != "" {
					return false, err
				}
				if diff := gocmp.Diff(want, paged); diff != "" || total != len(want) {
					return false, fmt.Sprintf("%s, pages of 2: totalCount %d; (-servers +pages):\n%s", field, total, diff)
				}
			}
			return true, ""
		})
	}
	all := []string{"c1", "c2", "c3"}
	testcluster.Eventually(t, 60*time.Second, "the typed root field pods", func() (bool, string) {
		var d struct{ Pods struct{ TotalCount int } }
		errs := f.queryAs(t, admin, `query($ns: String!) { pods(filter: {namespaces: [$ns]}) { totalCount } }`, map[string]any{"ns": ns}, &d)
		return len(errs) == 0 && d.Pods.TotalCount == 3*7, fmt.Sprintf("%+v %+v", errs, d)
	})
	before := map[string][]string{}
	for _, tc := range cases {
		before[tc.name] = throughTruth(t, ns, tc, all)
		if clusters := clustersOf(before[tc.name]); len(clusters) < 2 {
			t.Fatalf("%s: the truth %v has Pods of %v: the test compares nothing across clusters", tc.name, before[tc.name], clusters)
		}
		t.Run(tc.name, func(t *testing.T) { expect(t, admin, tc, all, nil) })
	}

	t.Run("a caller who may list the Nodes of c1 and c2 only", func(t *testing.T) {
		expect(t, carol, cases[0], []string{"c1", "c2"}, []string{"c3"})
		// Through owners it may not list anywhere: nothing, every cluster
		// said.
		expect(t, carol, cases[1], []string{}, all)
	})

	t.Run("a caller who may list the ReplicaSets of c3 in some of its namespaces only", func(t *testing.T) {
		// c3 has a second namespace, ns2, seeded alike: carol may list its
		// Pods and Deployments but not its ReplicaSets, so the Pods of
		// ns2's Deployment tier=fe are not found, and c3 is named.
		ns2 := freshNamespace("through")
		c3 := env.Cluster("c3")
		seedThrough(t, dyn(t, c3), ns2, zones["c3"])
		rule := func(group string, resources ...string) rbacv1.PolicyRule {
			return rbacv1.PolicyRule{Verbs: []string{"list", "watch"}, APIGroups: []string{group}, Resources: resources}
		}
		for _, c := range env.Clusters() {
			if err := c.Grant(ctx, "carol", ns, rule("apps", "deployments", "replicasets"), rule("batch", "jobs", "cronjobs")); err != nil {
				t.Fatal(err)
			}
		}
		if err := c3.Grant(ctx, "carol", ns2, rule("", "pods"), rule("apps", "deployments")); err != nil {
			t.Fatal(err)
		}
		tc := throughCase{name: "Pods of Deployments tier=fe in ns and ns2", ownerKinds: []string{"Deployment"}, owner: sel("tier=fe"),
			through: map[string]any{"owners": map[string]any{"kinds": []any{"Deployment.apps"}, "labelSelector": "tier=fe"}}}
		filter := map[string]any{"namespaces": []any{ns, ns2}, "through": tc.through}
		want := throughTruth(t, ns, tc, all)
		// What the admin sees of ns2: what carol is not shown.
		if extra := throughTruth(t, ns2, tc, []string{"c3"}); len(extra) == 0 {
			t.Fatalf("no Pods of ns2 match %s: the test hides nothing", tc.name)
		}
		testcluster.Eventually(t, 60*time.Second, "carol's answer, c3 denied in part", func() (bool, string) {
			got, total, denied, err := f.throughPages(t, carol, "pods", filter, 100)
			if err != "" {
				return false, err
			}
			diff := gocmp.Diff(want, got)
			return diff == "" && total == len(want) && slices.Equal(denied, []string{"c3"}),
				fmt.Sprintf("totalCount %d, deniedClusters %v (want [c3]); (-servers +answer):\n%s", total, denied, diff)
		})
	})

	t.Run("edits", func(t *testing.T) {
		c1, c2, c3 := dyn(t, env.Cluster("c1")), dyn(t, env.Cluster("c2")), dyn(t, env.Cluster("c3"))
		nodes := gvr("", "v1", "nodes")
		// c2's first Node now zone a.
		patch := []byte(`{"metadata":{"labels":{"zone":"a"}}}`)
		if _, err := c2.Resource(nodes).Patch(ctx, ns+"-n1", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		// c1's web-1-x rescheduled from n1 (zone a) to n2 (zone b).
		throughPod(t, c1, ns, "web-1-x", ns+"-n2", deletePodOf(t, c1, ns, "web-1-x", "web-1"))
		// c3's Deployment api now tier=fe.
		patch = []byte(`{"metadata":{"labels":{"tier":"fe"}}}`)
		if _, err := c3.Resource(gvr("apps", "v1", "deployments")).Namespace(ns).Patch(ctx, "api", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, tc := range cases {
			if tc.ownerKinds == nil || tc.ownerKinds[0] == "Deployment" {
				// A Node relabelled, a Pod rescheduled, a Deployment
				// relabelled: each of these answers changed.
				if after := throughTruth(t, ns, tc, all); gocmp.Equal(before[tc.name], after) {
					t.Errorf("%s: the edits did not change the truth (%v)", tc.name, after)
				}
			}
			t.Run(tc.name, func(t *testing.T) { expect(t, admin, tc, all, nil) })
		}
		expect(t, carol, cases[0], []string{"c1", "c2"}, []string{"c3"})
	})
}

// clustersOf returns the clusters of cluster/name keys.
func clustersOf(keys []string) []string {
	var out []string
	for _, k := range keys {
		c, _, _ := strings.Cut(k, "/")
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// throughPages returns the cluster/name of every Pod of field (pods or
// resources) that filter selects, read in pages of first, with the
// totalCount and deniedClusters of the first page; or what went wrong.
func (f *fleet) throughPages(t *testing.T, token, field string, filter map[string]any, first int) ([]string, int, []string, string) {
	t.Helper()
	out := []string{}
	total, denied := -1, []string(nil)
	after := any(nil)
	for range 100 {
		var d map[string]struct {
			TotalCount     int
			DeniedClusters []string
			PageInfo       struct {
				HasNextPage bool
				EndCursor   string
			}
			Edges []struct {
				Node struct{ Cluster, Name string }
			}
		}
		q := fmt.Sprintf(`query($f: ResourceFilter, $first: Int, $after: String) { %s(filter: $f, first: $first, after: $after) {
		  totalCount deniedClusters pageInfo { hasNextPage endCursor } edges { node { cluster name } } } }`, field)
		if errs := f.queryAs(t, token, q, map[string]any{"f": filter, "first": first, "after": after}, &d); len(errs) > 0 {
			return nil, 0, nil, fmt.Sprintf("%+v", errs)
		}
		page := d[field]
		if total < 0 {
			total, denied = page.TotalCount, page.DeniedClusters
		}
		for _, e := range page.Edges {
			out = append(out, e.Node.Cluster+"/"+e.Node.Name)
		}
		if !page.PageInfo.HasNextPage {
			break
		}
		after = page.PageInfo.EndCursor
	}
	slices.Sort(out)
	return out, total, denied, ""
}

// seedThrough creates, in a cluster, three Nodes named <ns>-n1 to -n3 with
// zones, and in ns: Deployments web (tier=fe) and api (tier=be), each with
// a ReplicaSet and two Pods, a Job (tier=fe) with a Pod, a CronJob with a
// Job and a Pod, and a Pod of nobody.
func seedThrough(t *testing.T, d dynamic.Interface, ns string, zones [3]string) {
	t.Helper()
	createNamespace(t, d, ns)
	for i, zone := range zones {
		name := fmt.Sprintf("%s-n%d", ns, i+1)
		create(t, d, gvr("", "v1", "nodes"), &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Node",
			"metadata": map[string]any{"name": name, "labels": map[string]any{"suite": ns, "zone": zone}}}})
		t.Cleanup(func() { _ = d.Resource(gvr("", "v1", "nodes")).Delete(t.Context(), name, metav1.DeleteOptions{}) })
	}
	owned := func(u *unstructured.Unstructured, owner *unstructured.Unstructured) *unstructured.Unstructured {
		if owner != nil {
			u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: owner.GetAPIVersion(), Kind: owner.GetKind(), Name: owner.GetName(),
				UID: owner.GetUID(), Controller: new(true)}})
		}
		return u
	}
	obj := func(apiVersion, kind, name string, lbls map[string]any, spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind,
			"metadata": map[string]any{"name": name, "namespace": ns, "labels": lbls}, "spec": spec}}
	}
	podTemplate := func(restart string) map[string]any {
		return map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "x"}},
			"spec": map[string]any{"restartPolicy": restart, "containers": []any{map[string]any{"name": "c", "image": "busybox"}}}}
	}
	template := podTemplate("Never")
	workload := map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": "x"}}, "template": podTemplate("Always")}
	for _, dep := range []struct{ name, tier string }{{"web", "fe"}, {"api", "be"}} {
		dp := create(t, d, gvr("apps", "v1", "deployments"), obj("apps/v1", "Deployment", dep.name, map[string]any{"suite": ns, "tier": dep.tier}, workload))
		rs := create(t, d, gvr("apps", "v1", "replicasets"), owned(obj("apps/v1", "ReplicaSet", dep.name+"-1", map[string]any{"app": "x"}, workload), dp))
		throughPod(t, d, ns, dep.name+"-1-x", ns+"-n1", rs)
		throughPod(t, d, ns, dep.name+"-1-y", ns+"-n2", rs)
	}
	job := create(t, d, gvr("batch", "v1", "jobs"), obj("batch/v1", "Job", "batch", map[string]any{"suite": ns, "tier": "fe"}, map[string]any{"template": template}))
	throughPod(t, d, ns, "batch-x", ns+"-n3", job)
	cron := create(t, d, gvr("batch", "v1", "cronjobs"), obj("batch/v1", "CronJob", "nightly", map[string]any{"suite": ns},
		map[string]any{"schedule": "0 3 * * *", "jobTemplate": map[string]any{"spec": map[string]any{"template": template}}}))
	nightly := create(t, d, gvr("batch", "v1", "jobs"), owned(obj("batch/v1", "Job", "nightly-1", nil, map[string]any{"template": template}), cron))
	throughPod(t, d, ns, "nightly-1-x", ns+"-n1", nightly)
	throughPod(t, d, ns, "lone", ns+"-n2", nil)
}

// throughPod creates a Pod on node, controlled by owner if not nil.
func throughPod(t *testing.T, d dynamic.Interface, ns, name, node string, owner *unstructured.Unstructured) {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"namespace": ns, "name": name},
		"spec":     map[string]any{"nodeName": node, "containers": []any{map[string]any{"name": "c", "image": "busybox"}}}}}
	if owner != nil {
		u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: owner.GetAPIVersion(), Kind: owner.GetKind(), Name: owner.GetName(),
			UID: owner.GetUID(), Controller: new(true)}})
	}
	create(t, d, podsGVR, u)
}

// throughTruth computes the Pods of ns that tc selects in clusters, from
// the API servers' lists: cluster/name, sorted.
func throughTruth(t *testing.T, ns string, tc throughCase, clusters []string) []string {
	t.Helper()
	out := []string{}
	for _, c := range testbed.Env(t).Clusters() {
		if !slices.Contains(clusters, c.Name()) {
			continue
		}
		d := dyn(t, c)
		list := func(g, v, r, namespace string) []unstructured.Unstructured {
			l, err := d.Resource(gvr(g, v, r)).Namespace(namespace).List(t.Context(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return l.Items
		}
		nodes := map[string]labels.Set{}
		for _, n := range list("", "v1", "nodes", "") {
			nodes[n.GetName()] = n.GetLabels()
		}
		byUID := map[types.UID]*unstructured.Unstructured{}
		for _, r := range [][3]string{{"apps", "v1", "deployments"}, {"apps", "v1", "replicasets"}, {"batch", "v1", "jobs"}, {"batch", "v1", "cronjobs"}} {
			for _, u := range list(r[0], r[1], r[2], ns) {
				byUID[u.GetUID()] = &u
			}
		}
		matches := func(u *unstructured.Unstructured) bool {
			return (tc.ownerKinds == nil || slices.Contains(tc.ownerKinds, u.GetKind())) && (tc.owner == nil || tc.owner.Matches(labels.Set(u.GetLabels())))
		}
		for _, p := range list("", "v1", "pods", ns) {
			if tc.node != nil {
				node, _, _ := unstructured.NestedString(p.Object, "spec", "nodeName")
				if l, ok := nodes[node]; !ok || !tc.node.Matches(l) {
					continue
				}
			}
			if tc.owner != nil || tc.ownerKinds != nil {
				found := false
				for _, ref := range p.GetOwnerReferences() {
					o := byUID[ref.UID]
					if o == nil {
						continue
					}
					found = found || matches(o)
					if o.GetKind() == "ReplicaSet" || o.GetKind() == "Job" {
						for _, ref2 := range o.GetOwnerReferences() {
							if oo := byUID[ref2.UID]; oo != nil {
								found = found || matches(oo)
							}
						}
					}
				}
				if !found {
					continue
				}
			}
			out = append(out, c.Name()+"/"+p.GetName())
		}
	}
	slices.Sort(out)
	return out
}
