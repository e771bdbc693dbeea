package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/fleetcache/fleetcache/internal/app"
	"github.com/fleetcache/fleetcache/internal/apptest"
	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/graphql"
	"github.com/fleetcache/fleetcache/pkg/openapi"
)

// selection is a GraphQL selection set of a typed kind, as nested maps:
// a nil value is a leaf.
type selection map[string]selection

// String writes s as GraphQL: { a b { c } }.
func (s selection) String() string {
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("{")
	for _, k := range keys {
		b.WriteString(" " + k)
		if s[k] != nil {
			b.WriteString(" " + s[k].String())
		}
	}
	b.WriteString(" }")
	return b.String()
}

// project returns what a typed query selecting s answers for v, a value
// of the API server's object: its fields as they are, null where absent.
func project(v any, s selection) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, sub := range s {
			if sub == nil {
				out[k] = v[k]
			} else {
				out[k] = project(v[k], sub)
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = project(e, s)
		}
		return out
	}
	return nil
}

// typedFleet starts a fleet of the three test clusters that caches
// resources and follows their OpenAPI schemas every 300 ms.
func typedFleet(t *testing.T, resources ...string) *fleet {
	t.Helper()
	return newFleet(t, app.Options{Informers: apptest.Informers(resources...), Schemas: openapi.Options{Interval: 300 * time.Millisecond}})
}

// waitType waits until the schema has the type name with the field
// field (present), or has no type name (!present).
func (f *fleet) waitType(t *testing.T, name, field string, present bool) {
	t.Helper()
	testcluster.Eventually(t, 30*time.Second, fmt.Sprintf("type %s with field %q present=%v", name, field, present), func() (bool, string) {
		var got struct {
			Type *struct{ Fields []struct{ Name string } } `json:"__type"`
		}
		f.mustQuery(t, `query($n: String!) { __type(name: $n) { fields { name } } }`, map[string]any{"n": name}, &got)
		if got.Type == nil {
			return !present, "no such type"
		}
		has := slices.ContainsFunc(got.Type.Fields, func(x struct{ Name string }) bool { return x.Name == field })
		return has == present, fmt.Sprint(got.Type.Fields)
	})
}

// typedNodes queries root { edges { node <sel> } } within ns and returns
// the nodes by cluster/name, with the connection's totalCount.
func (f *fleet) typedNodes(t *testing.T, root, ns string, sel selection) (map[string]any, int) {
	t.Helper()
	return f.typedNodesOf(t, root, map[string]any{"namespaces": []string{ns}}, sel)
}

// typedNodesOf is typedNodes with a ResourceFilter of its own.
func (f *fleet) typedNodesOf(t *testing.T, root string, filter map[string]any, sel selection) (map[string]any, int) {
	t.Helper()
	q := fmt.Sprintf(`query($filter: ResourceFilter) { %s(filter: $filter, first: 1000) { totalCount staleClusters revision edges { node { cluster name __typename ...on %s %s } } } }`,
		root, typeOfRoot(root), sel)
	var got map[string]struct {
		TotalCount    int
		StaleClusters []string
		Revision      string
		Edges         []struct{ Node map[string]any }
	}
	f.mustQuery(t, q, map[string]any{"filter": filter}, &got)
	conn := got[root]
	if conn.Revision == "" || conn.StaleClusters == nil {
		t.Fatalf("%s: no revision or staleClusters: %+v", root, conn)
	}
	out := map[string]any{}
	for _, e := range conn.Edges {
		if e.Node["__typename"] != typeOfRoot(root) {
			t.Errorf("%s: node of type %v", root, e.Node["__typename"])
		}
		key := e.Node["cluster"].(string) + "/" + e.Node["name"].(string)
		delete(e.Node, "cluster")
		delete(e.Node, "name")
		delete(e.Node, "__typename")
		out[key] = e.Node
	}
	return out, conn.TotalCount
}

func typeOfRoot(root string) string {
	return map[string]string{"pods": "Pod", "deployments": "Deployment", "services": "Service", "gizmos": "Gizmo",
		"nodes": "Node", "events": "Event", "persistentvolumeclaims": "PersistentVolumeClaim",
		"persistentvolumes": "PersistentVolume", "ingresses": "Ingress", "sprockets": "Sprocket"}[root]
}

// serverNodes returns what a typed query selecting sel answers for the
// objects of gvr in ns, read from the API servers; versions, when not
// nil, gives each cluster's version instead of gvr's.
func serverNodes(t *testing.T, gvr schema.GroupVersionResource, ns string, sel selection, versions map[string]string) map[string]any {
	t.Helper()
	return serverNodesOf(t, gvr, ns, "", sel, versions)
}

// serverNodesOf is serverNodes for the objects whose name contains
// nameContains ("" for all), in ns ("" for all, and for cluster-scoped
// kinds).
func serverNodesOf(t *testing.T, gvr schema.GroupVersionResource, ns, nameContains string, sel selection, versions map[string]string) map[string]any {
	t.Helper()
	out := map[string]any{}
	for _, c := range testbed.Env(t).Clusters() {
		if v, ok := versions[c.Name()]; ok {
			gvr.Version = v
		}
		list, err := dyn(t, c).Resource(gvr).Namespace(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range list.Items {
			if !strings.Contains(u.GetName(), nameContains) {
				continue
			}
			// Through JSON, as the answer comes: int64 as float64.
			var v map[string]any
			b, _ := json.Marshal(u.Object)
			_ = json.Unmarshal(b, &v)
			out[c.Name()+"/"+u.GetName()] = project(v, sel)
		}
	}
	return out
}

// podSelection is the Pod query, and more.
var podSelection = selection{
	"metadata": {"name": nil, "namespace": nil, "labels": nil, "annotations": nil, "creationTimestamp": nil, "uid": nil,
		"ownerReferences": {"kind": nil, "name": nil}},
	"spec": {"nodeName": nil, "activeDeadlineSeconds": nil, "restartPolicy": nil,
		"containers": {"name": nil, "image": nil, "args": nil, "resources": {"limits": nil, "requests": nil},
			"ports": {"containerPort": nil, "protocol": nil}}},
	"status": {"phase": nil, "containerStatuses": {"name": nil, "restartCount": nil, "ready": nil}},
}

var deploymentSelection = selection{
	"metadata": {"name": nil, "generation": nil},
	"spec": {"replicas": nil, "paused": nil, "selector": {"matchLabels": nil},
		"strategy": {"type": nil, "rollingUpdate": {"maxSurge": nil, "maxUnavailable": nil}},
		"template": {"spec": {"containers": {"name": nil, "image": nil}}}},
}

var serviceSelection = selection{
	"spec": {"type": nil, "selector": nil, "clusterIP": nil, "ports": {"name": nil, "port": nil, "targetPort": nil, "protocol": nil}},
}

// TestTypedKindsOnRealClusters checks typed answers against the API
// servers' objects, field by field: Pods, Deployments (an int-or-string,
// a 64-bit integer) and Services, through each kind's root field and
// through resources with inline fragments.
func TestTypedKindsOnRealClusters(t *testing.T) {
	testcluster.SkipShort(t, "real clusters")
	ns, _, f := startFieldFleetTyped(t, "typed")
	for _, c := range testbed.Env(t).Clusters() {
		d := dyn(t, c)
		// A Pod with what fieldPods lack: args, ports, resources, a
		// deadline (a 64-bit integer), an owner.
		create(t, d, podsGVR, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"namespace": ns, "name": "rich", "ownerReferences": []any{map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": "9d5c1a8e-0000-4000-8000-000000000001"}}},
			"spec": map[string]any{"activeDeadlineSeconds": int64(3600), "containers": []any{map[string]any{
				"name": "app", "image": "registry.example.com/app:2.1", "args": []any{"--port=8080", "--verbose"},
				"ports":     []any{map[string]any{"containerPort": int64(8080)}, map[string]any{"containerPort": int64(9090), "protocol": "UDP"}},
				"resources": map[string]any{"limits": map[string]any{"cpu": "500m", "memory": "128Mi"}, "requests": map[string]any{"cpu": "100m"}}}}}}})
		create(t, d, schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"namespace": ns, "name": "web"},
			"spec": map[string]any{"replicas": int64(3), "selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
				"strategy": map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxSurge": "25%", "maxUnavailable": int64(1)}},
				"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "web"}},
					"spec": map[string]any{"containers": []any{map[string]any{"name": "web", "image": "nginx:1.25"}}}}},
		}})
		create(t, d, schema.GroupVersionResource{Version: "v1", Resource: "services"}, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Service",
			"metadata": map[string]any{"namespace": ns, "name": "web"},
			"spec": map[string]any{"selector": map[string]any{"app": "web"},
				"ports": []any{map[string]any{"name": "http", "port": int64(80), "targetPort": "http"}, map[string]any{"name": "metrics", "port": int64(9090), "targetPort": int64(9090)}}},
		}})
	}
	f.waitType(t, "Pod", "spec", true)
	f.waitType(t, "Deployment", "spec", true)
	f.waitType(t, "Service", "spec", true)
	for _, tc := range []struct {
		root string
		gvr  schema.GroupVersionResource
		sel  selection
		want int
	}{
		{"pods", podsGVR, podSelection, 15},
		{"deployments", schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, deploymentSelection, 3},
		{"services", schema.GroupVersionResource{Version: "v1", Resource: "services"}, serviceSelection, 3},
	} {
		t.Run(tc.root, func(t *testing.T) {
			want := serverNodes(t, tc.gvr, ns, tc.sel, nil)
			testcluster.Eventually(t, 30*time.Second, "typed answers equal to the servers' objects", func() (bool, string) {
				got, total := f.typedNodes(t, tc.root, ns, tc.sel)
				diff := gocmp.Diff(want, got)
				return diff == "" && total == len(want) && total == tc.want, fmt.Sprintf("totalCount %d, want %d; (-server +answer):\n%s", total, len(want), diff)
			})
		})
	}
	t.Run("resources with fragments", func(t *testing.T) {
		want := serverNodes(t, podsGVR, ns, selection{"spec": {"nodeName": nil}}, nil)
		var got struct {
			Resources struct {
				Edges []struct{ Node map[string]any }
			}
		}
		f.mustQuery(t, `query($ns: String!) { resources(filter: {namespaces: [$ns]}, first: 1000) { edges { node { cluster name kind ... on Pod { spec { nodeName } } ... on Deployment { spec { replicas } } } } } }`,
			map[string]any{"ns": ns}, &got)
		pods := map[string]any{}
		for _, e := range got.Resources.Edges {
			n := e.Node
			key := n["cluster"].(string) + "/" + n["name"].(string)
			switch n["kind"] {
			case "Pod":
				pods[key] = map[string]any{"spec": n["spec"]}
			case "Deployment":
				if r := n["spec"].(map[string]any)["replicas"]; r != float64(3) {
					t.Errorf("%s: replicas %v", key, r)
				}
			default:
				if _, ok := n["spec"]; ok {
					t.Errorf("%s of kind %v has spec", key, n["kind"])
				}
			}
		}
		if diff := gocmp.Diff(want, pods); diff != "" {
			t.Errorf("Pods through resources (-server +answer):\n%s", diff)
		}
	})
}

// startFieldFleetTyped is startFieldFleet with the types of the typed
// tests and their schemas followed.
func startFieldFleetTyped(t *testing.T, prefix string) (ns, ns2 string, f *fleet) {
	t.Helper()
	ns, ns2 = seedFieldPods(t, prefix)
	f = typedFleet(t, "pods", "deployments.apps", "services", "configmaps")
	f.waitSynced(t)
	return ns, ns2, f
}

// gizmoCRD is the CustomResourceDefinition gizmos.typed.example.com with
// the versions given, each {name, spec's properties}; the first is stored.
func gizmoCRD(versions ...gizmoVersion) map[string]any {
	var vs []any
	for i, v := range versions {
		vs = append(vs, map[string]any{"name": v.name, "served": true, "storage": i == 0,
			"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object",
				"description": "A gizmo of the typed tests.",
				"properties": map[string]any{"spec": map[string]any{"type": "object", "description": "What the gizmo should be.",
					"properties": v.props}}}}})
	}
	return map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "gizmos.typed.example.com"},
		"spec": map[string]any{"group": "typed.example.com", "scope": "Namespaced",
			"names":    map[string]any{"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo", "listKind": "GizmoList"},
			"versions": vs}}
}

type gizmoVersion struct {
	name  string
	props map[string]any
}

var (
	gizmoV1 = gizmoVersion{"v1", map[string]any{
		"size":  map[string]any{"type": "integer", "description": "How big, in gizmo units."},
		"color": map[string]any{"type": "string", "enum": []any{"red", "blue"}},
	}}
	// gizmoV2 makes size a string: the fleet's versions conflict.
	gizmoV2 = gizmoVersion{"v2", map[string]any{
		"size":  map[string]any{"type": "string", "description": "How big: S, M or L."},
		"color": map[string]any{"type": "string"},
		"tags":  map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
	}}
)

// TestTypedCRDFollowsTheFleet adds a CRD while fleetcache runs (at v1 in
// c1 and c2, at v2 in c3, whose spec.size is of another type), changes
// it, and removes it: introspection follows within seconds, typed answers
// equal the servers' objects, and a subscription started before runs on
// throughout.
func TestTypedCRDFollowsTheFleet(t *testing.T) {
	testcluster.SkipShort(t, "real clusters")
	env := testbed.Env(t)
	ns := freshNamespace("gizmo")
	for _, c := range env.Clusters() {
		createNamespace(t, dyn(t, c), ns)
	}
	f := typedFleet(t, "gizmos.typed.example.com", "configmaps")
	f.waitType(t, "ConfigMap", "data", true)
	sub, res := f.API.Subscribe(t.Context(), graphql.Request{Query: `subscription($ns: String!) {
		resourceEvents(filter: {namespaces: [$ns], kinds: ["ConfigMap"]}) { type resource { cluster kind name ... on ConfigMap { data } } } }`,
		Variables: map[string]any{"ns": ns}})
	if sub == nil {
		t.Fatalf("Subscribe: %s", mustMarshal(t, res))
	}
	t.Cleanup(sub.Close)
	configMaps := 0
	// expectConfigMap creates a ConfigMap in c1 and expects its event,
	// with its data typed.
	expectConfigMap := func(when string) {
		t.Helper()
		configMaps++
		name := fmt.Sprintf("cm-%d", configMaps)
		var got struct {
			Data struct {
				ResourceEvents struct {
					Resource struct{ Data map[string]string }
				}
			}
		}
		event := expectEvent(t, sub, "ConfigMap", name, func() {
			create(t, dyn(t, env.Cluster("c1")), gvr("", "v1", "configmaps"), configMap(ns, name, nil, map[string]any{"when": when}))
		})
		if err := json.Unmarshal(event, &got); err != nil || got.Data.ResourceEvents.Resource.Data["when"] != when {
			t.Fatalf("%s: event %s (%v)", when, event, err)
		}
	}
	expectConfigMap("before the CRD")

	crds := map[string]gizmoVersion{"c1": gizmoV1, "c2": gizmoV1, "c3": gizmoV2}
	for _, c := range env.Clusters() {
		d := dyn(t, c)
		v := crds[c.Name()]
		create(t, d, crdGVR, &unstructured.Unstructured{Object: gizmoCRD(v)})
		spec := map[string]any{"size": int64(3), "color": "red"}
		if v.name == "v2" {
			spec = map[string]any{"size": "L", "color": "green", "tags": []any{"new", "shiny"}}
		}
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "typed.example.com/" + v.name, "kind": "Gizmo",
			"metadata": map[string]any{"namespace": ns, "name": "g-" + c.Name()}, "spec": spec}}
		testcluster.Eventually(t, 30*time.Second, "the CRD to be served in "+c.Name(), func() (bool, string) {
			_, err := d.Resource(gvr("typed.example.com", v.name, "gizmos")).Namespace(ns).Create(t.Context(), u, metav1.CreateOptions{})
			return err == nil, fmt.Sprint(err)
		})
	}
	t.Cleanup(func() {
		for _, c := range env.Clusters() {
			_ = dyn(t, c).Resource(crdGVR).Delete(context.Background(), "gizmos.typed.example.com", metav1.DeleteOptions{})
		}
	})
	f.waitType(t, "Gizmo", "spec", true)
	f.waitType(t, "GizmoSpec", "tags", true) // c3's v2 is in
	expectConfigMap("after the CRD came")

	t.Run("versions merged", func(t *testing.T) {
		var got struct {
			Type struct {
				Description string
				Fields      []struct {
					Name, Description string
					Type              struct{ Name, Kind string }
				}
			} `json:"__type"`
		}
		f.mustQuery(t, `{ __type(name: "GizmoSpec") { fields { name description type { name kind } } } }`, nil, &got)
		fields := map[string]string{}
		for _, fd := range got.Type.Fields {
			fields[fd.Name] = fd.Type.Name + " " + fd.Type.Kind
			if fd.Name == "size" && !strings.Contains(fd.Description, "conflict") {
				t.Errorf("size's description does not say why it is JSON: %q", fd.Description)
			}
		}
		want := map[string]string{"size": "JSON SCALAR", "color": "String SCALAR", "tags": " LIST"}
		if diff := gocmp.Diff(want, fields); diff != "" {
			t.Errorf("GizmoSpec's fields (-want +got):\n%s", diff)
		}
		sel := selection{"spec": {"size": nil, "color": nil, "tags": nil}, "metadata": {"name": nil}}
		versions := map[string]string{}
		for c, v := range crds {
			versions[c] = v.name
		}
		wantNodes := serverNodes(t, gvr("typed.example.com", "", "gizmos"), ns, sel, versions)
		testcluster.Eventually(t, 30*time.Second, "typed gizmos equal to the servers'", func() (bool, string) {
			got, total := f.typedNodes(t, "gizmos", ns, sel)
			diff := gocmp.Diff(wantNodes, got)
			return diff == "" && total == 3, fmt.Sprintf("totalCount %d; (-server +answer):\n%s", total, diff)
		})
	})

	t.Run("changed", func(t *testing.T) {
		d := dyn(t, env.Cluster("c1"))
		changed := gizmoVersion{"v1", map[string]any{"shape": map[string]any{"type": "string", "description": "Round or square."}}}
		for k, v := range gizmoV1.props {
			changed.props[k] = v
		}
		u, err := d.Resource(crdGVR).Get(t.Context(), "gizmos.typed.example.com", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		u.Object["spec"] = gizmoCRD(changed)["spec"]
		if _, err := d.Resource(crdGVR).Update(t.Context(), u, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		f.waitType(t, "GizmoSpec", "shape", true)
		expectConfigMap("after the CRD changed")
	})

	t.Run("removed", func(t *testing.T) {
		for _, c := range env.Clusters() {
			if err := dyn(t, c).Resource(crdGVR).Delete(t.Context(), "gizmos.typed.example.com", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		testcluster.Eventually(t, 30*time.Second, "Gizmo and gizmos to leave the schema", func() (bool, string) {
			var got struct {
				Type *struct{ Name string } `json:"__type"`
			}
			f.mustQuery(t, `{ __type(name: "Gizmo") { name } }`, nil, &got)
			return got.Type == nil, fmt.Sprint(got.Type)
		})
		var got map[string]any
		if errs := f.query(t, `{ gizmos { totalCount } }`, nil, &got); len(errs) == 0 || errs[0].Extensions.Code != "GRAPHQL_VALIDATION_FAILED" {
			t.Errorf("gizmos after the CRD left: %+v", errs)
		}
		expectConfigMap("after the CRD left")
	})
}

// relPod is a Pod of the relations test: its node and labels.
type relPod struct{ name, node, app string }

// TestRelationsOnRealClusters checks Service.pods, Node.pods and Pod.node
// against the truth computed from the API servers' own lists, then after
// a Service's selector is edited and a Pod is rescheduled (deleted and
// created again on another node).
func TestRelationsOnRealClusters(t *testing.T) {
	testcluster.SkipShort(t, "real clusters")
	env := testbed.Env(t)
	ns := freshNamespace("rel")
	nodeName := func(i int) string { return fmt.Sprintf("%s-node-%d", ns, i) }
	pods := []relPod{{"web-1", nodeName(1), "web"}, {"web-2", nodeName(2), "web"}, {"db-1", nodeName(1), "db"}, {"batch", "", "batch"}}
	for _, c := range env.Clusters() {
		d := dyn(t, c)
		createNamespace(t, d, ns)
		for i := 1; i <= 2; i++ {
			create(t, d, gvr("", "v1", "nodes"), &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Node",
				"metadata": map[string]any{"name": nodeName(i)}}})
		}
		t.Cleanup(func() {
			for i := 1; i <= 2; i++ {
				_ = d.Resource(gvr("", "v1", "nodes")).Delete(context.Background(), nodeName(i), metav1.DeleteOptions{})
			}
		})
		for _, p := range pods {
			createRelPod(t, d, ns, p)
		}
		for _, svc := range [][2]string{{"web", "web"}, {"db", "db"}, {"none", ""}} {
			spec := map[string]any{"ports": []any{map[string]any{"port": int64(80)}}}
			if svc[1] != "" {
				spec["selector"] = map[string]any{"app": svc[1]}
			}
			create(t, d, gvr("", "v1", "services"), &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Service",
				"metadata": map[string]any{"namespace": ns, "name": svc[0]}, "spec": spec}})
		}
	}
	f := typedFleet(t, "pods", "nodes", "services")
	f.waitSynced(t)
	f.waitType(t, "Node", "pods", true)
	f.waitType(t, "Service", "pods", true)
	f.waitType(t, "Pod", "node", true)
	f.expectRelations(t, ns)

	t.Run("fan-out counts in the cost", func(t *testing.T) {
		// 100 Nodes with 101 each (the Node, 100 Pods): 10,100, over 10,000.
		errs := f.query(t, `{ nodes(first: 100) { edges { node { name pods(first: 100) { edges { node { name } } } } } } }`, nil, nil)
		if len(errs) != 1 || errs[0].Extensions.Code != "QUERY_TOO_COMPLEX" || !strings.Contains(errs[0].Message, "10,100") {
			t.Errorf("errors %+v, want QUERY_TOO_COMPLEX for 10,100 objects", errs)
		}
		// The same through resources and a fragment.
		errs = f.query(t, `{ resources(first: 100) { edges { node { name ... on Node { pods(first: 100) { edges { node { name } } } } } } } }`, nil, nil)
		if len(errs) != 1 || errs[0].Extensions.Code != "QUERY_TOO_COMPLEX" {
			t.Errorf("errors %+v, want QUERY_TOO_COMPLEX", errs)
		}
	})

	t.Run("changes", func(t *testing.T) {
		c1 := dyn(t, env.Cluster("c1"))
		svc, err := c1.Resource(gvr("", "v1", "services")).Namespace(ns).Get(t.Context(), "db", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := unstructured.SetNestedStringMap(svc.Object, map[string]string{"app": "batch"}, "spec", "selector"); err != nil {
			t.Fatal(err)
		}
		if _, err := c1.Resource(gvr("", "v1", "services")).Namespace(ns).Update(t.Context(), svc, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		c2 := dyn(t, env.Cluster("c2"))
		if err := c2.Resource(podsGVR).Namespace(ns).Delete(t.Context(), "web-1", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
			t.Fatal(err)
		}
		testcluster.Eventually(t, 30*time.Second, "web-1 deleted in c2", func() (bool, string) {
			_, err := c2.Resource(podsGVR).Namespace(ns).Get(t.Context(), "web-1", metav1.GetOptions{})
			return err != nil, fmt.Sprint(err)
		})
		createRelPod(t, c2, ns, relPod{"web-1", nodeName(2), "web"})
		f.expectRelations(t, ns)
	})
}

// createRelPod creates p in ns.
func createRelPod(t *testing.T, d dynamic.Interface, ns string, p relPod) {
	t.Helper()
	spec := map[string]any{"containers": []any{map[string]any{"name": "c", "image": "busybox"}}}
	if p.node != "" {
		spec["nodeName"] = p.node
	}
	create(t, d, podsGVR, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"namespace": ns, "name": p.name, "labels": map[string]any{"app": p.app}}, "spec": spec}})
}

// expectRelations waits until Service.pods, Node.pods and Pod.node answer
// what the API servers' lists say.
func (f *fleet) expectRelations(t *testing.T, ns string) {
	t.Helper()
	want := relationsTruth(t, ns)
	const q = `query($ns: String!) {
	  services(filter: {namespaces: [$ns]}, first: 20) { edges { node { cluster name pods(first: 20) { totalCount edges { node { name } } } } } }
	  nodes(filter: {nameContains: $ns}, first: 20) { edges { node { cluster name pods(first: 20) { totalCount edges { node { name } } } } } }
	  pods(filter: {namespaces: [$ns]}) { edges { node { cluster name node { name } } } }
	}`
	testcluster.Eventually(t, 30*time.Second, "relations equal to the servers'", func() (bool, string) {
		var got struct {
			Services, Nodes relConnection
			Pods            struct {
				Edges []struct {
					Node struct {
						Cluster, Name string
						Node          *struct{ Name string }
					}
				}
			}
		}
		f.mustQuery(t, q, map[string]any{"ns": ns}, &got)
		answer := map[string][]string{}
		for kind, conn := range map[string]relConnection{"Service": got.Services, "Node": got.Nodes} {
			for _, e := range conn.Edges {
				names := []string{}
				for _, p := range e.Node.Pods.Edges {
					names = append(names, p.Node.Name)
				}
				slices.Sort(names)
				if e.Node.Pods.TotalCount != len(names) {
					return false, fmt.Sprintf("%s %s: totalCount %d, %d edges", kind, e.Node.Name, e.Node.Pods.TotalCount, len(names))
				}
				answer[kind+" "+e.Node.Cluster+"/"+e.Node.Name] = names
			}
		}
		for _, e := range got.Pods.Edges {
			node := []string{}
			if e.Node.Node != nil {
				node = append(node, e.Node.Node.Name)
			}
			answer["Pod "+e.Node.Cluster+"/"+e.Node.Name] = node
		}
		diff := gocmp.Diff(want, answer)
		return diff == "", "(-servers +answer):\n" + diff
	})
}

// relConnection is a page of Services or Nodes with their Pods.
type relConnection struct {
	Edges []struct {
		Node struct {
			Cluster, Name string
			Pods          struct {
				TotalCount int
				Edges      []struct{ Node struct{ Name string } }
			}
		}
	}
}

// relationsTruth computes the relations from the API servers' lists: each
// Service's Pods by its selector, each Node's Pods, each Pod's Node.
func relationsTruth(t *testing.T, ns string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, c := range testbed.Env(t).Clusters() {
		d := dyn(t, c)
		list := func(r schema.GroupVersionResource, namespace string) []unstructured.Unstructured {
			l, err := d.Resource(r).Namespace(namespace).List(t.Context(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return l.Items
		}
		pods := list(podsGVR, ns)
		nodes := map[string]bool{}
		for _, n := range list(gvr("", "v1", "nodes"), "") {
			if strings.Contains(n.GetName(), ns) {
				nodes[n.GetName()] = true
				out["Node "+c.Name()+"/"+n.GetName()] = []string{}
			}
		}
		for _, p := range pods {
			node, _, _ := unstructured.NestedString(p.Object, "spec", "nodeName")
			key := "Pod " + c.Name() + "/" + p.GetName()
			out[key] = []string{}
			if nodes[node] {
				out[key] = []string{node}
				out["Node "+c.Name()+"/"+node] = append(out["Node "+c.Name()+"/"+node], p.GetName())
			}
		}
		for _, s := range list(gvr("", "v1", "services"), ns) {
			sel, _, _ := unstructured.NestedStringMap(s.Object, "spec", "selector")
			names := []string{}
			for _, p := range pods {
				if len(sel) > 0 && labels.SelectorFromSet(sel).Matches(labels.Set(p.GetLabels())) {
					names = append(names, p.GetName())
				}
			}
			out["Service "+c.Name()+"/"+s.GetName()] = names
		}
	}
	for k := range out {
		slices.Sort(out[k])
	}
	return out
}
