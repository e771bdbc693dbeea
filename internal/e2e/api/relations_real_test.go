package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/fleetcache/fleetcache/internal/app"
	"github.com/fleetcache/fleetcache/internal/apptest"
	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/openapi"
)

// relKinds are the kinds of the relations test: the root field, the type,
// the resource as the informers name it, its GVR, and the relation fields
// the test reads of each object.
var relKinds = []struct {
	root, typ, resource string
	gvr                 schema.GroupVersionResource
	fields              []string
}{
	{"pods", "Pod", "pods", gvr("", "v1", "pods"), []string{"node", "owner", "services", "events", "configMaps", "secrets", "persistentVolumeClaims"}},
	{"services", "Service", "services", gvr("", "v1", "services"), []string{"pods", "endpointSlices"}},
	{"configmaps", "ConfigMap", "configmaps", gvr("", "v1", "configmaps"), []string{"pods"}},
	{"secrets", "Secret", "secrets", gvr("", "v1", "secrets"), []string{"pods"}},
	{"persistentvolumeclaims", "PersistentVolumeClaim", "persistentvolumeclaims", gvr("", "v1", "persistentvolumeclaims"), []string{"volume", "pods"}},
	{"persistentvolumes", "PersistentVolume", "persistentvolumes", gvr("", "v1", "persistentvolumes"), []string{"claim"}},
	{"events", "Event", "events", gvr("", "v1", "events"), []string{"involvedResource"}},
	{"deployments", "Deployment", "deployments.apps", gvr("apps", "v1", "deployments"), []string{"replicaSets", "pods"}},
	{"replicasets", "ReplicaSet", "replicasets.apps", gvr("apps", "v1", "replicasets"), []string{"owner", "pods"}},
	{"ingresses", "Ingress", "ingresses.networking.k8s.io", gvr("networking.k8s.io", "v1", "ingresses"), []string{"services"}},
	{"horizontalpodautoscalers", "HorizontalPodAutoscaler", "horizontalpodautoscalers.autoscaling", gvr("autoscaling", "v2", "horizontalpodautoscalers"), []string{"target"}},
	{"endpointslices", "EndpointSlice", "endpointslices.discovery.k8s.io", gvr("discovery.k8s.io", "v1", "endpointslices"), []string{"service"}},
}

// oneRelations are the relation fields that hold one object.
var oneRelations = map[string]bool{"node": true, "owner": true, "volume": true, "claim": true, "involvedResource": true, "target": true, "service": true}

// TestMoreRelationsOnRealClusters checks every relation of issue 33 (Pod.services,
// the owner chain, Deployment.replicaSets and pods, events, volumes and
// claims, ConfigMaps and Secrets both ways, Ingress.services, HPA.target,
// EndpointSlice.service) against the truth computed from the API
// servers' own lists, then after edits: a Pod relabelled so that a
// Service no longer selects it, a Pod rescheduled with a ConfigMap mount
// added, a Service's selector edited. A caller who may list Pods and
// ConfigMaps but nothing else in one namespace of c1 sees those
// relations and no others, and no error; paging of a relation joins up.
func TestMoreRelationsOnRealClusters(t *testing.T) {
	testcluster.SkipShort(t, "real clusters")
	env := testbed.Env(t)
	ns := freshNamespace("rels")
	for _, c := range env.Clusters() {
		seedRelations(t, dyn(t, c), ns)
	}
	resources := []string{"nodes"}
	for _, k := range relKinds {
		resources = append(resources, k.resource)
	}
	ctx := t.Context()
	pods := rbacv1.PolicyRule{Verbs: []string{"list", "watch"}, APIGroups: []string{""}, Resources: []string{"pods", "configmaps"}}
	if err := env.Cluster("c1").Grant(ctx, "bob", ns, pods); err != nil {
		t.Fatal(err)
	}
	f := newFleet(t, app.Options{Informers: apptest.Informers(resources...), Schemas: openapi.Options{Interval: 300 * time.Millisecond},
		Auth: app.AuthOptions{Authn: app.AuthnTokenReview, AuthnConfig: env.Cluster("c1").AdminConfig()}})
	admin := env.Cluster("c1").AdminConfig().BearerToken
	testcluster.Eventually(t, 60*time.Second, "every typed kind with its relations", func() (bool, string) {
		var got struct {
			Types []struct {
				Name   string
				Fields []struct{ Name string }
			} `json:"types"`
		}
		var d struct {
			Schema struct {
				Types json.RawMessage
			} `json:"__schema"`
		}
		if errs := f.queryAs(t, admin, `{ __schema { types { name fields { name } } } }`, nil, &d); len(errs) > 0 {
			return false, fmt.Sprint(errs)
		}
		_ = json.Unmarshal(d.Schema.Types, &got.Types)
		for _, k := range relKinds {
			i := slices.IndexFunc(got.Types, func(x struct {
				Name   string
				Fields []struct{ Name string }
			}) bool {
				return x.Name == k.typ
			})
			if i < 0 {
				return false, "no type " + k.typ
			}
			for _, field := range k.fields {
				if !slices.ContainsFunc(got.Types[i].Fields, func(x struct{ Name string }) bool { return x.Name == field }) {
					return false, k.typ + " has no " + field
				}
			}
		}
		return true, ""
	})
	f.expectMoreRelations(t, admin, ns, relationsTruthOf(t, ns, nil))

	t.Run("a caller who may list Pods and ConfigMaps in one namespace of c1", func(t *testing.T) {
		bob := env.Cluster("c1").UserConfig("bob").BearerToken
		f.expectMoreRelations(t, bob, ns, relationsTruthOf(t, ns, func(cluster, kind string) bool {
			return cluster == "c1" && (kind == "Pod" || kind == "ConfigMap")
		}))
	})

	t.Run("paging", func(t *testing.T) {
		// cm-shared is mounted by every Pod of the namespace: page
		// through ConfigMap.pods two at a time.
		want := relationsTruthOf(t, ns, nil)["ConfigMap c1/cm-shared pods"]
		var names []string
		after := any(nil)
		for range 10 {
			var d struct {
				Configmaps struct {
					Edges []struct {
						Node struct {
							Pods struct {
								TotalCount int
								PageInfo   struct {
									HasNextPage bool
									EndCursor   string
								}
								Edges []struct{ Node struct{ Name string } }
							}
						}
					}
				}
			}
			errs := f.queryAs(t, admin, `query($ns: String!, $after: String) { configmaps(filter: {clusters: ["c1"], namespaces: [$ns], nameContains: "cm-shared"}) {
			  edges { node { ... on ConfigMap { pods(first: 2, after: $after) { totalCount pageInfo { hasNextPage endCursor } edges { node { name } } } } } } } }`,
				map[string]any{"ns": ns, "after": after}, &d)
			if len(errs) > 0 || len(d.Configmaps.Edges) != 1 {
				t.Fatalf("%+v %+v", errs, d)
			}
			page := d.Configmaps.Edges[0].Node.Pods
			if page.TotalCount != len(want) {
				t.Errorf("totalCount %d, want %d", page.TotalCount, len(want))
			}
			for _, e := range page.Edges {
				names = append(names, e.Node.Name)
			}
			if !page.PageInfo.HasNextPage {
				break
			}
			after = page.PageInfo.EndCursor
		}
		if diff := gocmp.Diff(want, names); diff != "" {
			t.Errorf("pages of ConfigMap.pods (-servers +pages):\n%s", diff)
		}
	})

	t.Run("edits", func(t *testing.T) {
		c1 := dyn(t, env.Cluster("c1"))
		// web-2 no longer app=web: the Service web stops selecting it.
		patch := []byte(`{"metadata":{"labels":{"app":"other"}}}`)
		if _, err := c1.Resource(podsGVR).Namespace(ns).Patch(ctx, "web-2", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		// web-1 rescheduled to node 2, now mounting cm-extra too.
		rs := deletePodOf(t, c1, ns, "web-1", "web-rs")
		createRelationsPod(t, c1, ns, "web-1", ns+"-node-2", map[string]any{"app": "web"}, rs, "cm-extra")
		// The Service db now selects app=other: web-2.
		svc, err := c1.Resource(gvr("", "v1", "services")).Namespace(ns).Get(ctx, "db", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := unstructured.SetNestedStringMap(svc.Object, map[string]string{"app": "other"}, "spec", "selector"); err != nil {
			t.Fatal(err)
		}
		if _, err := c1.Resource(gvr("", "v1", "services")).Namespace(ns).Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		want := relationsTruthOf(t, ns, nil)
		for _, k := range []string{"Pod c1/web-2 services", "Pod c1/web-1 configMaps", "Pod c1/web-1 node", "ConfigMap c1/cm-extra pods"} {
			if gocmp.Equal(want[k], want[strings.Replace(k, "c1/", "c2/", 1)]) {
				t.Fatalf("%s: the edit did not change it (%v)", k, want[k])
			}
		}
		f.expectMoreRelations(t, admin, ns, want)
	})
}

// deletePodOf deletes a Pod of ns at once (no kubelet ends it
// gracefully), waits until it is gone, and returns its ReplicaSet rs, to
// create it again elsewhere: a Pod rescheduled.
func deletePodOf(t *testing.T, d dynamic.Interface, ns, pod, rs string) *unstructured.Unstructured {
	t.Helper()
	ctx := t.Context()
	if err := d.Resource(podsGVR).Namespace(ns).Delete(ctx, pod, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	testcluster.Eventually(t, 30*time.Second, pod+" deleted", func() (bool, string) {
		_, err := d.Resource(podsGVR).Namespace(ns).Get(ctx, pod, metav1.GetOptions{})
		return err != nil, fmt.Sprint(err)
	})
	owner, err := d.Resource(gvr("apps", "v1", "replicasets")).Namespace(ns).Get(ctx, rs, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return owner
}

// seedRelations creates, in ns of a cluster, two Nodes, a Deployment with
// a ReplicaSet and three Pods (mounting and referencing ConfigMaps,
// Secrets and a claim), Services, a claim bound to a volume, an Event,
// an Ingress, an autoscaler and an EndpointSlice.
func seedRelations(t *testing.T, d dynamic.Interface, ns string) {
	t.Helper()
	createNamespace(t, d, ns)
	obj := func(apiVersion, kind, name string, rest map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": name, "namespace": ns}}}
		for k, v := range rest {
			u.Object[k] = v
		}
		return u
	}
	for i := 1; i <= 2; i++ {
		name := fmt.Sprintf("%s-node-%d", ns, i)
		create(t, d, gvr("", "v1", "nodes"), &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Node", "metadata": map[string]any{"name": name}}})
		t.Cleanup(func() {
			_ = d.Resource(gvr("", "v1", "nodes")).Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	}
	pvName := ns + "-pv"
	create(t, d, gvr("", "v1", "persistentvolumes"), &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "PersistentVolume",
		"metadata": map[string]any{"name": pvName},
		"spec": map[string]any{"capacity": map[string]any{"storage": "1Gi"}, "accessModes": []any{"ReadWriteOnce"}, "hostPath": map[string]any{"path": "/tmp/x"},
			"claimRef": map[string]any{"namespace": ns, "name": "data"}}}})
	t.Cleanup(func() {
		_ = d.Resource(gvr("", "v1", "persistentvolumes")).Delete(context.Background(), pvName, metav1.DeleteOptions{})
	})
	create(t, d, gvr("", "v1", "persistentvolumeclaims"), obj("v1", "PersistentVolumeClaim", "data", map[string]any{"spec": map[string]any{
		"accessModes": []any{"ReadWriteOnce"}, "resources": map[string]any{"requests": map[string]any{"storage": "1Gi"}}, "volumeName": pvName}}))
	for _, name := range []string{"cm-shared", "cm-env", "cm-extra", "cm-unused"} {
		create(t, d, gvr("", "v1", "configmaps"), obj("v1", "ConfigMap", name, nil))
	}
	for _, name := range []string{"s-env", "s-pull"} {
		create(t, d, gvr("", "v1", "secrets"), obj("v1", "Secret", name, nil))
	}
	dep := create(t, d, gvr("apps", "v1", "deployments"), obj("apps/v1", "Deployment", "web", map[string]any{"spec": map[string]any{
		"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
		"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "web"}}, "spec": podSpec()}}}))
	rsObj := obj("apps/v1", "ReplicaSet", "web-rs", map[string]any{"spec": map[string]any{
		"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
		"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "web"}}, "spec": podSpec()}}})
	rsObj.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: dep.GetName(), UID: dep.GetUID(), Controller: new(true)}})
	rs := create(t, d, gvr("apps", "v1", "replicasets"), rsObj)
	web1 := createRelationsPod(t, d, ns, "web-1", ns+"-node-1", map[string]any{"app": "web", "tier": "fe"}, rs)
	createRelationsPod(t, d, ns, "web-2", ns+"-node-2", map[string]any{"app": "web"}, rs)
	createRelationsPod(t, d, ns, "db-1", ns+"-node-1", map[string]any{"app": "db"}, nil, "claim:data")
	for _, svc := range []struct {
		name     string
		selector map[string]any
	}{{"web", map[string]any{"app": "web"}}, {"web-fe", map[string]any{"app": "web", "tier": "fe"}}, {"db", map[string]any{"app": "db"}}, {"none", nil}} {
		spec := map[string]any{"ports": []any{map[string]any{"port": int64(80)}}}
		if svc.selector != nil {
			spec["selector"] = svc.selector
		}
		create(t, d, gvr("", "v1", "services"), obj("v1", "Service", svc.name, map[string]any{"spec": spec}))
	}
	create(t, d, gvr("", "v1", "events"), obj("v1", "Event", "web-1.started", map[string]any{
		"involvedObject": map[string]any{"apiVersion": "v1", "kind": "Pod", "namespace": ns, "name": "web-1", "uid": string(web1.GetUID())},
		"reason":         "Started", "message": "started", "type": "Normal"}))
	backend := func(name string) map[string]any {
		return map[string]any{"service": map[string]any{"name": name, "port": map[string]any{"number": int64(80)}}}
	}
	create(t, d, gvr("networking.k8s.io", "v1", "ingresses"), obj("networking.k8s.io/v1", "Ingress", "web", map[string]any{"spec": map[string]any{
		"defaultBackend": backend("missing"),
		"rules": []any{map[string]any{"http": map[string]any{"paths": []any{
			map[string]any{"path": "/", "pathType": "Prefix", "backend": backend("web")},
			map[string]any{"path": "/db", "pathType": "Prefix", "backend": backend("db")}}}}}}}))
	create(t, d, gvr("autoscaling", "v2", "horizontalpodautoscalers"), obj("autoscaling/v2", "HorizontalPodAutoscaler", "web", map[string]any{"spec": map[string]any{
		"scaleTargetRef": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "minReplicas": int64(1), "maxReplicas": int64(3)}}))
	slice := obj("discovery.k8s.io/v1", "EndpointSlice", "web-abcde", map[string]any{"addressType": "IPv4", "endpoints": []any{}})
	slice.SetLabels(map[string]string{"kubernetes.io/service-name": "web"})
	create(t, d, gvr("discovery.k8s.io", "v1", "endpointslices"), slice)
}

// createRelationsPod creates a Pod owned by owner (if not nil) that mounts
// cm-shared and, by env, cm-env and s-env, pulls with s-pull, and mounts
// each of mounts: a ConfigMap, or "claim:<name>" a claim.
func createRelationsPod(t *testing.T, d dynamic.Interface, ns, name, node string, lbls map[string]any, owner *unstructured.Unstructured, mounts ...string) *unstructured.Unstructured {
	t.Helper()
	volumes := []any{map[string]any{"name": "shared", "projected": map[string]any{"sources": []any{map[string]any{"configMap": map[string]any{"name": "cm-shared"}}}}}}
	for i, m := range mounts {
		v := map[string]any{"name": fmt.Sprintf("m%d", i)}
		if claim, ok := strings.CutPrefix(m, "claim:"); ok {
			v["persistentVolumeClaim"] = map[string]any{"claimName": claim}
		} else {
			v["configMap"] = map[string]any{"name": m}
		}
		volumes = append(volumes, v)
	}
	spec := map[string]any{"nodeName": node, "volumes": volumes, "imagePullSecrets": []any{map[string]any{"name": "s-pull"}},
		"containers": []any{map[string]any{"name": "c", "image": "busybox",
			"envFrom": []any{map[string]any{"configMapRef": map[string]any{"name": "cm-env"}}},
			"env":     []any{map[string]any{"name": "S", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "s-env", "key": "k"}}}}}}}
	meta := map[string]any{"namespace": ns, "name": name, "labels": lbls}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}}
	if owner != nil {
		u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "apps/v1", Kind: owner.GetKind(), Name: owner.GetName(), UID: owner.GetUID(), Controller: new(true)}})
	}
	return create(t, d, podsGVR, u)
}

// expectMoreRelations waits until the relations of relKinds answer, for
// the caller of token, what want (relationsTruthOf) says.
func (f *fleet) expectMoreRelations(t *testing.T, token, ns string, want map[string][]string) {
	t.Helper()
	var q strings.Builder
	q.WriteString("query($ns: String!, $nodes: String!) {\n")
	for _, k := range relKinds {
		filter := "namespaces: [$ns]"
		if k.root == "persistentvolumes" {
			filter = "nameContains: $nodes"
		}
		fmt.Fprintf(&q, "  %s(filter: {%s}, first: 20) { edges { node { __typename cluster name ... on %s {", k.root, filter, k.typ)
		for _, field := range k.fields {
			if oneRelations[field] {
				fmt.Fprintf(&q, " %s { name }", field)
			} else {
				fmt.Fprintf(&q, " %s(first: 20) { totalCount edges { node { name } } }", field)
			}
		}
		q.WriteString(" } } } }\n")
	}
	q.WriteString("}")
	if len(want) == 0 {
		t.Fatal("no relation to compare")
	}
	t.Logf("comparing %d relations of %d objects", len(want), countObjects(want))
	testcluster.Eventually(t, 60*time.Second, "relations equal to the servers'", func() (bool, string) {
		var got map[string]struct {
			Edges []struct{ Node map[string]json.RawMessage }
		}
		if errs := f.queryAs(t, token, q.String(), map[string]any{"ns": ns, "nodes": ns}, &got); len(errs) > 0 {
			return false, fmt.Sprintf("%+v", errs)
		}
		answer := map[string][]string{}
		for _, k := range relKinds {
			for _, e := range got[k.root].Edges {
				var typ, cluster, name string
				_ = json.Unmarshal(e.Node["__typename"], &typ)
				_ = json.Unmarshal(e.Node["cluster"], &cluster)
				_ = json.Unmarshal(e.Node["name"], &name)
				for _, field := range k.fields {
					names := []string{}
					if oneRelations[field] {
						var one *struct{ Name string }
						_ = json.Unmarshal(e.Node[field], &one)
						if one != nil {
							names = append(names, one.Name)
						}
					} else {
						var conn struct {
							TotalCount int
							Edges      []struct{ Node struct{ Name string } }
						}
						_ = json.Unmarshal(e.Node[field], &conn)
						for _, x := range conn.Edges {
							names = append(names, x.Node.Name)
						}
						if conn.TotalCount != len(names) {
							return false, fmt.Sprintf("%s %s/%s %s: totalCount %d, %d edges", typ, cluster, name, field, conn.TotalCount, len(names))
						}
					}
					slices.Sort(names)
					answer[typ+" "+cluster+"/"+name+" "+field] = names
				}
			}
		}
		diff := gocmp.Diff(want, answer)
		return diff == "", "(-servers +answer):\n" + diff
	})
}

// countObjects returns how many objects the relations of want hold, in
// all.
func countObjects(want map[string][]string) int {
	n := 0
	for _, v := range want {
		n += len(v)
	}
	return n
}

// relationsTruthOf computes every relation of relKinds from the API
// servers' lists of ns (and of the test's Nodes and volumes): the objects
// of kinds that visible lets through (nil: all), each with the related
// objects visible lets through.
func relationsTruthOf(t *testing.T, ns string, visible func(cluster, kind string) bool) map[string][]string {
	t.Helper()
	if visible == nil {
		visible = func(string, string) bool { return true }
	}
	out := map[string][]string{}
	for _, c := range testbed.Env(t).Clusters() {
		d := dyn(t, c)
		lists := map[string][]unstructured.Unstructured{}
		for _, k := range relKinds {
			namespace := ns
			if k.typ == "PersistentVolume" {
				namespace = ""
			}
			l, err := d.Resource(k.gvr).Namespace(namespace).List(t.Context(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			lists[k.typ] = slices.DeleteFunc(l.Items, func(u unstructured.Unstructured) bool {
				return k.typ == "PersistentVolume" && !strings.HasPrefix(u.GetName(), ns)
			})
		}
		nodes, err := d.Resource(gvr("", "v1", "nodes")).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		lists["Node"] = nodes.Items
		// names returns the names of the objects of kind that keep says,
		// when the caller sees that kind; sorted.
		names := func(kind string, keep func(u *unstructured.Unstructured) bool) []string {
			out := []string{}
			if !visible(c.Name(), kind) {
				return out
			}
			for i := range lists[kind] {
				if keep(&lists[kind][i]) {
					out = append(out, lists[kind][i].GetName())
				}
			}
			slices.Sort(out)
			return out
		}
		named := func(kind string, name string) []string {
			return names(kind, func(u *unstructured.Unstructured) bool { return u.GetName() == name })
		}
		podRefs := map[string]map[string][]string{} // pod name → kind → names
		for _, u := range lists["Pod"] {
			var p corev1.Pod
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &p); err != nil {
				t.Fatal(err)
			}
			refs := map[string][]string{}
			for _, v := range p.Spec.Volumes {
				switch {
				case v.ConfigMap != nil:
					refs["ConfigMap"] = append(refs["ConfigMap"], v.ConfigMap.Name)
				case v.Secret != nil:
					refs["Secret"] = append(refs["Secret"], v.Secret.SecretName)
				case v.PersistentVolumeClaim != nil:
					refs["PersistentVolumeClaim"] = append(refs["PersistentVolumeClaim"], v.PersistentVolumeClaim.ClaimName)
				case v.Projected != nil:
					for _, s := range v.Projected.Sources {
						if s.ConfigMap != nil {
							refs["ConfigMap"] = append(refs["ConfigMap"], s.ConfigMap.Name)
						}
						if s.Secret != nil {
							refs["Secret"] = append(refs["Secret"], s.Secret.Name)
						}
					}
				}
			}
			for _, ct := range append(p.Spec.InitContainers, p.Spec.Containers...) {
				for _, e := range ct.EnvFrom {
					if e.ConfigMapRef != nil {
						refs["ConfigMap"] = append(refs["ConfigMap"], e.ConfigMapRef.Name)
					}
					if e.SecretRef != nil {
						refs["Secret"] = append(refs["Secret"], e.SecretRef.Name)
					}
				}
				for _, e := range ct.Env {
					if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
						refs["ConfigMap"] = append(refs["ConfigMap"], e.ValueFrom.ConfigMapKeyRef.Name)
					}
					if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
						refs["Secret"] = append(refs["Secret"], e.ValueFrom.SecretKeyRef.Name)
					}
				}
			}
			for _, s := range p.Spec.ImagePullSecrets {
				refs["Secret"] = append(refs["Secret"], s.Name)
			}
			podRefs[p.Name] = refs
		}
		controller := func(u *unstructured.Unstructured) (metav1.OwnerReference, bool) {
			for _, r := range u.GetOwnerReferences() {
				if r.Controller != nil && *r.Controller {
					return r, true
				}
			}
			return metav1.OwnerReference{}, false
		}
		ownedBy := func(uid types.UID) func(u *unstructured.Unstructured) bool {
			return func(u *unstructured.Unstructured) bool {
				r, ok := controller(u)
				return ok && r.UID == uid
			}
		}
		owner := func(u *unstructured.Unstructured) []string {
			r, ok := controller(u)
			if !ok {
				return []string{}
			}
			kind := map[string]string{"ReplicaSet": "ReplicaSet", "Deployment": "Deployment"}[r.Kind]
			return names(kind, func(x *unstructured.Unstructured) bool { return x.GetUID() == r.UID })
		}
		str := func(u *unstructured.Unstructured, path ...string) string {
			s, _, _ := unstructured.NestedString(u.Object, path...)
			return s
		}
		selects := func(svc, pod *unstructured.Unstructured) bool {
			sel, _, _ := unstructured.NestedStringMap(svc.Object, "spec", "selector")
			return len(sel) > 0 && labels.SelectorFromSet(sel).Matches(labels.Set(pod.GetLabels()))
		}
		set := func(kind string, u *unstructured.Unstructured, field string, v []string) {
			if visible(c.Name(), kind) {
				out[kind+" "+c.Name()+"/"+u.GetName()+" "+field] = v
			}
		}
		for i := range lists["Pod"] {
			p := &lists["Pod"][i]
			refs := podRefs[p.GetName()]
			set("Pod", p, "node", named("Node", str(p, "spec", "nodeName")))
			set("Pod", p, "owner", owner(p))
			set("Pod", p, "services", names("Service", func(s *unstructured.Unstructured) bool { return selects(s, p) }))
			set("Pod", p, "events", names("Event", func(e *unstructured.Unstructured) bool { return str(e, "involvedObject", "uid") == string(p.GetUID()) }))
			for _, kind := range []string{"ConfigMap", "Secret", "PersistentVolumeClaim"} {
				field := map[string]string{"ConfigMap": "configMaps", "Secret": "secrets", "PersistentVolumeClaim": "persistentVolumeClaims"}[kind]
				set("Pod", p, field, names(kind, func(x *unstructured.Unstructured) bool { return slices.Contains(refs[kind], x.GetName()) }))
			}
		}
		referring := func(kind string) func(*unstructured.Unstructured) []string {
			return func(x *unstructured.Unstructured) []string {
				return names("Pod", func(p *unstructured.Unstructured) bool {
					return slices.Contains(podRefs[p.GetName()][kind], x.GetName())
				})
			}
		}
		for _, kind := range []string{"ConfigMap", "Secret", "PersistentVolumeClaim"} {
			for i := range lists[kind] {
				set(kind, &lists[kind][i], "pods", referring(kind)(&lists[kind][i]))
			}
		}
		for i := range lists["Service"] {
			s := &lists["Service"][i]
			set("Service", s, "pods", names("Pod", func(p *unstructured.Unstructured) bool { return selects(s, p) }))
			set("Service", s, "endpointSlices", names("EndpointSlice", func(e *unstructured.Unstructured) bool {
				return e.GetLabels()["kubernetes.io/service-name"] == s.GetName()
			}))
		}
		for i := range lists["PersistentVolumeClaim"] {
			u := &lists["PersistentVolumeClaim"][i]
			set("PersistentVolumeClaim", u, "volume", named("PersistentVolume", str(u, "spec", "volumeName")))
		}
		for i := range lists["PersistentVolume"] {
			u := &lists["PersistentVolume"][i]
			set("PersistentVolume", u, "claim", names("PersistentVolumeClaim", func(x *unstructured.Unstructured) bool {
				return x.GetNamespace() == str(u, "spec", "claimRef", "namespace") && x.GetName() == str(u, "spec", "claimRef", "name")
			}))
		}
		for i := range lists["Event"] {
			u := &lists["Event"][i]
			set("Event", u, "involvedResource", names(str(u, "involvedObject", "kind"), func(x *unstructured.Unstructured) bool {
				return x.GetUID() == types.UID(str(u, "involvedObject", "uid"))
			}))
		}
		for i := range lists["Deployment"] {
			u := &lists["Deployment"][i]
			set("Deployment", u, "replicaSets", names("ReplicaSet", ownedBy(u.GetUID())))
			var rsUIDs []types.UID
			for j := range lists["ReplicaSet"] {
				if ownedBy(u.GetUID())(&lists["ReplicaSet"][j]) {
					rsUIDs = append(rsUIDs, lists["ReplicaSet"][j].GetUID())
				}
			}
			set("Deployment", u, "pods", names("Pod", func(p *unstructured.Unstructured) bool {
				r, ok := controller(p)
				return ok && slices.Contains(rsUIDs, r.UID)
			}))
		}
		for i := range lists["ReplicaSet"] {
			u := &lists["ReplicaSet"][i]
			set("ReplicaSet", u, "owner", owner(u))
			set("ReplicaSet", u, "pods", names("Pod", ownedBy(u.GetUID())))
		}
		for i := range lists["Ingress"] {
			u := &lists["Ingress"][i]
			backends := []string{str(u, "spec", "defaultBackend", "service", "name")}
			rules, _, _ := unstructured.NestedSlice(u.Object, "spec", "rules")
			for _, r := range rules {
				paths, _, _ := unstructured.NestedSlice(r.(map[string]any), "http", "paths")
				for _, p := range paths {
					name, _, _ := unstructured.NestedString(p.(map[string]any), "backend", "service", "name")
					backends = append(backends, name)
				}
			}
			set("Ingress", u, "services", names("Service", func(s *unstructured.Unstructured) bool { return slices.Contains(backends, s.GetName()) }))
		}
		for i := range lists["HorizontalPodAutoscaler"] {
			u := &lists["HorizontalPodAutoscaler"][i]
			set("HorizontalPodAutoscaler", u, "target", names(str(u, "spec", "scaleTargetRef", "kind"), func(x *unstructured.Unstructured) bool {
				return x.GetName() == str(u, "spec", "scaleTargetRef", "name")
			}))
		}
		for i := range lists["EndpointSlice"] {
			u := &lists["EndpointSlice"][i]
			set("EndpointSlice", u, "service", named("Service", u.GetLabels()["kubernetes.io/service-name"]))
		}
	}
	return out
}
