// Package indextest holds what the tests of the index packages (pkg/index
// and its planner, views and feed) share: the Types of synthetic objects,
// Obj and its options to build them, random fleets and filters, the
// brute-force Reference (and RefMatches, SortRef) to check the planner
// against, and helpers that page through a list or summarize events for
// diffs. It needs no API server.
package indextest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/compact"
	"github.com/fleetcache/fleetcache/pkg/index/feed"
	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
	"github.com/fleetcache/fleetcache/pkg/index/fieldselector"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
)

// Types used by the tests. fooPods is a second kind named Pod, in another
// group, to check that a bare kind matches in every group.
var (
	PodType        = &object.Type{Resource: "pods", GVR: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Kind: "Pod", Namespaced: true}
	ConfigMapType  = &object.Type{Resource: "configmaps", GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespaced: true}
	DeploymentType = &object.Type{Resource: "deployments.apps", GVR: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, Kind: "Deployment", Namespaced: true}
	ReplicaSetType = &object.Type{Resource: "replicasets.apps", GVR: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}, Kind: "ReplicaSet", Namespaced: true}
	NodeType       = &object.Type{Resource: "nodes", GVR: schema.GroupVersionResource{Version: "v1", Resource: "nodes"}, Kind: "Node"}
	FooPodsType    = &object.Type{Resource: "pods.foo.example.com", GVR: schema.GroupVersionResource{Group: "foo.example.com", Version: "v1", Resource: "pods"}, Kind: "Pod", Namespaced: true}
)

// Obj builds an object with a UID derived from its key and
// ResourceVersion "1", then applies the options.
func Obj(cluster string, t *object.Type, ns, name string, opts ...func(*object.Object)) *object.Object {
	o := &object.Object{Cluster: cluster, Type: t, Namespace: ns, Name: name, ResourceVersion: "1"}
	o.UID = types.UID("uid-" + strings.ReplaceAll(o.Key().String(), "/", "-"))
	for _, opt := range opts {
		opt(o)
	}
	return o
}

// WithLabels sets labels from key, value pairs.
func WithLabels(kv ...string) func(*object.Object) {
	return func(o *object.Object) {
		o.Labels = nil
		for i := 0; i < len(kv); i += 2 {
			o.Labels = append(o.Labels, object.Label{Key: kv[i], Value: kv[i+1]})
		}
		slices.SortFunc(o.Labels, func(a, b object.Label) int { return strings.Compare(a.Key, b.Key) })
	}
}

// WithPodStatus sets the object's stored JSON to a Pod's with this phase,
// node, restart count and container images.
func WithPodStatus(phase, node string, restarts int, images ...string) func(*object.Object) {
	return func(o *object.Object) {
		containers := make([]map[string]any, len(images))
		for i, im := range images {
			containers[i] = map[string]any{"name": fmt.Sprintf("c%d", i), "image": im}
		}
		raw, _ := json.Marshal(map[string]any{
			"metadata": map[string]any{"name": o.Name, "namespace": o.Namespace},
			"spec":     map[string]any{"nodeName": node, "containers": containers},
			"status":   map[string]any{"phase": phase, "restarts": restarts},
		})
		o.SetRaw(raw)
	}
}

// WithRaw sets the object's stored JSON.
func WithRaw(raw string) func(*object.Object) {
	return func(o *object.Object) { o.SetRaw([]byte(raw)) }
}

// MustFields parses a field selector, failing t if it does not parse.
func MustFields(t testing.TB, s string) fieldselector.Selector {
	t.Helper()
	sel, err := fieldselector.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

// WithRV sets the object's resourceVersion.
func WithRV(rv string) func(*object.Object) { return func(o *object.Object) { o.ResourceVersion = rv } }

// WithUID sets the object's UID.
func WithUID(uid string) func(*object.Object) {
	return func(o *object.Object) { o.UID = types.UID(uid) }
}

// WithOwner adds an owner reference with this UID.
func WithOwner(uid string) func(*object.Object) {
	return func(o *object.Object) { o.Owners = append(o.Owners, object.OwnerRef{UID: types.UID(uid)}) }
}

// Modified returns a copy of o with another ResourceVersion, then the options applied.
func Modified(o *object.Object, rv string, opts ...func(*object.Object)) *object.Object {
	c := *o
	c.ResourceVersion = rv
	for _, opt := range opts {
		opt(&c)
	}
	return &c
}

// Keys returns the objects' Keys as strings, for readable diffs.
func Keys(objs []*object.Object) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.Key().String())
	}
	return out
}

// EventSummary is an Event in a form that diffs well.
type EventSummary struct {
	Revision uint64
	Type     string
	Key      string
	RV       string
	OldRV    string
}

// Summarize returns the events as EventSummaries.
func Summarize(evs []feed.Event[*object.Object]) []EventSummary {
	out := make([]EventSummary, 0, len(evs))
	for _, e := range evs {
		s := EventSummary{Revision: e.Revision, Type: e.Type.String(), Key: e.Object.Key().String(), RV: e.Object.ResourceVersion}
		if e.Old != nil {
			s.OldRV = e.Old.ResourceVersion
		}
		out = append(out, s)
	}
	return out
}

// MustSelector parses a label selector, failing t if it does not parse.
func MustSelector(t testing.TB, s string) labels.Selector {
	t.Helper()
	sel, err := labels.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

// ListAll pages through the filter's objects with pages of limit, calling
// between(i) after page i if not nil, and checks each page's More.
func ListAll(t testing.TB, ix *index.Index, f planner.Filter, limit int, between func(int)) []*object.Object {
	t.Helper()
	var out []*object.Object
	var after *object.Position
	for i := 0; ; i++ {
		page := planner.List(ix, f, after, limit)
		out = append(out, page.Objects...)
		if !page.More {
			return out
		}
		if len(page.Objects) != limit {
			t.Fatalf("page %d has %d objects and More", i, len(page.Objects))
		}
		p := page.Objects[len(page.Objects)-1].Position()
		after = &p
		if between != nil {
			between(i)
		}
	}
}

// RandomFleet returns n objects with random placement, kinds, labels and
// owners drawn from small pools, so that filters both hit and miss.
func RandomFleet(r *rand.Rand, n int) []*object.Object {
	typesPool := []*object.Type{PodType, ConfigMapType, DeploymentType, ReplicaSetType, NodeType, FooPodsType}
	seen := map[object.Key]bool{}
	var out []*object.Object
	for len(out) < n {
		t := typesPool[r.IntN(len(typesPool))]
		ns := ""
		if t.Namespaced {
			ns = fmt.Sprintf("ns-%d", r.IntN(6))
		}
		o := Obj(fmt.Sprintf("c%d", r.IntN(4)), t, ns, fmt.Sprintf("o-%d", r.IntN(n)))
		if seen[o.Key()] {
			continue
		}
		seen[o.Key()] = true
		var kv []string
		if r.IntN(4) > 0 {
			kv = append(kv, "app", fmt.Sprintf("app-%d", r.IntN(8)))
		}
		if r.IntN(2) > 0 {
			kv = append(kv, "tier", []string{"fe", "be", "db"}[r.IntN(3)])
		}
		if r.IntN(5) == 0 {
			kv = append(kv, "hash", fmt.Sprintf("h%d", r.IntN(50)))
		}
		WithLabels(kv...)(o)
		if r.IntN(3) == 0 {
			WithOwner(fmt.Sprintf("owner-%d", r.IntN(20)))(o)
		}
		if r.IntN(4) > 0 {
			WithPodStatus([]string{"Running", "Pending", "Failed"}[r.IntN(3)], fmt.Sprintf("node-%d", r.IntN(5)), r.IntN(6),
				[]string{"nginx", "redis", "envoy"}[:1+r.IntN(3)]...)(o)
		}
		out = append(out, o)
	}
	return out
}

// RandomFilter draws a filter constraining a few random dimensions.
func RandomFilter(t testing.TB, r *rand.Rand) planner.Filter {
	var f planner.Filter
	pick := func(pool ...string) []string {
		var out []string
		for range 1 + r.IntN(2) {
			out = append(out, pool[r.IntN(len(pool))])
		}
		return out
	}
	for range 1 + r.IntN(3) {
		switch r.IntN(8) {
		case 0:
			f.Clusters = pick("c0", "c1", "c2", "c3", "c9")
		case 1:
			f.Kinds = pick("Pod", "ConfigMap", "Deployment.apps", "ReplicaSet", "Pod.foo.example.com", "Node", "Nope")
		case 2:
			f.Resources = pick("pods", "configmaps", "deployments.apps", "nodes", "nope")
		case 3:
			f.Namespaces = pick("", "ns-0", "ns-1", "ns-2", "ns-3", "ns-9")
		case 4:
			f.Selector = MustSelector(t, []string{
				"app=app-1", "app in (app-2,app-3)", "tier", "!tier", "tier notin (fe)", "app!=app-1",
				"app=app-1,tier in (fe,be)", "hash", "hash=h3", "app,tier=db", "tier=fe,hash notin (h1)",
			}[r.IntN(11)])
		case 5:
			f.NameContains = fmt.Sprintf("o-%d", r.IntN(20))
		case 6:
			f.OwnerUID = types.UID(fmt.Sprintf("owner-%d", r.IntN(22)))
		case 7:
			f.Fields = MustFields(t, []string{
				"status.phase=Running", "status.phase!=Running", "spec.nodeName in (node-1,node-2)", "!spec.nodeName",
				"spec.containers[].image=redis", "spec.containers[].image notin (redis,envoy)", "status.restarts>3",
				"cluster=c1", "cluster in (c2,c9),status.phase=Failed", "cluster notin (c1)", "cluster=c9", "status.restarts<1",
			}[r.IntN(12)])
		}
	}
	return f
}

// Unindexed is Options without any index on Paths.
func Unindexed() index.Options {
	off := map[string][]fieldpath.Path{}
	for r := range index.DefaultOptions().Indexes {
		off[r] = nil
	}
	return index.Options{Indexes: off}
}

// Paths parses the paths, which must be valid.
func Paths(texts ...string) []fieldpath.Path {
	out := make([]fieldpath.Path, len(texts))
	for i, t := range texts {
		out[i] = fieldpath.MustParse(t)
	}
	return out
}

// RandomFieldRaw returns the JSON of an object whose values at the tested
// Paths are drawn from small sets: strings, numbers written several ways,
// booleans, nulls, absent values, objects, and arrays with repeats.
func RandomFieldRaw(r *rand.Rand) string {
	pick := func(vs ...string) string { return vs[r.IntN(len(vs))] }
	var status, spec []string
	if v := pick(`"Running"`, `"Running"`, `"Failed"`, `"3"`, `3`, `true`, `null`, `{"a":1}`, ``); v != "" {
		status = append(status, `"phase":`+v)
	}
	if v := pick(`3`, `3.0`, `"3"`, `-0`, `0`, `1e21`, `true`, `"true"`, ``); v != "" {
		status = append(status, `"n":`+v)
	}
	if v := pick(`"n1"`, `"n2"`, ``); v != "" {
		spec = append(spec, `"nodeName":`+v)
	}
	if v := pick(`true`, `false`, `"true"`, ``); v != "" {
		spec = append(spec, `"unschedulable":`+v)
	}
	images := func() string {
		var cs []string
		for range r.IntN(4) {
			cs = append(cs, `{"image":`+pick(`"nginx"`, `"redis"`, `"envoy"`, `null`, `["nginx"]`)+`}`)
		}
		return `[` + strings.Join(cs, ",") + `]`
	}
	spec = append(spec, `"containers":`+images(), `"template":{"spec":{"containers":`+images()+`}}`)
	return `{"spec":{` + strings.Join(spec, ",") + `},"status":{` + strings.Join(status, ",") + `}}`
}

// FieldIndexOptions indexes the tested Paths of pods, one of the foo pods,
// none of the ConfigMaps; nodes and Deployments keep their defaults, of
// which spec.unschedulable and spec.template.spec.containers[].image are
// tested.
func FieldIndexOptions() index.Options {
	return index.Options{Indexes: map[string][]fieldpath.Path{
		"pods":                 Paths("status.phase", "status.n", "spec.nodeName", "spec.containers[].image", "spec.unschedulable"),
		"pods.foo.example.com": Paths("status.phase"),
		"configmaps":           {},
	}}
}

// SortFleet is RandomFleet with creation times, several objects per
// second so that ties are common.
func SortFleet(r *rand.Rand, n int) []*object.Object {
	fleet := RandomFleet(r, n)
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, o := range fleet {
		o.SetCreated(base.Add(time.Duration(r.IntN(n/4+1)) * time.Second))
	}
	return fleet
}

// SortKeys parses sort keys, "-" before a path for descending.
func SortKeys(t testing.TB, spec ...string) []planner.SortKey {
	t.Helper()
	var keys []planner.SortKey
	for _, s := range spec {
		k := planner.SortKey{}
		if s[0] == '-' {
			k.Desc, s = true, s[1:]
		}
		k.Path = fieldpath.MustParse(s)
		keys = append(keys, k)
	}
	return keys
}

// BruteSorted returns the objects List returns for f sorted by keys
// with SortRef.
func BruteSorted(ix *index.Index, f planner.Filter, keys []planner.SortKey) []*object.Object {
	objs := planner.List(ix, f, nil, 0).Objects
	SortRef(objs, keys)
	return objs
}

// ListSortedAll pages through a sorted list, calling between after each
// page.
func ListSortedAll(t testing.TB, ix *index.Index, f planner.Filter, keys []planner.SortKey, limit int, between func()) []*object.Object {
	t.Helper()
	var out []*object.Object
	var after *planner.SortedPosition
	for i := 0; ; i++ {
		page, err := planner.ListSorted(ix, []planner.Filter{f}, keys, after, limit)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page.Objects...)
		if !page.More {
			return out
		}
		if len(page.Objects) != limit {
			t.Fatalf("page %d has %d objects and More", i, len(page.Objects))
		}
		last := page.Objects[len(page.Objects)-1]
		after = &planner.SortedPosition{Values: planner.SortValues(keys, last), Position: last.Position()}
		if between != nil {
			between()
		}
	}
}

// CompressedTwin returns a copy of t whose objects' bodies a trained Codec
// compresses: training reads random bodies (RandomFieldRaw) until the
// dictionary is built.
func CompressedTwin(t *object.Type, r *rand.Rand) *object.Type {
	twin := *t
	twin.Codec = compact.NewCodec(t.Resource, 0)
	for !twin.Codec.Trained() {
		twin.Codec.Encode([]byte(RandomFieldRaw(r)))
	}
	return &twin
}

// CmpSorted compares string slices ignoring order, nil equal to empty.
var CmpSorted = cmp.Options{cmpopts.SortSlices(func(a, b string) bool { return a < b }), cmpopts.EquateEmpty()}

// Churn applies one random write to the index: a create, a delete or a
// modification of an object not in stable, or a modification (same UID) of
// a stable object. Stable objects exist throughout.
type Churn struct {
	// R draws the writes.
	R *rand.Rand
	// Stable are the objects not to delete or recreate.
	Stable map[object.Key]bool
	seq    int
}

// Step applies one random write to ix, whose objects were live (some
// of them since deleted).
func (c *Churn) Step(ix *index.Index, live []*object.Object) {
	c.seq++
	switch c.R.IntN(4) {
	case 0, 1: // create
		o := RandomFleet(c.R, 1)[0]
		o.Name = fmt.Sprintf("new-%d", c.seq)
		ix.Upsert(o)
	case 2: // delete a non-stable object
		if o := live[c.R.IntN(len(live))]; !c.Stable[o.Key()] {
			ix.Delete(o.Key())
		}
	case 3: // modify, changing labels; stable objects keep their UID
		o := live[c.R.IntN(len(live))]
		cur := ix.Get(o.Key())
		if cur == nil {
			return
		}
		n := Modified(cur, fmt.Sprint(c.seq), WithLabels("app", fmt.Sprintf("app-%d", c.R.IntN(8)), "tier", "fe"))
		if !c.Stable[o.Key()] && c.R.IntN(2) == 0 {
			n.UID = "recreated"
		}
		ix.Upsert(n)
	}
}

// Scale returns full, or short when the tests run with -short: long
// property tests run fewer seeds, rounds or steps in the fast unit layer
// (make test-unit) and at full strength otherwise.
func Scale(full, short int) int {
	if testing.Short() {
		return short
	}
	return full
}
