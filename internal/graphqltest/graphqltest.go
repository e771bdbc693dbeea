// Package graphqltest holds the fixtures that the tests of the GraphQL
// engine and of its transports share: synthetic objects built as the
// informers build them, and a small fleet in an index and a health tracker.
// It needs no API server.
package graphqltest

import (
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetcache/fleetcache/internal/indextest"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/object"
)

// Types of the synthetic objects: the index tests' (package indextest),
// and two kinds named Event, in the core group and in events.k8s.io, to
// check that a bare kind is ambiguous.
var (
	PodType        = indextest.PodType
	ConfigMapType  = indextest.ConfigMapType
	NamespaceType  = &object.Type{Resource: "namespaces", GVR: schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, Kind: "Namespace"}
	DeploymentType = indextest.DeploymentType
	ReplicaSetType = indextest.ReplicaSetType
	EventType      = &object.Type{Resource: "events", GVR: schema.GroupVersionResource{Version: "v1", Resource: "events"}, Kind: "Event", Namespaced: true}
	Event2Type     = &object.Type{Resource: "events.events.k8s.io", GVR: schema.GroupVersionResource{Group: "events.k8s.io", Version: "v1", Resource: "events"}, Kind: "Event", Namespaced: true}
)

// Created is the creationTimestamp of every synthetic object.
var Created = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

// Spec describes a synthetic object.
type Spec struct {
	Cluster     string
	Type        *object.Type
	Namespace   string
	Name        string
	Labels      map[string]string
	Annotations map[string]string
	Owners      []*object.Object // owner references to these objects
	Data        map[string]any   // the object's "data" field
}

// UIDOf is the UID of a synthetic object: derived from its identity.
func UIDOf(cluster string, t *object.Type, namespace, name string) string {
	return strings.Join([]string{"uid", cluster, t.Resource, namespace, name}, "-")
}

// NewObject builds an object as the informers do: from its JSON form.
func NewObject(t testing.TB, s Spec) *object.Object {
	t.Helper()
	meta := map[string]any{
		"name":              s.Name,
		"uid":               UIDOf(s.Cluster, s.Type, s.Namespace, s.Name),
		"resourceVersion":   "1",
		"creationTimestamp": Created.Format(time.RFC3339),
	}
	if s.Namespace != "" {
		meta["namespace"] = s.Namespace
	}
	if s.Labels != nil {
		m := map[string]any{}
		for k, v := range s.Labels {
			m[k] = v
		}
		meta["labels"] = m
	}
	if s.Annotations != nil {
		m := map[string]any{}
		for k, v := range s.Annotations {
			m[k] = v
		}
		meta["annotations"] = m
	}
	var refs []any
	for _, o := range s.Owners {
		refs = append(refs, map[string]any{
			"apiVersion": o.Type.APIVersion(), "kind": o.Type.Kind, "name": o.Name, "uid": string(o.UID), "controller": true,
		})
	}
	if refs != nil {
		meta["ownerReferences"] = refs
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": s.Type.APIVersion(),
		"kind":       s.Type.Kind,
		"metadata":   meta,
	}}
	if s.Data != nil {
		u.Object["data"] = s.Data
	}
	o, err := object.NewObject(s.Cluster, s.Type, u)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// FromJSON returns the object of type t in cluster whose JSON is raw, as
// an informer makes it, failing t if raw is not an object of its kind.
func FromJSON(tb testing.TB, cluster string, t *object.Type, raw string) *object.Object {
	tb.Helper()
	var u unstructured.Unstructured
	if err := u.UnmarshalJSON([]byte(raw)); err != nil {
		tb.Fatal(err)
	}
	o, err := object.NewObject(cluster, t, &u)
	if err != nil {
		tb.Fatal(err)
	}
	return o
}

// Fixture is a small fleet: three clusters, c3 disconnected.
//
//	every cluster: namespaces web and data; ConfigMap web/settings (app=web,
//	  tier=fe), ConfigMap data/db-config (app=db, tier=be); Pods web/web-1
//	  and web/web-2 (app=web, tier=fe)
//	c1: Deployment web/web → ReplicaSet web/web-abc → Pods web/web-abc-1,
//	  web/web-abc-2 (app=web, tier=fe, pod-template-hash=abc); Pod
//	  web/web-canary (app=web, canary=true); an Event web/ev in the core
//	  group and in events.k8s.io
type Fixture struct {
	Index   *index.Index
	Tracker *health.Tracker
	ByName  map[string]*object.Object // by "cluster/resource/namespace/name"
}

func NewFixture(t testing.TB) *Fixture {
	t.Helper()
	ix := index.New(index.Options{})
	f := &Fixture{Index: ix, ByName: map[string]*object.Object{}}
	add := func(s Spec) *object.Object {
		o := NewObject(t, s)
		ix.Upsert(o)
		f.ByName[o.Key().String()] = o
		return o
	}
	for _, c := range []string{"c1", "c2", "c3"} {
		add(Spec{Cluster: c, Type: NamespaceType, Name: "web", Labels: map[string]string{"team": "web"}})
		add(Spec{Cluster: c, Type: NamespaceType, Name: "data"})
		add(Spec{Cluster: c, Type: ConfigMapType, Namespace: "web", Name: "settings",
			Labels: map[string]string{"app": "web", "tier": "fe"}, Annotations: map[string]string{"owner": "team-web@example.com"},
			Data: map[string]any{"cluster": c, "color": "blue"}})
		add(Spec{Cluster: c, Type: ConfigMapType, Namespace: "data", Name: "db-config", Labels: map[string]string{"app": "db", "tier": "be"}})
		for _, n := range []string{"web-1", "web-2"} {
			add(Spec{Cluster: c, Type: PodType, Namespace: "web", Name: n, Labels: map[string]string{"app": "web", "tier": "fe"}})
		}
	}
	d := add(Spec{Cluster: "c1", Type: DeploymentType, Namespace: "web", Name: "web", Labels: map[string]string{"app": "web"}})
	rs := add(Spec{Cluster: "c1", Type: ReplicaSetType, Namespace: "web", Name: "web-abc", Labels: map[string]string{"app": "web", "pod-template-hash": "abc"},
		Owners: []*object.Object{d}})
	for _, n := range []string{"web-abc-1", "web-abc-2"} {
		add(Spec{Cluster: "c1", Type: PodType, Namespace: "web", Name: n, Labels: map[string]string{"app": "web", "tier": "fe", "pod-template-hash": "abc"},
			Owners: []*object.Object{rs}})
	}
	add(Spec{Cluster: "c1", Type: PodType, Namespace: "web", Name: "web-canary", Labels: map[string]string{"app": "web", "canary": "true"}})
	add(Spec{Cluster: "c1", Type: EventType, Namespace: "web", Name: "ev"})
	add(Spec{Cluster: "c1", Type: Event2Type, Namespace: "web", Name: "ev"})

	f.Tracker = health.NewTracker(ix, health.Options{Now: func() time.Time { return Created.Add(time.Hour) }})
	for _, c := range []string{"c1", "c2", "c3"} {
		for _, t := range []*object.Type{NamespaceType, ConfigMapType, PodType, DeploymentType, ReplicaSetType} {
			f.Tracker.ResourceStarting(c, t.Resource, t.Kind)
			f.Tracker.ResourceSynced(c, t.Resource)
		}
	}
	f.Tracker.Probe("c3", errors.New("dial tcp 127.0.0.1:1: connect: connection refused"))
	return f
}

// Object returns the Fixture's object with key "cluster/resource/namespace/name".
func (f *Fixture) Object(t testing.TB, key string) *object.Object {
	t.Helper()
	o := f.ByName[key]
	if o == nil {
		t.Fatalf("no Fixture object %s", key)
	}
	return o
}

// Version is a ConfigMap of ns/name at resourceVersion rv, with labels.
func Version(t testing.TB, cluster, ns, name, rv string, labels map[string]string) *object.Object {
	t.Helper()
	meta := map[string]any{"namespace": ns, "name": name, "uid": UIDOf(cluster, ConfigMapType, ns, name), "resourceVersion": rv}
	if labels != nil {
		m := map[string]any{}
		for k, v := range labels {
			m[k] = v
		}
		meta["labels"] = m
	}
	o, err := object.NewObject(cluster, ConfigMapType, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta,
	}})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// WaitFor polls cond until it holds, for up to 10 seconds.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// LongestEdges returns the length of the longest "edges" list in v.
func LongestEdges(v any) int {
	n := 0
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if list, ok := e.([]any); ok && k == "edges" {
				n = max(n, len(list))
			}
			n = max(n, LongestEdges(e))
		}
	case []any:
		for _, e := range v {
			n = max(n, LongestEdges(e))
		}
	}
	return n
}
