package graphql

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/graphql-go/graphql/language/parser"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index"
)

// Types of the synthetic objects. There are two kinds named Event, in the
// core group and in events.k8s.io, to check that a bare kind is ambiguous.
var (
	podType    = &index.Type{Resource: "pods", GVR: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Kind: "Pod", Namespaced: true}
	cmType     = &index.Type{Resource: "configmaps", GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespaced: true}
	nsType     = &index.Type{Resource: "namespaces", GVR: schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, Kind: "Namespace"}
	deployType = &index.Type{Resource: "deployments.apps", GVR: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, Kind: "Deployment", Namespaced: true}
	rsType     = &index.Type{Resource: "replicasets.apps", GVR: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}, Kind: "ReplicaSet", Namespaced: true}
	eventType  = &index.Type{Resource: "events", GVR: schema.GroupVersionResource{Version: "v1", Resource: "events"}, Kind: "Event", Namespaced: true}
	event2Type = &index.Type{Resource: "events.events.k8s.io", GVR: schema.GroupVersionResource{Group: "events.k8s.io", Version: "v1", Resource: "events"}, Kind: "Event", Namespaced: true}
)

// created is the creationTimestamp of every synthetic object.
var created = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

// spec describes a synthetic object.
type spec struct {
	cluster     string
	typ         *index.Type
	namespace   string
	name        string
	labels      map[string]string
	annotations map[string]string
	owners      []*index.Object // owner references to these objects
	data        map[string]any  // the object's "data" field
}

// uidOf is the UID of a synthetic object: derived from its identity.
func uidOf(cluster string, t *index.Type, namespace, name string) string {
	return strings.Join([]string{"uid", cluster, t.Resource, namespace, name}, "-")
}

// newObject builds an object as the informers do: from its JSON form.
func newObject(t testing.TB, s spec) *index.Object {
	t.Helper()
	meta := map[string]any{
		"name":              s.name,
		"uid":               uidOf(s.cluster, s.typ, s.namespace, s.name),
		"resourceVersion":   "1",
		"creationTimestamp": created.Format(time.RFC3339),
	}
	if s.namespace != "" {
		meta["namespace"] = s.namespace
	}
	if s.labels != nil {
		m := map[string]any{}
		for k, v := range s.labels {
			m[k] = v
		}
		meta["labels"] = m
	}
	if s.annotations != nil {
		m := map[string]any{}
		for k, v := range s.annotations {
			m[k] = v
		}
		meta["annotations"] = m
	}
	var refs []any
	for _, o := range s.owners {
		refs = append(refs, map[string]any{
			"apiVersion": o.Type.APIVersion(), "kind": o.Type.Kind, "name": o.Name, "uid": string(o.UID), "controller": true,
		})
	}
	if refs != nil {
		meta["ownerReferences"] = refs
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": s.typ.APIVersion(),
		"kind":       s.typ.Kind,
		"metadata":   meta,
	}}
	if s.data != nil {
		u.Object["data"] = s.data
	}
	o, err := index.NewObject(s.cluster, s.typ, u)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// fixture is a small fleet: three clusters, c3 disconnected.
//
//	every cluster: namespaces web and data; ConfigMap web/settings (app=web,
//	  tier=fe), ConfigMap data/db-config (app=db, tier=be); Pods web/web-1
//	  and web/web-2 (app=web, tier=fe)
//	c1: Deployment web/web → ReplicaSet web/web-abc → Pods web/web-abc-1,
//	  web/web-abc-2 (app=web, tier=fe, pod-template-hash=abc); Pod
//	  web/web-canary (app=web, canary=true); an Event web/ev in the core
//	  group and in events.k8s.io
type fixture struct {
	ix      *index.Index
	tracker *health.Tracker
	byName  map[string]*index.Object // by "cluster/resource/namespace/name"
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	ix := index.New(index.Options{})
	f := &fixture{ix: ix, byName: map[string]*index.Object{}}
	add := func(s spec) *index.Object {
		o := newObject(t, s)
		ix.Upsert(o)
		f.byName[o.Key().String()] = o
		return o
	}
	for _, c := range []string{"c1", "c2", "c3"} {
		add(spec{cluster: c, typ: nsType, name: "web", labels: map[string]string{"team": "web"}})
		add(spec{cluster: c, typ: nsType, name: "data"})
		add(spec{cluster: c, typ: cmType, namespace: "web", name: "settings",
			labels: map[string]string{"app": "web", "tier": "fe"}, annotations: map[string]string{"owner": "team-web@example.com"},
			data: map[string]any{"cluster": c, "color": "blue"}})
		add(spec{cluster: c, typ: cmType, namespace: "data", name: "db-config", labels: map[string]string{"app": "db", "tier": "be"}})
		for _, n := range []string{"web-1", "web-2"} {
			add(spec{cluster: c, typ: podType, namespace: "web", name: n, labels: map[string]string{"app": "web", "tier": "fe"}})
		}
	}
	d := add(spec{cluster: "c1", typ: deployType, namespace: "web", name: "web", labels: map[string]string{"app": "web"}})
	rs := add(spec{cluster: "c1", typ: rsType, namespace: "web", name: "web-abc", labels: map[string]string{"app": "web", "pod-template-hash": "abc"},
		owners: []*index.Object{d}})
	for _, n := range []string{"web-abc-1", "web-abc-2"} {
		add(spec{cluster: "c1", typ: podType, namespace: "web", name: n, labels: map[string]string{"app": "web", "tier": "fe", "pod-template-hash": "abc"},
			owners: []*index.Object{rs}})
	}
	add(spec{cluster: "c1", typ: podType, namespace: "web", name: "web-canary", labels: map[string]string{"app": "web", "canary": "true"}})
	add(spec{cluster: "c1", typ: eventType, namespace: "web", name: "ev"})
	add(spec{cluster: "c1", typ: event2Type, namespace: "web", name: "ev"})

	f.tracker = health.NewTracker(ix, health.Options{Now: func() time.Time { return created.Add(time.Hour) }})
	for _, c := range []string{"c1", "c2", "c3"} {
		for _, t := range []*index.Type{nsType, cmType, podType, deployType, rsType} {
			f.tracker.ResourceStarting(c, t.Resource, t.Kind)
			f.tracker.ResourceSynced(c, t.Resource)
		}
	}
	f.tracker.Probe("c3", errors.New("dial tcp 127.0.0.1:1: connect: connection refused"))
	return f
}

// object returns the fixture's object with key "cluster/resource/namespace/name".
func (f *fixture) object(t testing.TB, key string) *index.Object {
	t.Helper()
	o := f.byName[key]
	if o == nil {
		t.Fatalf("no fixture object %s", key)
	}
	return o
}

func newServer(t testing.TB, ix Index, h Health, opts Options) *Server {
	t.Helper()
	s, err := New(ix, h, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// run executes a query and returns the result as a JSON response body.
func run(t testing.TB, s *Server, query string, vars map[string]any) *Result {
	t.Helper()
	return s.Execute(t.Context(), Request{Query: query, Variables: vars})
}

// data executes a query that must succeed and decodes its data into out.
func data(t testing.TB, s *Server, query string, vars map[string]any, out any) {
	t.Helper()
	res := run(t, s, query, vars)
	if len(res.Errors) > 0 {
		t.Fatalf("query failed: %v\nquery: %s", res.Errors, query)
	}
	b, err := json.Marshal(res.Data)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
}

// codes returns the extensions.code of each error.
func codes(res *Result) []string {
	var out []string
	for _, e := range res.Errors {
		out = append(out, code(e))
	}
	return out
}

var updateGolden = flag.Bool("update", os.Getenv("UPDATE_GOLDEN") != "", "rewrite golden files (or set UPDATE_GOLDEN=1)")

// golden compares got, indented, with testdata/<name>.json, or rewrites it
// with UPDATE_GOLDEN=1.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Indent(&buf, got, "", "  "); err != nil {
		t.Fatalf("indent %s: %v", got, err)
	}
	buf.WriteByte('\n')
	goldenFile(t, name+".json", buf.Bytes())
}

// goldenFile compares got with testdata/<name>, or rewrites it with
// UPDATE_GOLDEN=1.
func goldenFile(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *updateGolden {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with UPDATE_GOLDEN=1 to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got; UPDATE_GOLDEN=1 rewrites it):\n%s", path, diff)
	}
}

// countingIndex counts the calls of each method of an Index.
type countingIndex struct {
	Index
	calls map[string]int
}

func (c *countingIndex) ListUnion(fs []index.Filter, after *index.Position, limit int) index.Page {
	c.calls["List"]++
	return c.Index.ListUnion(fs, after, limit)
}

func (c *countingIndex) CountUnion(fs []index.Filter) int {
	c.calls["Count"]++
	return c.Index.CountUnion(fs)
}

// blockingIndex's List blocks until release is closed: a read that takes
// longer than any timeout.
type blockingIndex struct {
	Index
	entered chan struct{}
	release chan struct{}
}

func (b *blockingIndex) ListUnion(fs []index.Filter, after *index.Position, limit int) index.Page {
	close(b.entered)
	<-b.release
	return b.Index.ListUnion(fs, after, limit)
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// depthOfQuery parses a query and measures it with depthOf.
func depthOfQuery(t testing.TB, q string) (int, int) {
	t.Helper()
	doc, err := parser.Parse(parser.ParseParams{Source: q})
	if err != nil {
		t.Fatal(err)
	}
	return depthOf(doc)
}
