package index

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fleetcache/fleetcache/pkg/index/fieldselector"
)

// Types used by the tests. fooPods is a second kind named Pod, in another
// group, to check that a bare kind matches in every group.
var (
	podType     = &Type{Resource: "pods", GVR: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Kind: "Pod", Namespaced: true}
	cmType      = &Type{Resource: "configmaps", GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespaced: true}
	deployType  = &Type{Resource: "deployments.apps", GVR: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, Kind: "Deployment", Namespaced: true}
	rsType      = &Type{Resource: "replicasets.apps", GVR: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}, Kind: "ReplicaSet", Namespaced: true}
	nodeType    = &Type{Resource: "nodes", GVR: schema.GroupVersionResource{Version: "v1", Resource: "nodes"}, Kind: "Node"}
	fooPodsType = &Type{Resource: "pods.foo.example.com", GVR: schema.GroupVersionResource{Group: "foo.example.com", Version: "v1", Resource: "pods"}, Kind: "Pod", Namespaced: true}
)

// obj builds an object with a UID derived from its key and
// ResourceVersion "1", then applies the options.
func obj(cluster string, t *Type, ns, name string, opts ...func(*Object)) *Object {
	o := &Object{Cluster: cluster, Type: t, Namespace: ns, Name: name, ResourceVersion: "1"}
	o.UID = types.UID("uid-" + strings.ReplaceAll(o.Key().String(), "/", "-"))
	for _, opt := range opts {
		opt(o)
	}
	return o
}

// withLabels sets labels from key, value pairs.
func withLabels(kv ...string) func(*Object) {
	return func(o *Object) {
		o.Labels = nil
		for i := 0; i < len(kv); i += 2 {
			o.Labels = append(o.Labels, Label{Key: kv[i], Value: kv[i+1]})
		}
		slices.SortFunc(o.Labels, func(a, b Label) int { return strings.Compare(a.Key, b.Key) })
	}
}

// withPodStatus sets the object's stored JSON to a Pod's with this phase,
// node, restart count and container images.
func withPodStatus(phase, node string, restarts int, images ...string) func(*Object) {
	return func(o *Object) {
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

// withRaw sets the object's stored JSON.
func withRaw(raw string) func(*Object) {
	return func(o *Object) { o.SetRaw([]byte(raw)) }
}

func mustFields(t testing.TB, s string) fieldselector.Selector {
	t.Helper()
	sel, err := fieldselector.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

func withRV(rv string) func(*Object)   { return func(o *Object) { o.ResourceVersion = rv } }
func withUID(uid string) func(*Object) { return func(o *Object) { o.UID = types.UID(uid) } }
func withOwner(uid string) func(*Object) {
	return func(o *Object) { o.Owners = append(o.Owners, OwnerRef{UID: types.UID(uid)}) }
}

// modified returns a copy of o with another ResourceVersion, then the options applied.
func modified(o *Object, rv string, opts ...func(*Object)) *Object {
	c := *o
	c.ResourceVersion = rv
	for _, opt := range opts {
		opt(&c)
	}
	return &c
}

// keys returns the objects' keys as strings, for readable diffs.
func keys(objs []*Object) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.Key().String())
	}
	return out
}

// eventSummary is an Event in a form that diffs well.
type eventSummary struct {
	Revision uint64
	Type     string
	Key      string
	RV       string
	OldRV    string
}

func summarize(evs []Event) []eventSummary {
	out := make([]eventSummary, 0, len(evs))
	for _, e := range evs {
		s := eventSummary{Revision: e.Revision, Type: e.Type.String(), Key: e.Object.Key().String(), RV: e.Object.ResourceVersion}
		if e.Old != nil {
			s.OldRV = e.Old.ResourceVersion
		}
		out = append(out, s)
	}
	return out
}

// checkInvariants verifies that every posting and count agrees with the
// primary set; it returns a description of the first disagreement.
func (ix *Index) checkInvariants() string {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	var all []*Object
	ix.all.Ascend(nil, func(o *Object) bool { all = append(all, o); return true })
	if !slices.IsSortedFunc(all, compareObjects) {
		return "primary set out of order"
	}
	want := struct {
		kinds, resources, labelKeys, tokens map[string][]*Object
		labels                              map[Label][]*Object
		owners                              map[types.UID][]*Object
	}{map[string][]*Object{}, map[string][]*Object{}, map[string][]*Object{}, map[string][]*Object{}, map[Label][]*Object{}, map[types.UID][]*Object{}}
	clusters := map[string]int{}
	for _, o := range all {
		want.kinds[o.Type.KindName()] = append(want.kinds[o.Type.KindName()], o)
		want.resources[o.Type.Resource] = append(want.resources[o.Type.Resource], o)
		for _, l := range o.Labels {
			want.labels[l] = append(want.labels[l], o)
			want.labelKeys[l.Key] = append(want.labelKeys[l.Key], o)
		}
		for _, r := range o.Owners {
			want.owners[r.UID] = append(want.owners[r.UID], o)
		}
		for _, tok := range searchTokens(o, nil) {
			want.tokens[tok] = append(want.tokens[tok], o)
		}
		clusters[o.Cluster]++
	}
	tokens := map[string]*posting{}
	ix.tokens.Prefix("", func(tok string, p *posting) bool { tokens[tok] = p; return true })
	if d := samePostings(tokens, want.tokens); d != "" {
		return "tokens: " + d
	}
	if d := samePostings(ix.kinds, want.kinds); d != "" {
		return "kinds: " + d
	}
	if d := samePostings(ix.resources, want.resources); d != "" {
		return "resources: " + d
	}
	if d := samePostings(ix.labels, want.labels); d != "" {
		return "labels: " + d
	}
	if d := samePostings(ix.labelKeys, want.labelKeys); d != "" {
		return "label keys: " + d
	}
	if d := samePostings(ix.owners, want.owners); d != "" {
		return "owners: " + d
	}
	if d := ix.created.check(all); d != "" {
		return "creation times: " + d
	}
	for r, fis := range ix.fields.byResource {
		var objs []*Object
		for _, o := range all {
			if o.Type.Resource == r {
				objs = append(objs, o)
			}
		}
		for _, fi := range fis {
			if fi.ordered == nil {
				continue
			}
			if d := fi.ordered.check(objs); d != "" {
				return "ordered index of " + r + " " + fi.path.String() + ": " + d
			}
		}
	}
	if len(ix.clusters) != len(clusters) || len(ix.clusterNames) != len(clusters) {
		return "cluster count"
	}
	for c, n := range clusters {
		if st := ix.clusters[c]; st == nil || st.objects != n {
			return "cluster " + c + " count"
		}
	}
	return ""
}

func samePostings[K comparable](got map[K]*posting, want map[K][]*Object) string {
	if len(got) != len(want) {
		return "number of postings differs"
	}
	for k, objs := range want {
		p := got[k]
		if p == nil {
			return "missing posting"
		}
		var have []*Object
		p.Ascend(nil, func(o *Object) bool { have = append(have, o); return true })
		if !slices.Equal(have, objs) {
			return "posting content differs"
		}
	}
	return ""
}

// check reports how the ordered index differs from what it should hold
// for the objects all.
func (oi *orderedIndex) check(all []*Object) string {
	// all is in Position order, which a stable sort keeps among equal
	// values, as the tree does.
	var present, absent []*Object
	for _, o := range all {
		if sortValueOf(oi.path, o, nil).Kind == Absent {
			absent = append(absent, o)
		} else {
			present = append(present, o)
		}
	}
	slices.SortStableFunc(present, func(a, b *Object) int {
		return compareNatural(sortValueOf(oi.path, a, nil), sortValueOf(oi.path, b, nil))
	})
	want, got := keys(present), []string{}
	oi.tree.Ascend(func(e orderedEntry) bool {
		if e.v != sortValueOf(oi.path, e.o, nil) {
			got = append(got, "stale value of "+e.o.Key().String())
		}
		got = append(got, e.o.Key().String())
		return true
	})
	if d := cmp.Diff(want, got); d != "" {
		return d
	}
	var gotAbsent []*Object
	oi.absent.Ascend(nil, func(o *Object) bool { gotAbsent = append(gotAbsent, o); return true })
	return cmp.Diff(keys(absent), keys(gotAbsent))
}
