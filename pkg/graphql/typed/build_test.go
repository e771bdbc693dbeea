package typed

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/graphql-go/graphql"

	"github.com/fleetcache/fleetcache/pkg/openapi"
)

// build builds the types of kinds with a Resource of one field.
func build(t *testing.T, kinds ...openapi.Kind) *Types {
	t.Helper()
	resource := graphql.NewInterface(graphql.InterfaceConfig{Name: "Resource", Fields: graphql.Fields{"name": {Type: graphql.String}}})
	json := RawScalar("JSON", "Any JSON value.", Literal)
	return Build(&openapi.Snapshot{Kinds: kinds}, Options{Resource: resource, JSON: json,
		Fields:     func() graphql.Fields { return graphql.Fields{"name": {Type: graphql.String}} },
		TypeNames:  map[string]bool{"Resource": true, "Cluster": true},
		FieldNames: map[string]bool{"resources": true, "clusters": true}})
}

// doc decodes an OpenAPI v3 document.
func doc(t *testing.T, url, raw string) *openapi.Document {
	t.Helper()
	d, err := openapi.Decode(url, []byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// typeString writes a field's type as SDL does.
func typeString(t graphql.Type) string { return t.String() }

// fieldsOf returns the fields of obj and their types.
func fieldsOf(obj *graphql.Object) map[string]string {
	out := map[string]string{}
	for name, f := range obj.Fields() {
		out[name] = typeString(f.Type)
	}
	return out
}

// nested returns the object type of obj's field path (a.b.c).
func nested(t *testing.T, obj *graphql.Object, path string) *graphql.Object {
	t.Helper()
	for _, name := range strings.Split(path, ".") {
		f := obj.Fields()[name]
		if f == nil {
			t.Fatalf("no field %s in %s", name, obj.Name())
		}
		o, ok := graphql.GetNamed(f.Type).(*graphql.Object)
		if !ok {
			t.Fatalf("%s.%s is %s", obj.Name(), name, f.Type)
		}
		obj = o
	}
	return obj
}

func TestPodFromAServersSchema(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "pod-openapi-v1.36.json"))
	if err != nil {
		t.Fatal(err)
	}
	d := doc(t, "/openapi/v3/api/v1?hash=x", string(raw))
	types := build(t, openapi.Kind{Kind: "Pod", Resource: "pods", Namespaced: true,
		Versions: []openapi.Served{{Version: "v1", Doc: d, Schema: "io.k8s.api.core.v1.Pod", Clusters: []string{"c1"}}}})
	if len(types.Kinds) != 1 || types.Kinds[0].Field != "pods" || types.Kinds[0].Type.Name() != "Pod" {
		t.Fatalf("kinds: %+v", types.Kinds)
	}
	pod := types.Of("", "Pod")
	for _, tc := range []struct {
		path string
		want map[string]string // some of its fields
	}{
		{"", map[string]string{"name": "String", "metadata": "PodMetadata", "spec": "PodSpec", "status": "PodStatus"}},
		{"metadata", map[string]string{"labels": "JSON", "generation": "Long", "ownerReferences": "[OwnerReference!]", "creationTimestamp": "String"}},
		{"spec", map[string]string{"nodeName": "String", "activeDeadlineSeconds": "Long", "containers": "[Container!]", "overhead": "JSON"}},
		{"spec.containers", map[string]string{"image": "String", "args": "[String!]", "ports": "[ContainerPort!]", "imagePullPolicy": "String"}},
		{"spec.containers.ports", map[string]string{"containerPort": "Int", "protocol": "String"}},
		{"spec.containers.livenessProbe.httpGet", map[string]string{"port": "IntOrString", "path": "String"}},
		{"spec.containers.resources", map[string]string{"limits": "JSON", "requests": "JSON"}},
		{"status", map[string]string{"phase": "String", "containerStatuses": "[ContainerStatus!]"}},
		{"status.containerStatuses", map[string]string{"ready": "Boolean", "restartCount": "Int"}},
	} {
		obj := pod
		if tc.path != "" {
			obj = nested(t, pod, tc.path)
		}
		got := fieldsOf(obj)
		for name, want := range tc.want {
			if got[name] != want {
				t.Errorf("%s.%s: %q, want %q", tc.path, name, got[name], want)
			}
		}
	}
	if _, ok := pod.Fields()["kind"]; ok {
		t.Error("Pod has the schema's kind beside Resource's")
	}
	phase := nested(t, pod, "status").Fields()["phase"]
	if !strings.Contains(phase.Description, "One of: ") || !strings.Contains(phase.Description, "Running") {
		t.Errorf("phase's description does not list its values: %q", phase.Description)
	}
	if !strings.Contains(pod.Description(), "served at v1.") {
		t.Errorf("Pod's description: %q", pod.Description())
	}
	if _, err := graphql.NewSchema(graphql.SchemaConfig{Query: graphql.NewObject(graphql.ObjectConfig{Name: "Query",
		Fields: graphql.Fields{"pod": {Type: pod}}})}); err != nil {
		t.Errorf("the types make no schema: %v", err)
	}
}

// widget returns a kind Widget of group whose spec has props, served at
// version by clusters.
func widget(t *testing.T, group, version, plural, props string, clusters ...string) openapi.Kind {
	raw := `{"components":{"schemas":{"w":{"type":"object","x-kubernetes-group-version-kind":[{"group":"` + group +
		`","version":"` + version + `","kind":"Widget"}],"properties":{"spec":{"type":"object","properties":{` + props + `}}}}}}}`
	d := doc(t, "/openapi/v3/apis/"+group+"/"+version+"?hash="+props, raw)
	return openapi.Kind{Group: group, Kind: "Widget", Resource: plural + "." + group, Namespaced: true,
		Versions: []openapi.Served{{Version: version, Doc: d, Schema: "w", Clusters: clusters}}}
}

func TestVersionsMerge(t *testing.T) {
	k := widget(t, "example.com", "v1", "widgets", `"size":{"type":"integer","format":"int32"},"color":{"type":"string"},"meta":{"type":"object","x-kubernetes-preserve-unknown-fields":true}`, "c1")
	v2 := widget(t, "example.com", "v2", "widgets", `"size":{"type":"string"},"color":{"type":"string"},"tags":{"type":"array","items":{"type":"string"}}`, "c2", "c3")
	k.Versions = append(k.Versions, v2.Versions...)
	types := build(t, k)
	spec := nested(t, types.Of("example.com", "Widget"), "spec")
	want := map[string]string{"size": "JSON", "color": "String", "tags": "[String!]", "meta": "JSON"}
	if diff := cmp.Diff(want, fieldsOf(spec)); diff != "" {
		t.Errorf("the union of the versions (-want +got):\n%s", diff)
	}
	desc := spec.Fields()["size"].Description
	if !strings.Contains(desc, "int32 in v1;") || !strings.Contains(desc, "string in v2.") {
		t.Errorf("size's description does not say why it is JSON: %q", desc)
	}
}

func TestNames(t *testing.T) {
	prop := `"a":{"type":"string"}`
	types := build(t,
		widget(t, "", "v1", "widgets", prop),
		widget(t, "example.com", "v1", "widgets", prop),
		widget(t, "other.example.com", "v1", "widgets", prop),
	)
	got := map[string][2]string{}
	for _, k := range types.Kinds {
		got[k.Group] = [2]string{k.Type.Name(), k.Field}
	}
	want := map[string][2]string{
		"":                  {"Widget", "widgets"},
		"example.com":       {"ExampleComWidget", "widgetsExampleCom"},
		"other.example.com": {"OtherExampleComWidget", "widgetsOtherExampleCom"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	// The engine's own names are qualified even where unique.
	cluster := widget(t, "cluster.x-k8s.io", "v1beta1", "clusters", prop)
	cluster.Kind = "Cluster"
	k := build(t, cluster).Kinds
	if len(k) != 1 || k[0].Type.Name() != "ClusterXK8sIoCluster" || k[0].Field != "clustersClusterXK8sIo" {
		t.Errorf("Cluster of cluster.x-k8s.io: %+v", k)
	}
	for _, tc := range [][2]string{{"x-kubernetes-foo", "xKubernetesFoo"}, {"3d", "_3d"}, {"__x", "x__x"}, {"$ref", "ref"}} {
		if got := gqlName(tc[0], false); got != tc[1] {
			t.Errorf("gqlName(%q) = %q, want %q", tc[0], got, tc[1])
		}
	}
}

// TestSharedTypes checks that list items of one OpenAPI component and
// shape share a type, across fields and kinds, while the types of values
// outside lists stay the kind's own (their values may be kept beside the
// body, by path).
func TestSharedTypes(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "pod-openapi-v1.36.json"))
	if err != nil {
		t.Fatal(err)
	}
	d := doc(t, "/x", string(raw))
	served := []openapi.Served{{Version: "v1", Doc: d, Schema: "io.k8s.api.core.v1.Pod"}}
	other := openapi.Kind{Group: "example.com", Kind: "PodLike", Resource: "podlikes.example.com", Versions: served}
	types := build(t, openapi.Kind{Kind: "Pod", Resource: "pods", Versions: served}, other)
	pod, like := types.Of("", "Pod"), types.Of("example.com", "PodLike")
	if pod.Fields()["spec"].Type == like.Fields()["spec"].Type {
		t.Error("the kinds share their spec's type")
	}
	c := nested(t, pod, "spec").Fields()
	for _, f := range []string{"initContainers"} {
		if c[f].Type.String() != c["containers"].Type.String() {
			t.Errorf("spec.%s is %s, spec.containers %s", f, c[f].Type, c["containers"].Type)
		}
	}
	if nested(t, like, "spec").Fields()["containers"].Type.String() != "[Container!]" {
		t.Errorf("PodLike's containers: %s", nested(t, like, "spec").Fields()["containers"].Type)
	}
	s, err := graphql.NewSchema(graphql.SchemaConfig{Query: graphql.NewObject(graphql.ObjectConfig{Name: "Query",
		Fields: graphql.Fields{"pod": {Type: pod}, "like": {Type: like}}})})
	if err != nil {
		t.Fatal(err)
	}
	// A Pod made about 360 types by path alone.
	if n := len(s.TypeMap()); n > 200 {
		t.Errorf("%d types for a Pod and a kind of the same schema", n)
	}
}
