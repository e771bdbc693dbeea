package graphql

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetcache/fleetcache/pkg/authn"
	"github.com/fleetcache/fleetcache/pkg/graphql/cursor"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/openapi"
)

// relKind is a kind of the relations test: its type and its schema.
type relKind struct {
	group, kind, resource string
	namespaced            bool
}

func (k relKind) typ() *object.Type {
	plural, _, _ := strings.Cut(k.resource, ".")
	return &object.Type{Resource: k.resource, GVR: schema.GroupVersionResource{Group: k.group, Version: "v1", Resource: plural},
		Kind: k.kind, Namespaced: k.namespaced}
}

// openapiKind returns k's kind with a schema of a spec of any content,
// and for an Event its own properties related and involvedObject (which
// relations leave alone: the property related is not Resource.related).
func (k relKind) openapiKind(t testing.TB) openapi.Kind {
	t.Helper()
	props := `"spec":{"type":"object","x-kubernetes-preserve-unknown-fields":true}`
	if k.kind == "Event" {
		props += `,"related":{"type":"object","properties":{"name":{"type":"string"}}},"involvedObject":{"type":"object","properties":{"name":{"type":"string"}}}` +
			`,"reason":{"type":"string"},"message":{"type":"string"}`
	}
	raw := `{"components":{"schemas":{"k":{"type":"object","x-kubernetes-group-version-kind":[{"group":"` + k.group +
		`","version":"v1","kind":"` + k.kind + `"}],"properties":{` + props + `}}}}}`
	doc, err := openapi.Decode("/openapi/v3/x?hash="+k.kind+k.group, []byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return openapi.Kind{Group: k.group, Kind: k.kind, Resource: k.resource, Namespaced: k.namespaced,
		Versions: []openapi.Served{{Version: "v1", Doc: doc, Schema: "k", Clusters: []string{"c1"}}}}
}

var relKinds = map[string]relKind{
	"Pod":                     {"", "Pod", "pods", true},
	"Node":                    {"", "Node", "nodes", false},
	"Service":                 {"", "Service", "services", true},
	"ConfigMap":               {"", "ConfigMap", "configmaps", true},
	"Secret":                  {"", "Secret", "secrets", true},
	"PersistentVolumeClaim":   {"", "PersistentVolumeClaim", "persistentvolumeclaims", true},
	"PersistentVolume":        {"", "PersistentVolume", "persistentvolumes", false},
	"Event":                   {"", "Event", "events", true},
	"Deployment":              {"apps", "Deployment", "deployments.apps", true},
	"ReplicaSet":              {"apps", "ReplicaSet", "replicasets.apps", true},
	"Ingress":                 {"networking.k8s.io", "Ingress", "ingresses.networking.k8s.io", true},
	"HorizontalPodAutoscaler": {"autoscaling", "HorizontalPodAutoscaler", "horizontalpodautoscalers.autoscaling", true},
	"EndpointSlice":           {"discovery.k8s.io", "EndpointSlice", "endpointslices.discovery.k8s.io", true},
}

// relFixture is an index of one cluster with an object of each kind of
// relKinds, related to one another, and a server whose schema has their
// types.
type relFixture struct {
	ix    *index.Index
	types map[string]*object.Type
	s     *Server
}

func newRelFixture(t testing.TB) *relFixture {
	t.Helper()
	f := &relFixture{ix: index.New(index.Options{}), types: map[string]*object.Type{}}
	var kinds []openapi.Kind
	for name, k := range relKinds {
		f.types[name] = k.typ()
		kinds = append(kinds, k.openapiKind(t))
	}
	// put adds an object; meta is more of its metadata, rest more of it.
	put := func(kind, namespace, name, meta, rest string) {
		k := relKinds[kind]
		apiVersion := "v1"
		if k.group != "" {
			apiVersion = k.group + "/v1"
		}
		m := `"name":"` + name + `","uid":"u-` + name + `"`
		if namespace != "" {
			m += `,"namespace":"` + namespace + `"`
		}
		if meta != "" {
			m += "," + meta
		}
		raw := `{"apiVersion":"` + apiVersion + `","kind":"` + kind + `","metadata":{` + m + `}` + rest + `}`
		var u unstructured.Unstructured
		if err := u.UnmarshalJSON([]byte(raw)); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		o, err := object.NewObject("c1", f.types[kind], &u)
		if err != nil {
			t.Fatal(err)
		}
		f.ix.Upsert(o)
	}
	owner := func(kind, name string) string {
		k := relKinds[kind]
		return `"ownerReferences":[{"apiVersion":"` + k.group + `/v1","kind":"` + kind + `","name":"` + name + `","uid":"u-` + name + `","controller":true}]`
	}
	put("Node", "", "n1", "", "")
	put("Deployment", "a", "d", "", "")
	put("ReplicaSet", "a", "rs", owner("Deployment", "d"), "")
	put("ReplicaSet", "a", "rs-old", owner("Deployment", "d"), "")
	put("Pod", "a", "p1", `"labels":{"app":"web","tier":"fe"},`+owner("ReplicaSet", "rs"),
		`,"spec":{"nodeName":"n1","volumes":[{"name":"v1","configMap":{"name":"cm1"}},{"name":"v2","projected":{"sources":[{"configMap":{"name":"cm2"}},{"secret":{"name":"s1"}}]}},`+
			`{"name":"v3","persistentVolumeClaim":{"claimName":"claim1"}}],"containers":[{"name":"c","envFrom":[{"configMapRef":{"name":"cm1"}}],`+
			`"env":[{"name":"X","valueFrom":{"secretKeyRef":{"name":"s2","key":"k"}}}]}]}`)
	put("Pod", "a", "p2", `"labels":{"app":"db"},`+owner("ReplicaSet", "rs-old"),
		`,"spec":{"imagePullSecrets":[{"name":"s1"}],"initContainers":[{"name":"i","env":[{"name":"Y","valueFrom":{"configMapKeyRef":{"name":"cm1","key":"k"}}}]}]}`)
	put("Pod", "b", "p3", `"labels":{"app":"web"}`, `,"spec":{"volumes":[{"name":"v1","configMap":{"name":"cm1"}}]}`)
	put("Service", "a", "web", "", `,"spec":{"selector":{"app":"web"}}`)
	put("Service", "a", "web-fe", "", `,"spec":{"selector":{"app":"web","tier":"fe"}}`)
	put("Service", "a", "web-be", "", `,"spec":{"selector":{"app":"web","tier":"be"}}`)
	put("Service", "a", "headless", "", `,"spec":{}`)
	put("ConfigMap", "a", "cm1", "", "")
	put("ConfigMap", "a", "cm2", "", "")
	put("Secret", "a", "s1", "", "")
	put("Secret", "a", "s2", "", "")
	put("PersistentVolumeClaim", "a", "claim1", "", `,"spec":{"volumeName":"pv1"}`)
	put("PersistentVolume", "", "pv1", "", `,"spec":{"claimRef":{"namespace":"a","name":"claim1","uid":"u-claim1"}}`)
	put("Event", "a", "e1", "", `,"involvedObject":{"apiVersion":"v1","kind":"Pod","namespace":"a","name":"p1","uid":"u-p1"}`)
	put("Event", "a", "e2", "", `,"involvedObject":{"apiVersion":"apps/v1","kind":"Deployment","namespace":"a","name":"d","uid":"u-d"}`)
	put("Ingress", "a", "ing", "", `,"spec":{"defaultBackend":{"service":{"name":"missing"}},"rules":[{"http":{"paths":[{"backend":{"service":{"name":"web"}}}]}}]}`)
	put("HorizontalPodAutoscaler", "a", "hpa", "", `,"spec":{"scaleTargetRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"d"}}`)
	put("EndpointSlice", "a", "web-x1", `"labels":{"kubernetes.io/service-name":"web"}`, "")
	if err := f.ix.Verify(); err != nil {
		t.Fatal(err)
	}
	f.s = newServer(t, f.ix, newFixture(t).tracker, Options{Kinds: staticKinds{&openapi.Snapshot{Kinds: kinds}}, Authorizer: scopesAuthorizer{}})
	return f
}

// TestRelationTable checks every relation over one cluster's objects,
// under a caller who may list everything and one who may not list some
// of the related kinds (they are not there, and no error says so).
func TestRelationTable(t *testing.T) {
	f := newRelFixture(t)
	all := []string{"pods", "nodes", "services", "configmaps", "secrets", "persistentvolumeclaims", "persistentvolumes", "events",
		"deployments.apps", "replicasets.apps", "ingresses.networking.k8s.io", "horizontalpodautoscalers.autoscaling",
		"endpointslices.discovery.k8s.io"}
	for _, tc := range []struct {
		name, query, want string
		scopes            []string
	}{
		{name: "Pod.node", query: `{ pods(filter: {namespaces: ["a"]}) { edges { node { name ... on Pod { node { name } } } } } }`,
			want: `{"pods":{"edges":[{"node":{"name":"p1","node":{"name":"n1"}}},{"node":{"name":"p2","node":null}}]}}`},
		{name: "Pod.services", query: `{ pods(filter: {namespaces: ["a", "b"]}) { edges { node { name ... on Pod { services(first: 10) { totalCount edges { node { name } } } } } } } }`,
			want: `{"pods":{"edges":[{"node":{"name":"p1","services":{"totalCount":2,"edges":[{"node":{"name":"web"}},{"node":{"name":"web-fe"}}]}}},` +
				`{"node":{"name":"p2","services":{"totalCount":0,"edges":[]}}},{"node":{"name":"p3","services":{"totalCount":0,"edges":[]}}}]}}`},
		{name: "Pod.owner chain", query: `{ pods(filter: {namespaces: ["a"]}) { edges { node { name ... on Pod { owner { name owner { name owner { name } } } } } } } }`,
			want: `{"pods":{"edges":[{"node":{"name":"p1","owner":{"name":"rs","owner":{"name":"d","owner":null}}}},{"node":{"name":"p2","owner":{"name":"rs-old","owner":{"name":"d","owner":null}}}}]}}`},
		{name: "Deployment", query: `{ deployments { edges { node { ... on Deployment { replicaSets(first: 10) { totalCount edges { node { name } } } pods(first: 10) { totalCount edges { node { name } } } events(first: 10) { edges { node { name } } } } } } } }`,
			want: `{"deployments":{"edges":[{"node":{"replicaSets":{"totalCount":2,"edges":[{"node":{"name":"rs"}},{"node":{"name":"rs-old"}}]},` +
				`"pods":{"totalCount":2,"edges":[{"node":{"name":"p1"}},{"node":{"name":"p2"}}]},"events":{"edges":[{"node":{"name":"e2"}}]}}}]}}`},
		{name: "Deployment.pods paged", query: `{ deployments { edges { node { ... on Deployment { pods(first: 1, after: "` + pageCursor(t, f, "Pod", "a", "p1") + `") { totalCount pageInfo { hasNextPage } edges { node { name } } } } } } } }`,
			want: `{"deployments":{"edges":[{"node":{"pods":{"totalCount":2,"pageInfo":{"hasNextPage":false},"edges":[{"node":{"name":"p2"}}]}}}]}}`},
		{name: "events", query: `{ pods(filter: {namespaces: ["a"]}) { edges { node { name ... on Pod { events(first: 10) { totalCount edges { node { name ... on Event { involvedResource { name } involvedObject { name } related(first: 1) { totalCount } } } } } } } } } }`,
			want: `{"pods":{"edges":[{"node":{"name":"p1","events":{"totalCount":1,"edges":[{"node":{"name":"e1","involvedResource":{"name":"p1"},"involvedObject":{"name":"p1"},"related":{"totalCount":1}}}]}}},{"node":{"name":"p2","events":{"totalCount":0,"edges":[]}}}]}}`},
		{name: "volumes", query: `{ pods(filter: {namespaces: ["a"]}, first: 1) { edges { node { ... on Pod { persistentVolumeClaims(first: 10) { edges { node { name ... on PersistentVolumeClaim { pods { totalCount } volume { name ... on PersistentVolume { claim { name } } } } } } } } } } } }`,
			want: `{"pods":{"edges":[{"node":{"persistentVolumeClaims":{"edges":[{"node":{"name":"claim1","pods":{"totalCount":1},"volume":{"name":"pv1","claim":{"name":"claim1"}}}}]}}}]}}`},
		{name: "Pod.configMaps and secrets", query: `{ pods(filter: {namespaces: ["a"]}) { edges { node { name ... on Pod { configMaps(first: 10) { totalCount edges { node { name } } } secrets(first: 10) { totalCount edges { node { name } } } } } } } }`,
			want: `{"pods":{"edges":[{"node":{"name":"p1","configMaps":{"totalCount":2,"edges":[{"node":{"name":"cm1"}},{"node":{"name":"cm2"}}]},"secrets":{"totalCount":2,"edges":[{"node":{"name":"s1"}},{"node":{"name":"s2"}}]}}},` +
				`{"node":{"name":"p2","configMaps":{"totalCount":1,"edges":[{"node":{"name":"cm1"}}]},"secrets":{"totalCount":1,"edges":[{"node":{"name":"s1"}}]}}}]}}`},
		{name: "ConfigMap.pods and Secret.pods", query: `{ configmaps { edges { node { name ... on ConfigMap { pods(first: 10) { totalCount edges { node { name } } } } } } } secrets { edges { node { name ... on Secret { pods(first: 10) { totalCount edges { node { name } } } } } } } }`,
			want: `{"configmaps":{"edges":[{"node":{"name":"cm1","pods":{"totalCount":2,"edges":[{"node":{"name":"p1"}},{"node":{"name":"p2"}}]}}},{"node":{"name":"cm2","pods":{"totalCount":1,"edges":[{"node":{"name":"p1"}}]}}}]},` +
				`"secrets":{"edges":[{"node":{"name":"s1","pods":{"totalCount":2,"edges":[{"node":{"name":"p1"}},{"node":{"name":"p2"}}]}}},{"node":{"name":"s2","pods":{"totalCount":1,"edges":[{"node":{"name":"p1"}}]}}}]}}`},
		{name: "Ingress, HPA, EndpointSlice", query: `{ ingresses(first: 10) { edges { node { ... on Ingress { services(first: 10) { edges { node { name } } } } } } } horizontalpodautoscalers { edges { node { ... on HorizontalPodAutoscaler { target { name kind } } } } } endpointslices { edges { node { ... on EndpointSlice { service { name ... on Service { endpointSlices(first: 10) { edges { node { name } } } } } } } } } }`,
			want: `{"ingresses":{"edges":[{"node":{"services":{"edges":[{"node":{"name":"web"}}]}}}]},"horizontalpodautoscalers":{"edges":[{"node":{"target":{"name":"d","kind":"Deployment"}}}]},` +
				`"endpointslices":{"edges":[{"node":{"service":{"name":"web","endpointSlices":{"edges":[{"node":{"name":"web-x1"}}]}}}}]}}`},
		{name: "related", query: `{ resource(cluster: "c1", kind: "Pod", namespace: "a", name: "p1") { related(first: 20) { totalCount edges { node { kind name } } } pods: related(kinds: ["Service", "ReplicaSet.apps"], first: 2) { totalCount pageInfo { hasNextPage } edges { node { kind name } } } } }`,
			want: `{"resource":{"related":{"totalCount":10,"edges":[{"node":{"kind":"Node","name":"n1"}},{"node":{"kind":"PersistentVolumeClaim","name":"claim1"}},` +
				`{"node":{"kind":"ConfigMap","name":"cm1"}},{"node":{"kind":"ConfigMap","name":"cm2"}},{"node":{"kind":"Event","name":"e1"}},{"node":{"kind":"ReplicaSet","name":"rs"}},{"node":{"kind":"Secret","name":"s1"}},{"node":{"kind":"Secret","name":"s2"}},` +
				`{"node":{"kind":"Service","name":"web"}},{"node":{"kind":"Service","name":"web-fe"}}]},` +
				`"pods":{"totalCount":3,"pageInfo":{"hasNextPage":true},"edges":[{"node":{"kind":"ReplicaSet","name":"rs"}},{"node":{"kind":"Service","name":"web"}}]}}}`},
		{name: "hidden kinds", scopes: []string{"pods", "configmaps"},
			query: `{ pods(filter: {namespaces: ["a"]}, first: 1) { edges { node { ... on Pod { node { name } services { totalCount } secrets { totalCount } configMaps { totalCount } owner { name } events { totalCount } } } } } }`,
			want:  `{"pods":{"edges":[{"node":{"node":null,"services":{"totalCount":0},"secrets":{"totalCount":0},"configMaps":{"totalCount":2},"owner":null,"events":{"totalCount":0}}}]}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			scopes := tc.scopes
			if scopes == nil {
				scopes = all
			}
			u := &authn.User{Name: "alice", Extra: map[string][]string{"scopes": scopes}}
			res := f.s.Execute(authn.WithUser(t.Context(), u), Request{Query: tc.query})
			if len(res.Errors) > 0 {
				t.Fatalf("%s", mustJSON(t, res))
			}
			got, _ := json.Marshal(res.Data)
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// pageCursor returns the page cursor of an object of f.
func pageCursor(t testing.TB, f *relFixture, kind, namespace, name string) string {
	t.Helper()
	for _, o := range f.ix.Lookup("c1", namespace, name) {
		if o.Type.Kind == kind {
			return cursor.EncodePage(o.Position())
		}
	}
	t.Fatalf("no %s %s/%s", kind, namespace, name)
	return ""
}

// TestKindEvents checks a kind's subscription, podEvents: the changes of
// its objects only, each with the kind's type, and resuming from a
// resourceEvents cursor as resourceEvents does.
func TestKindEvents(t *testing.T) {
	f := newRelFixture(t)
	runServer(t, f.s)
	const query = `subscription($since: String) { podEvents(filter: {namespaces: ["a"]}, since: $since) {
	  type cursor resource { name spec services(first: 5) { edges { node { name } } } } } }`
	type event struct {
		PodEvents struct {
			Type, Cursor string
			Resource     struct {
				Name     string
				Spec     map[string]any
				Services struct {
					Edges []struct{ Node struct{ Name string } }
				}
			}
		}
	}
	u := &authn.User{Name: "alice", Extra: map[string][]string{"scopes": {"pods", "services", "configmaps"}}}
	ctx := authn.WithUser(t.Context(), u)
	nextEvent := func(sub *Subscription) event {
		t.Helper()
		nctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		res, err := sub.Next(nctx)
		if err != nil || len(res.Errors) > 0 {
			t.Fatalf("Next: %v %+v", err, res)
		}
		var e event
		decodeResult(t, res, query, &e)
		return e
	}
	sub, res := f.s.Subscribe(ctx, Request{Query: query})
	if sub == nil {
		t.Fatalf("%+v", res)
	}
	t.Cleanup(sub.Close)
	resources, res := f.s.Subscribe(ctx, Request{Query: `subscription { resourceEvents(filter: {namespaces: ["a"]}) { type cursor resource { name } } }`})
	if resources == nil {
		t.Fatalf("%+v", res)
	}
	t.Cleanup(resources.Close)
	cm := f.ix.Lookup("c1", "a", "cm1")[0]
	changed := *cm
	changed.ResourceVersion = "2"
	f.ix.Upsert(&changed) // not a Pod: podEvents leave it out
	p2 := f.ix.Lookup("c1", "a", "p2")[0]
	relabelled := *p2
	relabelled.ResourceVersion = "2"
	f.ix.Upsert(&relabelled)
	e := nextEvent(sub)
	if e.PodEvents.Type != "MODIFIED" || e.PodEvents.Resource.Name != "p2" || e.PodEvents.Resource.Spec["imagePullSecrets"] == nil {
		t.Errorf("first podEvents event %+v, want p2 MODIFIED with its spec", e)
	}
	// resourceEvents saw the ConfigMap first; its cursor resumes podEvents
	// after it, with p2.
	ctxN, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	first, err := resources.Next(ctxN)
	if err != nil {
		t.Fatal(err)
	}
	var r struct{ ResourceEvents struct{ Cursor string } }
	decodeResult(t, first, "", &r)
	resumed, res := f.s.Subscribe(ctx, Request{Query: query, Variables: map[string]any{"since": r.ResourceEvents.Cursor}})
	if resumed == nil {
		t.Fatalf("%+v", res)
	}
	t.Cleanup(resumed.Close)
	if e := nextEvent(resumed); e.PodEvents.Resource.Name != "p2" || e.PodEvents.Type != "MODIFIED" {
		t.Errorf("resumed podEvents %+v, want p2 MODIFIED", e)
	}
}
