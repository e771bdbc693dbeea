package planner_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fleetcache/fleetcache/internal/indextest"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
	"github.com/fleetcache/fleetcache/pkg/index/fieldselector"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
	"github.com/fleetcache/fleetcache/pkg/index/search"
	"github.com/fleetcache/fleetcache/pkg/index/views"
)

// The differential tests hold random objects in an index and, beside it,
// in a map of their own (what they upserted and deleted), and compare
// every read of the planner and of views with a brute-force evaluation of
// the map by indextest.Reference, which shares no code with the planner:
// lists, counts, unions, facets, Matchers, pages from any cursor, sorted
// pages, and paging while objects change between pages and during them.
// TestPlannerAgainstBruteForce draws the objects, filters and changes from
// seeded generators, FuzzPlannerAgainstBruteForce from the fuzzer's bytes.

// TestPlannerAgainstBruteForce checks the planner's answers against the
// brute-force reference over random objects, filters and churn: changes
// between the checks, and between the pages of lists and sorted lists.
func TestPlannerAgainstBruteForce(t *testing.T) {
	var stats diffStats
	for seed := range uint64(indextest.Scale(10, 4)) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 0xd1ff))
			d := newDifferential(t, diffOptions[seed%uint64(len(diffOptions))], indextest.Scale(250, 150))
			d.populate(r)
			for range indextest.Scale(8, 2) {
				for range r.IntN(80) {
					d.step(r)
				}
				for i := range 12 {
					f := d.filter(r)
					if i%2 == 1 {
						f = loosen(r, f)
					}
					d.check(r, f)
				}
				d.pageUnderChurn(r, d.filter(r), nil)
				d.pageUnderChurn(r, d.filter(r), d.sortKeys(r))
				d.verify()
			}
			// Nothing is left once every cluster goes: Verify finds no
			// posting without objects.
			for _, cluster := range diffClusters {
				d.removeCluster(cluster)
			}
			d.verify()
			d.check(r, planner.Filter{})
			stats.add(d.stats)
		})
	}
	stats.check(t)
}

// TestPlannerPagingDuringChurn pages through lists and sorted lists while
// a goroutine changes the index: every object that exists and matches
// throughout (with unchanged sort values) comes exactly once, in order,
// and every object returned is a version that existed meanwhile and
// matches.
func TestPlannerPagingDuringChurn(t *testing.T) {
	for seed := range uint64(indextest.Scale(4, 1)) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 0xc0c0))
			d := newDifferential(t, diffOptions[seed%uint64(len(diffOptions))], 400)
			d.populate(r)
			for i := range 4 {
				var keys []planner.SortKey
				if i%2 == 1 {
					keys = d.sortKeys(r)
				}
				d.pageConcurrently(r, d.filter(r), keys, rand.New(rand.NewPCG(seed, uint64(i))))
			}
			d.verify()
		})
	}
}

// FuzzPlannerAgainstBruteForce is TestPlannerAgainstBruteForce driven by
// the fuzzer: seed picks the indexes and draws up to 31 first objects, and
// ops, read as a stream of choices, every change, filter, check and page
// size after them, up to 32 operations.
func FuzzPlannerAgainstBruteForce(f *testing.F) {
	for i := range uint64(8) {
		// Each set of indexes, with 20 to 27 objects.
		r := rand.New(rand.NewPCG(i, 1))
		ops := make([]byte, 32+r.IntN(128))
		for j := range ops {
			ops[j] = byte(r.IntN(256))
		}
		f.Add((20+i)<<2|i%4, ops)
	}
	f.Add(uint64(0), []byte{})
	f.Add(uint64(40), []byte{fuzzCheck, 0, 0, 0, 0, 0, 0, 0, 0, fuzzPage, 1, 1, 1, 1, 1, 1, 1, 1, fuzzSorted})
	f.Add(uint64(41), []byte{fuzzStep, 18, fuzzStep, 19, fuzzCheck, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3})
	f.Fuzz(func(t *testing.T, seed uint64, ops []byte) {
		// Few objects, few operations: the fuzzer minimizes every input
		// that finds new code, running the target again and again.
		r := rand.New(rand.NewPCG(seed, 2))
		d := newDifferential(t, diffOptions[seed%uint64(len(diffOptions))], int(seed>>2)%32)
		d.populate(r)
		c := &byteChooser{b: ops}
		for n := 0; len(c.b) > 0 && n < 32; n++ {
			switch c.IntN(fuzzOps) {
			case fuzzStep:
				d.step(c)
			case fuzzCheck:
				f := d.filter(c)
				if c.IntN(2) == 0 {
					f = loosen(c, f)
				}
				d.check(c, f)
			case fuzzPage:
				d.pageUnderChurn(c, d.filter(c), nil)
			case fuzzSorted:
				d.pageUnderChurn(c, d.filter(c), d.sortKeys(c))
			}
		}
		d.verify()
	})
}

// What the fuzz target reads from a byte (modulo fuzzOps): a change, a
// check of a filter, or paging with changes between pages.
const (
	fuzzStep = iota
	fuzzCheck
	fuzzPage
	fuzzSorted
	fuzzOps
)

// chooser draws the tests' choices: a *rand.Rand, or a byteChooser.
type chooser interface {
	// IntN returns a choice in [0, n).
	IntN(n int) int
}

// byteChooser reads choices from bytes, one per choice (two above 256
// options), and 0 once they run out.
type byteChooser struct{ b []byte }

func (c *byteChooser) IntN(n int) int {
	v := 0
	for range 1 + min(1, n>>8) {
		if len(c.b) > 0 {
			v = v<<8 | int(c.b[0])
			c.b = c.b[1:]
		}
	}
	return v % n
}

func pick[T any](c chooser, vs ...T) T { return vs[c.IntN(len(vs))] }

// some returns 1 to n values of pool, repeats possible.
func some(c chooser, n int, pool ...string) []string {
	out := make([]string, 1+c.IntN(n))
	for i := range out {
		out[i] = pick(c, pool...)
	}
	return out
}

// What the objects are made of: few values of each, so that filters and
// their conjunctions hit. FooPodsType is a second kind named Pod.
var (
	// fooPodsV2 is FooPodsType in another version: the same kind name and
	// resource. widgets and gadgets are two kinds of one cluster-scoped
	// resource. An object that changes type between them changes kind,
	// and with it its Position.
	fooPodsV2 = &object.Type{Resource: "pods.foo.example.com", GVR: schema.GroupVersionResource{Group: "foo.example.com", Version: "v2", Resource: "pods"}, Kind: "Pod", Namespaced: true}
	widgets   = &object.Type{Resource: "widgets.example.com", GVR: schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}, Kind: "Widget"}
	gadgets   = &object.Type{Resource: "widgets.example.com", GVR: schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}, Kind: "Gadget"}

	diffTypes = []*object.Type{indextest.PodType, indextest.PodType, indextest.ConfigMapType, indextest.DeploymentType, indextest.ReplicaSetType,
		indextest.NodeType, indextest.FooPodsType, fooPodsV2, widgets, gadgets}
	diffClusters   = []string{"c0", "c1", "c2", "c3"}
	diffNamespaces = []string{"ns-0", "ns-1", "ns-2", "ns-3"}
	diffResources  = []string{"pods", "configmaps", "deployments.apps", "replicasets.apps", "nodes", "pods.foo.example.com", "widgets.example.com"}
	diffLabels     = []struct {
		key    string
		values []string
	}{
		{"app", []string{"app-0", "app-1", "app-2", "app-3"}},
		{"tier", []string{"fe", "be", "db"}},
		{"env", []string{"prod", "dev", ""}},
		{"n", []string{"1", "2", "10"}},
		{"app.kubernetes.io/name", []string{"Web", "redis"}},
		// Many values: a facet of a small set by this key reads the
		// ids' label sets rather than intersecting every value.
		{"hash", []string{"h0", "h1", "h2", "h3", "h4", "h5", "h6", "h7", "h8", "h9", "h10", "h11"}},
	}
	// diffFields are the paths the filters, facets and sorts use, with
	// values to compare them with: indexed by default (pods' status.phase,
	// spec.nodeName, spec.containers[].image, deployments' and replica
	// sets' spec.template.spec.containers[].image, nodes'
	// spec.unschedulable and status.nodeInfo.kubeletVersion), by some
	// diffOptions, or never.
	diffFields = []struct {
		path   string
		values []string
	}{
		{"cluster", []string{"c0", "c1", "c2", "c9"}},
		{"status.phase", []string{"Running", "Pending", "Failed", "3", "3.0", "true", ""}},
		{"spec.nodeName", []string{"node-0", "node-1", "node-9"}},
		{"spec.containers[].image", []string{"nginx:1.25", "redis", "envoyproxy/envoy:v1.30", "nginx"}},
		{"spec.template.spec.containers[].image", []string{"nginx:1.25", "redis"}},
		{"spec.unschedulable", []string{"true", "false"}},
		{"status.nodeInfo.kubeletVersion", []string{"v1.30.1", "v1.31.0"}},
		{"status.restarts", []string{"0", "1", "2", "2.0", "5"}},
		{"spec.replicas", []string{"3", "3.0", "0", "-0", "1e21", "1000000000000000000000", "true", "2.5"}},
		{"status.conditions[].type", []string{"Ready", "Available"}},
		{`metadata.annotations["example.com/team"]`, []string{"Payments Team", "storage-1", "3"}},
		{"metadata.name", []string{"web-1", "db-0"}},
		{"status.startTime", []string{"2026-01-02T03:04:05Z", "soon"}},
	}
	// diffSortPaths are the paths sort keys draw from: none crosses an
	// array.
	diffSortPaths = []string{"metadata.creationTimestamp", "status.phase", "spec.nodeName", "status.restarts", "spec.replicas",
		"cluster", "metadata.name", "status.startTime", "spec.unschedulable", "status.nodeInfo.kubeletVersion",
		`metadata.annotations["example.com/team"]`}
	diffWords = []string{"n", "e", "r", "s", "p", "1", "web", "we", "db", "api", "cache", "ns", "app", "nginx", "NGIN", "redis", "envoy", "envoyproxy", "v1",
		"payments", "pay", "équipe", "DONNÉES", "team", "storage", "prod", "fe", "zzz", "kubernetes"}
)

// diffOptions are the indexes the tests run with, one per seed: the
// defaults; every path of diffFields on every resource, so that field
// selectors and facets read postings without a type filter; some paths on
// some resources, so that a field selector is narrowed by the indexes of
// several resources, or not at all (and the path cluster, which is never
// indexed); and none.
var diffOptions = []index.Options{
	{Retention: 100},
	func() index.Options {
		all := map[string][]fieldpath.Path{}
		for _, r := range diffResources {
			for _, f := range diffFields {
				all[r] = append(all[r], fieldpath.MustParse(f.path))
			}
		}
		return index.Options{Retention: 100, Indexes: all}
	}(),
	{Retention: 100, Indexes: map[string][]fieldpath.Path{
		"pods":                 indextest.Paths("status.phase", "spec.nodeName", "spec.containers[].image", "status.restarts", "spec.replicas", "cluster"),
		"pods.foo.example.com": indextest.Paths("status.phase", "spec.replicas"),
		"configmaps":           indextest.Paths("status.phase", "metadata.name", `metadata.annotations["example.com/team"]`),
		"deployments.apps":     indextest.Paths("spec.template.spec.containers[].image", "status.phase", "status.conditions[].type"),
	}},
	func() index.Options { o := indextest.Unindexed(); o.Retention = 100; return o }(),
}

// differential is an index and what it should hold: the live objects by
// key, in keys in an order that depends on the changes only (so that
// choices among them are deterministic).
type differential struct {
	t      testing.TB
	ix     *index.Index
	ref    indextest.Reference
	live   map[object.Key]*object.Object
	keys   []object.Key
	at     map[object.Key]int // index in keys
	dead   []*object.Object   // recently replaced or deleted versions, for cursors and stale deletes
	target int                // the number of live objects changes keep near
	seq    int
	// watchers follow the changes during paging.
	watchers []*watcher
	stats    diffStats
}

func newDifferential(t testing.TB, opts index.Options, target int) *differential {
	return &differential{t: t, ix: index.New(opts), live: map[object.Key]*object.Object{}, at: map[object.Key]int{}, target: target}
}

// populate creates target objects (fewer where keys repeat).
func (d *differential) populate(c chooser) {
	for range d.target {
		d.put(d.newObject(c))
	}
}

// put upserts o, which must change the index, into both.
func (d *differential) put(o *object.Object) {
	d.t.Helper()
	if !d.ix.Upsert(o) {
		d.t.Fatalf("Upsert(%s) changed nothing", version(o))
	}
	k := o.Key()
	if old := d.live[k]; old != nil {
		d.bury(old)
	} else {
		d.at[k] = len(d.keys)
		d.keys = append(d.keys, k)
	}
	d.live[k] = o
	for _, w := range d.watchers {
		w.put(d, k, o)
	}
}

// forget removes k from the map of live objects.
func (d *differential) forget(k object.Key) {
	old := d.live[k]
	d.bury(old)
	delete(d.live, k)
	i := d.at[k]
	last := d.keys[len(d.keys)-1]
	d.keys[i], d.at[last] = last, i
	d.keys = d.keys[:len(d.keys)-1]
	delete(d.at, k)
	for _, w := range d.watchers {
		delete(w.throughout, k)
	}
}

func (d *differential) bury(o *object.Object) {
	if len(d.dead) == 64 {
		d.dead = slices.Delete(d.dead, 0, 1)
	}
	d.dead = append(d.dead, o)
}

// any returns a random live object, nil if there is none.
func (d *differential) any(c chooser) *object.Object {
	if len(d.keys) == 0 {
		return nil
	}
	return d.live[d.keys[c.IntN(len(d.keys))]]
}

// step applies one random change to the index and to the map: a create
// (of a new key, or with a new UID on a key in use: a delete and a
// recreate), a modification of labels, body, type or owners, a delete (by
// key, by object, or by a stale object, which deletes nothing), a
// re-delivery of an unchanged object, or the removal of a resource of a
// cluster or of a cluster.
func (d *differential) step(c chooser) {
	d.t.Helper()
	d.seq++
	o := d.any(c)
	op := c.IntN(100)
	switch {
	case o == nil || op < 20 || (op < 35 && len(d.live) < d.target):
		d.put(d.newObject(c))
	case op < 35: // delete
		if !d.ix.Delete(o.Key()) {
			d.t.Fatalf("Delete(%s) found nothing", o.Key())
		}
		d.forget(o.Key())
	case op < 42: // delete this version
		if !d.ix.DeleteObject(o) {
			d.t.Fatalf("DeleteObject(%s) found nothing", version(o))
		}
		d.forget(o.Key())
	case op < 45: // delete a stale version: nothing
		if len(d.dead) > 0 {
			if stale := pick(c, d.dead...); d.live[stale.Key()] != stale && d.ix.DeleteObject(stale) {
				d.t.Fatalf("DeleteObject(%s) of a stale version deleted", version(stale))
			}
		}
	case op < 55: // recreate: same key, new UID, new everything
		n := d.newObject(c)
		n.Cluster, n.Type, n.Namespace, n.Name = o.Cluster, o.Type, o.Namespace, o.Name
		d.fill(c, n)
		d.put(n)
	case op < 70: // modify labels
		n := d.modified(o)
		indextest.WithLabels(d.labels(c)...)(n)
		d.put(n)
	case op < 85: // modify the body
		n := d.modified(o)
		n.SetRaw(d.body(c, n))
		d.put(n)
	case op < 88: // modify the type: the version, or the kind
		n := d.modified(o)
		switch o.Type {
		case indextest.FooPodsType:
			n.Type = fooPodsV2
		case fooPodsV2:
			n.Type = indextest.FooPodsType
		case widgets:
			n.Type = gadgets
		case gadgets:
			n.Type = widgets
		}
		d.put(n)
	case op < 92: // modify owners
		n := d.modified(o)
		n.Owners = d.owners(c)
		d.put(n)
	case op < 96: // re-delivered unchanged
		if d.ix.Upsert(o) {
			d.t.Fatalf("Upsert of the unchanged %s changed the index", version(o))
		}
	case op < 99: // a resource of a cluster goes
		cluster, resource := o.Cluster, o.Type.Resource
		if c.IntN(2) == 0 {
			cluster, resource = pick(c, diffClusters...), pick(c, diffResources...)
		}
		var gone []object.Key
		for _, k := range d.keys {
			if k.Cluster == cluster && k.Resource == resource {
				gone = append(gone, k)
			}
		}
		if n := d.ix.RemoveResource(cluster, resource); n != len(gone) {
			d.t.Fatalf("RemoveResource(%s, %s) removed %d objects, want %d", cluster, resource, n, len(gone))
		}
		for _, k := range gone {
			d.forget(k)
		}
	default: // a cluster goes
		d.removeCluster(o.Cluster)
	}
}

// removeCluster removes a cluster's objects.
func (d *differential) removeCluster(cluster string) {
	d.t.Helper()
	var gone []object.Key
	for _, k := range d.keys {
		if k.Cluster == cluster {
			gone = append(gone, k)
		}
	}
	if n := d.ix.RemoveCluster(cluster); n != len(gone) {
		d.t.Fatalf("RemoveCluster(%s) removed %d objects, want %d", cluster, n, len(gone))
	}
	for _, k := range gone {
		d.forget(k)
	}
}

// modified returns a copy of o with a new resourceVersion.
func (d *differential) modified(o *object.Object) *object.Object {
	return indextest.Modified(o, strconv.Itoa(d.seq))
}

// newObject returns an object of a random type, cluster, namespace and
// name (which may be in use), with random contents.
func (d *differential) newObject(c chooser) *object.Object {
	o := &object.Object{Cluster: pick(c, diffClusters...), Type: pick(c, diffTypes...)}
	if o.Type.Namespaced {
		o.Namespace = pick(c, diffNamespaces...)
	}
	o.Name = pick(c, "web", "db", "api", "cache") + "-" + strconv.Itoa(c.IntN(6))
	d.fill(c, o)
	return o
}

// fill gives o a new UID and resourceVersion, random labels, owners,
// creation time and body.
func (d *differential) fill(c chooser, o *object.Object) {
	d.seq++
	o.UID, o.ResourceVersion = types.UID(fmt.Sprintf("uid-%d", d.seq)), strconv.Itoa(d.seq)
	indextest.WithLabels(d.labels(c)...)(o)
	o.Owners = d.owners(c)
	o.SetCreated(time.Time{})
	if c.IntN(12) > 0 {
		o.SetCreated(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).Add(time.Duration(c.IntN(40)) * time.Second))
	}
	o.SetRaw(d.body(c, o))
}

// labels returns random labels as key, value pairs.
func (d *differential) labels(c chooser) []string {
	var kv []string
	for i, l := range diffLabels {
		if c.IntN(6) < []int{5, 3, 2, 2, 1, 3}[i] {
			kv = append(kv, l.key, pick(c, l.values...))
		}
	}
	return kv
}

// owners returns up to two random owner references, sometimes of the
// same UID: Kubernetes refuses only two controller references.
func (d *differential) owners(c chooser) []object.OwnerRef {
	var out []object.OwnerRef
	for range c.IntN(3) {
		out = append(out, object.OwnerRef{UID: types.UID(fmt.Sprintf("owner-%d", c.IntN(6)))})
	}
	return out
}

// body returns random JSON for o, or none: metadata with annotations,
// a spec and a status with values of several JSON types at the paths of
// diffFields, numbers written several ways, nulls and absent values.
func (d *differential) body(c chooser, o *object.Object) []byte {
	if c.IntN(10) == 0 {
		return nil
	}
	member := func(members *[]string, key, value string) {
		if value != "" {
			*members = append(*members, strconv.Quote(key)+":"+value)
		}
	}
	obj := func(members []string) string { return "{" + strings.Join(members, ",") + "}" }
	var meta, ann, spec, status []string
	member(&meta, "name", strconv.Quote(o.Name))
	if o.Namespace != "" {
		member(&meta, "namespace", strconv.Quote(o.Namespace))
	}
	member(&ann, "example.com/team", pick(c, `"Payments Team"`, `"storage-1"`, `"Équipe Données"`, `3`, ``))
	member(&ann, "note", pick(c, `"runs redis-cache for payments"`, `"nginx front"`, `""`, ``, ``))
	if len(ann) > 0 {
		member(&meta, "annotations", obj(ann))
	}
	containers := func() string {
		var cs []string
		for i := range c.IntN(4) {
			cs = append(cs, fmt.Sprintf(`{"name":"c%d","image":%s}`, i, pick(c, `"nginx:1.25"`, `"redis"`, `"envoyproxy/envoy:v1.30"`, `null`, `["nginx"]`)))
		}
		return "[" + strings.Join(cs, ",") + "]"
	}
	member(&spec, "nodeName", pick(c, `"node-0"`, `"node-1"`, `"node-2"`, ``))
	member(&spec, "containers", pick(c, containers(), ``))
	if c.IntN(2) == 0 {
		member(&spec, "template", `{"spec":{"containers":`+containers()+`}}`)
	}
	member(&spec, "replicas", pick(c, `3`, `3.0`, `"3"`, `-0`, `0`, `1e21`, `true`, `2.5`, ``))
	member(&spec, "unschedulable", pick(c, `true`, `false`, `"true"`, ``))
	member(&status, "phase", pick(c, `"Running"`, `"Running"`, `"Pending"`, `"Failed"`, `"3"`, `3`, `true`, `null`, `{"a":1}`, ``))
	member(&status, "restarts", pick(c, `0`, `1`, `2`, `5`, `"2"`, `null`, ``))
	member(&status, "startTime", pick(c, `"2026-01-02T03:04:05Z"`, `"2026-01-02T03:04:06.5Z"`, `"2025-12-31T23:00:00+01:00"`, `"soon"`, ``))
	var conds []string
	for range c.IntN(3) {
		conds = append(conds, `{"type":"`+pick(c, "Ready", "Available", "Progressing")+`"}`)
	}
	member(&status, "conditions", "["+strings.Join(conds, ",")+"]")
	if c.IntN(3) == 0 {
		member(&status, "nodeInfo", `{"kubeletVersion":"`+pick(c, "v1.30.1", "v1.31.0")+`"}`)
	}
	top := []string{`"metadata":` + obj(meta)}
	parts := []string{`"spec":` + obj(spec), `"status":` + obj(status)}
	if c.IntN(4) == 0 {
		parts[0], parts[1] = parts[1], parts[0] // status before spec
	}
	for _, p := range parts {
		if c.IntN(8) > 0 {
			top = append(top, p)
		}
	}
	return []byte(obj(top))
}

// filter returns a random filter constraining random fields, each drawn
// from small pools (with values no object has, and repeats). Half the
// filters are drawn around a live object, the pivot: most of their
// constraints hold for it, so that many conjunctions select something.
func (d *differential) filter(c chooser) planner.Filter {
	d.t.Helper()
	var f planner.Filter
	p := d.any(c)
	if p != nil && c.IntN(2) == 0 {
		p = nil
	}
	// near reports whether a constraint is to hold for the pivot.
	near := func() bool { return p != nil && c.IntN(4) > 0 }
	// An eighth of the filters have one requirement, which the plan may
	// answer exactly from postings.
	if c.IntN(6) == 0 {
		switch c.IntN(3) {
		case 0:
			req := d.labelRequirement(c)
			if near() {
				req = d.labelRequirementOf(c, p)
			}
			f.Selector = indextest.MustSelector(d.t, req)
		default:
			req := d.fieldRequirement(c)
			if near() {
				req = d.fieldRequirementOf(c, p)
			}
			f.Fields = indextest.MustFields(d.t, req)
		}
		return f
	}
	// A quarter of the others constrain the scope and types only, which
	// counts and facets may answer from counters and postings alone.
	scopeOnly := c.IntN(4) == 0
	odds := 4
	if scopeOnly {
		odds = 2
	}
	if c.IntN(odds) == 0 {
		f.Clusters = some(c, 2, append(diffClusters, "c9")...)
		if near() {
			f.Clusters = append(f.Clusters, p.Cluster)
		}
	}
	if c.IntN(odds) == 0 {
		f.Kinds = some(c, 2, "Pod", "ConfigMap", "Deployment", "Deployment.apps", "ReplicaSet.apps", "Pod.foo.example.com", "Node", "Nope",
			"Deployment.extensions", "Widget", "Gadget.example.com")
		if near() {
			f.Kinds = append(f.Kinds, pick(c, p.Type.Kind, p.Type.KindName()))
		}
	}
	if c.IntN(odds+1) == 0 {
		f.Resources = some(c, 2, append(diffResources, "nope")...)
		if near() {
			f.Resources = append(f.Resources, p.Type.Resource)
		}
	}
	if c.IntN(odds) == 0 {
		f.Namespaces = some(c, 2, append(diffNamespaces, "", "ns-9")...)
		if near() {
			f.Namespaces = append(f.Namespaces, p.Namespace)
		}
	}
	if scopeOnly {
		return f
	}
	switch c.IntN(20) {
	case 0:
		f.Selector = labels.Everything()
	case 1:
		f.Selector = labels.Nothing()
	case 2, 3, 4, 5, 6, 7, 8, 9, 10:
		var reqs []string
		for range 1 + c.IntN(3) {
			if near() {
				reqs = append(reqs, d.labelRequirementOf(c, p))
			} else {
				reqs = append(reqs, d.labelRequirement(c))
			}
		}
		f.Selector = indextest.MustSelector(d.t, strings.Join(reqs, ","))
	}
	if c.IntN(6) == 0 {
		f.NameContains = pick(c, "web", "-1", "db-2", "eb", "zz", "i-")
		if near() {
			i := c.IntN(len(p.Name))
			f.NameContains = p.Name[i : i+1+c.IntN(len(p.Name)-i)]
		}
	}
	if c.IntN(6) == 0 {
		f.OwnerUID = types.UID(fmt.Sprintf("owner-%d", c.IntN(7)))
		if near() && len(p.Owners) > 0 {
			f.OwnerUID = pick(c, p.Owners...).UID
		}
	}
	if c.IntN(8) == 0 {
		for range 1 + c.IntN(3) {
			f.OwnerUIDs = append(f.OwnerUIDs, types.UID(fmt.Sprintf("owner-%d", c.IntN(7))))
		}
		if near() && len(p.Owners) > 0 {
			f.OwnerUIDs = append(f.OwnerUIDs, pick(c, p.Owners...).UID)
		}
	}
	if c.IntN(2) == 0 {
		var reqs []string
		for range 1 + c.IntN(3) {
			if near() {
				reqs = append(reqs, d.fieldRequirementOf(c, p))
			} else {
				reqs = append(reqs, d.fieldRequirement(c))
			}
		}
		f.Fields = indextest.MustFields(d.t, strings.Join(reqs, ","))
	}
	if c.IntN(5) == 0 {
		words := some(c, 2, diffWords...)
		if near() {
			words = append(words[:0], p.Name[:1+c.IntN(len(p.Name))])
		}
		q, err := search.Parse(strings.Join(words, " "))
		if err != nil {
			d.t.Fatal(err)
		}
		f.Search = q
	}
	return f
}

// labelRequirementOf returns a random label selector requirement that
// the labels of o meet.
func (d *differential) labelRequirementOf(c chooser, o *object.Object) string {
	if len(o.Labels) == 0 || c.IntN(5) == 0 {
		key := pick(c, diffLabels...).key
		if _, ok := o.Labels.Lookup(key); ok {
			return key + " notin (other)"
		}
		return pick(c, "!"+key, key+" notin (other)", key+"!=other")
	}
	l := pick(c, o.Labels...)
	switch c.IntN(5) {
	case 0:
		return l.Key + "=" + l.Value
	case 1:
		return l.Key + " in (" + l.Value + ",other)"
	case 2:
		return l.Key
	case 3:
		return l.Key + "!=other"
	}
	return l.Key + " notin (other)"
}

// fieldRequirementOf returns a random field selector requirement that o
// meets.
func (d *differential) fieldRequirementOf(c chooser, o *object.Object) string {
	p := pick(c, diffFields...)
	var vs []string
	for _, v := range d.ref.Values(fieldpath.MustParse(p.path), o) {
		if s, ok := indextest.RefIndexedValue(v); ok && !strings.ContainsAny(s, `,()\=`) && strings.TrimSpace(s) == s && s != "" {
			vs = append(vs, s)
		}
	}
	if len(vs) == 0 {
		return "!" + p.path
	}
	v := pick(c, vs...)
	if n, err := strconv.ParseFloat(v, 64); err == nil && c.IntN(2) == 0 {
		// The same number written otherwise: equal to it, not to the string.
		v = pick(c, strconv.FormatFloat(n, 'e', -1, 64), strconv.FormatFloat(n, 'f', 1, 64), "+"+v)
	}
	switch c.IntN(4) {
	case 0:
		return p.path + "=" + v
	case 1:
		return p.path + " in (" + v + "," + pick(c, p.values...) + ")"
	case 2:
		return p.path
	}
	return p.path + "!=other"
}

// loosen drops constraints of f, to select more objects.
func loosen(c chooser, f planner.Filter) planner.Filter {
	keep := c.IntN(1 << 10)
	kept := func() bool {
		k := keep&1 != 0
		keep >>= 1
		return k
	}
	if !kept() {
		f.Clusters = nil
	}
	if !kept() {
		f.Kinds = nil
	}
	if !kept() {
		f.Resources = nil
	}
	if !kept() {
		f.Namespaces = nil
	}
	if !kept() {
		f.Selector = nil
	}
	if !kept() {
		f.NameContains = ""
	}
	if !kept() {
		f.OwnerUID = ""
	}
	if !kept() {
		f.OwnerUIDs = nil
	}
	if !kept() {
		f.Fields = fieldselector.Selector{}
	}
	if !kept() {
		f.Search = search.Query{}
	}
	return f
}

// labelRequirement returns a random label selector requirement, with
// every operator.
func (d *differential) labelRequirement(c chooser) string {
	l := pick(c, diffLabels...)
	if c.IntN(10) == 0 {
		l.key = "missing"
	}
	vs := append(slices.Clone(l.values), "other")
	switch c.IntN(9) {
	case 0:
		return l.key + "=" + pick(c, vs...)
	case 1:
		return l.key + "==" + pick(c, vs...)
	case 2:
		return l.key + "!=" + pick(c, vs...)
	case 3:
		return l.key + " in (" + strings.Join(some(c, 3, vs...), ",") + ")"
	case 4:
		return l.key + " notin (" + strings.Join(some(c, 2, vs...), ",") + ")"
	case 5:
		return l.key
	case 6:
		return "!" + l.key
	case 7:
		return "n>" + pick(c, "0", "1", "5")
	}
	return "n<" + pick(c, "2", "10", "11")
}

// fieldRequirement returns a random field selector requirement, with
// every operator.
func (d *differential) fieldRequirement(c chooser) string {
	if c.IntN(4) == 0 {
		// Numbers not in their shortest form, which the indexes key
		// objects by, and strings that hold numbers: an index narrows
		// these, but its postings hold objects that do not match.
		return pick(c, "spec.replicas=3.0", "spec.replicas in (+3,0)", "spec.replicas=1000000000000000000000", "spec.replicas=-0",
			"status.phase=3.0", "status.phase in (3e0,Running)", "status.restarts=2.0", "status.restarts!=2.0", "spec.unschedulable=true")
	}
	p := pick(c, diffFields...)
	switch c.IntN(9) {
	case 0:
		return p.path + "=" + pick(c, p.values...)
	case 1:
		return p.path + "==" + pick(c, p.values...)
	case 2:
		return p.path + "!=" + pick(c, p.values...)
	case 3:
		return p.path + " in (" + strings.Join(some(c, 3, p.values...), ",") + ")"
	case 4:
		return p.path + " notin (" + strings.Join(some(c, 2, p.values...), ",") + ")"
	case 5:
		return p.path
	case 6:
		return "!" + p.path
	case 7:
		return p.path + ">" + pick(c, "0", "1", "2.5", "3", "-1", "1e21")
	}
	return p.path + "<" + pick(c, "0", "1", "2.5", "3", "-1", "1e21")
}

// sortKeys returns one to three random sort keys.
func (d *differential) sortKeys(c chooser) []planner.SortKey {
	keys := make([]planner.SortKey, 1+c.IntN(3))
	for i := range keys {
		keys[i] = planner.SortKey{Path: fieldpath.MustParse(pick(c, diffSortPaths...)), Desc: c.IntN(2) == 0}
	}
	return keys
}

// facetBy returns a random facet key.
func (d *differential) facetBy(c chooser) views.FacetBy {
	switch c.IntN(6) {
	case 0:
		return views.FacetBy{Key: views.FacetCluster}
	case 1:
		return views.FacetBy{Key: views.FacetNamespace}
	case 2:
		return views.FacetBy{Key: views.FacetKind}
	case 3:
		return views.FacetBy{Key: views.FacetLabel, Label: pick(c, diffLabels...).key}
	}
	return views.FacetBy{Key: views.FacetField, Field: fieldpath.MustParse(pick(c, diffFields...).path)}
}

// split returns filters that select, together, what f selects, and are
// disjoint: one per cluster, namespace or resource.
func split(c chooser, f planner.Filter) []planner.Filter {
	var out []planner.Filter
	dim, pool := c.IntN(3), []string(nil)
	switch dim {
	case 0:
		pool = setOr(f.Clusters, append(diffClusters, "c9"))
	case 1:
		pool = setOr(f.Namespaces, append(diffNamespaces, "", "ns-9"))
	default:
		pool = setOr(f.Resources, append(diffResources, "nope"))
	}
	for _, v := range pool {
		g := f
		switch dim {
		case 0:
			g.Clusters = []string{v}
		case 1:
			g.Namespaces = []string{v}
		default:
			g.Resources = []string{v}
		}
		out = append(out, g)
	}
	return out
}

// setOr returns vs sorted without repeats, or otherwise if vs is empty.
func setOr(vs, otherwise []string) []string {
	if len(vs) == 0 {
		vs = otherwise
	}
	vs = slices.Clone(vs)
	slices.Sort(vs)
	return slices.Compact(vs)
}

// matching returns the live objects that match any of fs by the
// reference, in Position order.
func (d *differential) matching(fs ...planner.Filter) []*object.Object {
	var out []*object.Object
	for _, k := range d.keys {
		o := d.live[k]
		if slices.ContainsFunc(fs, func(f planner.Filter) bool { return d.ref.Matches(f, o) }) {
			out = append(out, o)
		}
	}
	slices.SortFunc(out, object.CompareObjects)
	return out
}

// check compares every read of f, and of a union of disjoint filters
// that selects the same, with the reference.
func (d *differential) check(c chooser, f planner.Filter) {
	d.t.Helper()
	want := d.matching(f)
	d.stats.count(len(want))
	name := describe(f)
	d.checkList(c, name, []planner.Filter{f}, want)
	d.checkSorted(c, name, []planner.Filter{f}, want)
	// A Matcher matches what List lists, and deleted objects as well.
	m := planner.NewMatcher(f)
	for _, o := range d.dead {
		if got, wantMatch := m.Matches(o), d.ref.Matches(f, o); got != wantMatch {
			d.t.Fatalf("%s: Matcher.Matches(%s) = %v, want %v", name, version(o), got, wantMatch)
		}
	}
	for _, k := range d.keys {
		o := d.live[k]
		if got, wantMatch := m.Matches(o), slices.Contains(want, o); got != wantMatch {
			d.t.Fatalf("%s: Matcher.Matches(%s) = %v, want %v", name, version(o), got, wantMatch)
		}
	}
	fs := split(c, f)
	union := fmt.Sprintf("union of %d filters %s", len(fs), describeAll(fs))
	d.checkList(c, union, fs, want)
	if c.IntN(2) == 0 {
		d.checkSorted(c, union, fs, want)
	}
}

// checkList compares the lists, counts and facets of fs, disjoint
// filters that select want, with the reference: whole, in pages of a
// random size, and a page from a random cursor.
func (d *differential) checkList(c chooser, name string, fs []planner.Filter, want []*object.Object) {
	d.t.Helper()
	page := d.list(fs, nil, 0)
	if diff := diffObjects(want, page.Objects); diff != "" {
		d.t.Fatalf("%s: List (-want +got):\n%s", name, diff)
	}
	if page.More || page.Revision != d.ix.Revision() {
		d.t.Fatalf("%s: List More = %v, Revision = %d, want false, %d", name, page.More, page.Revision, d.ix.Revision())
	}
	count := planner.CountUnion(d.ix, fs)
	if len(fs) == 1 {
		count = planner.Count(d.ix, fs[0])
	}
	if count != len(want) {
		d.t.Fatalf("%s: Count = %d, want %d", name, count, len(want))
	}
	// A page with its count, read together: as List and Count read them.
	first := c.IntN(8)
	counted, count := planner.ListCountUnion(d.ix, fs, nil, first)
	if count != len(want) {
		d.t.Fatalf("%s: ListCountUnion's count = %d, want %d", name, count, len(want))
	}
	if diff := cmp.Diff(d.list(fs, nil, first), counted, cmp.Comparer(func(a, b *object.Object) bool { return a == b })); diff != "" {
		d.t.Fatalf("%s: ListCountUnion's page of %d (-List +ListCountUnion):\n%s", name, first, diff)
	}
	by := d.facetBy(c)
	facets := views.FacetsUnion(d.ix, fs, by)
	if len(fs) == 1 {
		facets = views.Facets(d.ix, fs[0], by)
	}
	if diff := cmp.Diff(d.facets(want, by), facets, cmpopts.EquateEmpty()); diff != "" {
		d.t.Fatalf("%s: facets by %s (-want +got):\n%s", name, describeFacet(by), diff)
	}

	limit := 1 + c.IntN(12)
	var got []*object.Object
	var after *object.Position
	for {
		page := d.list(fs, after, limit)
		got = append(got, page.Objects...)
		if !page.More {
			break
		}
		if len(page.Objects) != limit || len(got) > len(want) {
			d.t.Fatalf("%s: a page of %d objects of at most %d, %d in all, says there are more", name, len(page.Objects), limit, len(got))
		}
		p := page.Objects[len(page.Objects)-1].Position()
		after = &p
	}
	if diff := diffObjects(want, got); diff != "" {
		d.t.Fatalf("%s: pages of %d (-want +got):\n%s", name, limit, diff)
	}

	from := d.cursor(c, want)
	limit = c.IntN(6)
	rest := slices.DeleteFunc(slices.Clone(want), func(o *object.Object) bool { return o.Position().Compare(from) <= 0 })
	more := limit > 0 && len(rest) > limit
	if more {
		rest = rest[:limit]
	}
	page = d.list(fs, &from, limit)
	if diff := diffObjects(rest, page.Objects); diff != "" || page.More != more {
		d.t.Fatalf("%s: page of %d after %+v, More = %v, want %v (-want +got):\n%s", name, limit, from, page.More, more, diff)
	}
}

// cursor returns a random Position: of a live object, matching or not, of
// a deleted one, or between objects.
func (d *differential) cursor(c chooser, want []*object.Object) object.Position {
	switch c.IntN(4) {
	case 0:
		if len(want) > 0 {
			return pick(c, want...).Position()
		}
	case 1:
		if o := d.any(c); o != nil {
			return o.Position()
		}
	case 2:
		if len(d.dead) > 0 {
			return pick(c, d.dead...).Position()
		}
	}
	return object.Position{
		Cluster:   pick(c, "", "c", "c1", "c2", "c1x", "d"),
		Namespace: pick(c, "", "ns-1", "ns-1x", "ns-3", "z"),
		Name:      pick(c, "", "db-1", "web-1", "web-1x", "z"),
		Kind:      pick(c, "", "ConfigMap", "Pod", "Pod.foo.example.com", "Z"),
		Resource:  pick(c, "", "pods", "pods.foo.example.com", "z"),
	}
}

// facets counts the objects by the reference's reading of by.
func (d *differential) facets(objs []*object.Object, by views.FacetBy) []views.Facet {
	counts := map[string]int{}
	for _, o := range objs {
		switch by.Key {
		case views.FacetCluster:
			counts[o.Cluster]++
		case views.FacetNamespace:
			counts[o.Namespace]++
		case views.FacetKind:
			counts[o.Type.KindName()]++
		case views.FacetLabel:
			if v, ok := o.Labels.Lookup(by.Label); ok {
				counts[v]++
			}
		case views.FacetField:
			var seen []string
			for _, v := range d.ref.Values(by.Field, o) {
				if s, ok := indextest.RefIndexedValue(v); ok && !slices.Contains(seen, s) {
					seen = append(seen, s)
					counts[s]++
				}
			}
		}
	}
	var out []views.Facet
	for v, n := range counts {
		out = append(out, views.Facet{Value: v, Count: n})
	}
	slices.SortFunc(out, func(a, b views.Facet) int {
		if a.Count != b.Count {
			return b.Count - a.Count
		}
		return strings.Compare(a.Value, b.Value)
	})
	return out
}

// checkSorted compares sorted lists of fs, disjoint filters that select
// want, by random keys with the reference: whole, in pages, and a page
// from a random cursor.
func (d *differential) checkSorted(c chooser, name string, fs []planner.Filter, want []*object.Object) {
	d.t.Helper()
	if c.IntN(8) == 0 {
		keys := []planner.SortKey{{Path: fieldpath.MustParse(pick(c, "spec.containers[].image", "status.conditions[].type"))}}
		if _, err := planner.ListSorted(d.ix, fs, keys, nil, 0); !errors.Is(err, planner.ErrSortPath) || !errors.Is(planner.CheckSort(keys), planner.ErrSortPath) {
			d.t.Fatalf("%s: a sort by %s: got %v, want planner.ErrSortPath", name, keys[0].Path, err)
		}
	}
	keys := d.sortKeys(c)
	name = fmt.Sprintf("%s sorted by %s", name, describeKeys(keys))
	sorted := slices.Clone(want)
	indextest.SortRef(sorted, keys)
	page, err := planner.ListSorted(d.ix, fs, keys, nil, 0)
	if err != nil {
		d.t.Fatal(err)
	}
	if diff := diffObjects(sorted, page.Objects); diff != "" || page.More {
		d.t.Fatalf("%s: ListSorted, More = %v (-want +got):\n%s", name, page.More, diff)
	}

	limit := 3 + c.IntN(30)
	var got []*object.Object
	var after *planner.SortedPosition
	for {
		page, err := planner.ListSorted(d.ix, fs, keys, after, limit)
		if err != nil {
			d.t.Fatal(err)
		}
		got = append(got, page.Objects...)
		if !page.More {
			break
		}
		if len(page.Objects) != limit || len(got) > len(want) {
			d.t.Fatalf("%s: a page of %d objects of at most %d, %d in all, says there are more", name, len(page.Objects), limit, len(got))
		}
		last := page.Objects[len(page.Objects)-1]
		after = &planner.SortedPosition{Values: planner.SortValues(keys, last), Position: last.Position()}
	}
	if diff := diffObjects(sorted, got); diff != "" {
		d.t.Fatalf("%s: pages of %d (-want +got):\n%s", name, limit, diff)
	}

	// A cursor of any values and Position: those of an object, matching
	// or not, or of two.
	var from planner.SortedPosition
	if o := d.any(c); o != nil && (len(want) == 0 || c.IntN(3) == 0) {
		from = planner.SortedPosition{Values: planner.SortValues(keys, o), Position: o.Position()}
	} else if len(want) > 0 {
		from = planner.SortedPosition{Values: planner.SortValues(keys, pick(c, want...)), Position: pick(c, want...).Position()}
	} else {
		from = planner.SortedPosition{Values: make([]object.SortValue, len(keys)), Position: d.cursor(c, nil)}
	}
	limit = c.IntN(6)
	pivot := from.Position.Placeholder()
	rest := slices.DeleteFunc(slices.Clone(sorted), func(o *object.Object) bool {
		return indextest.CompareRef(keys, indextest.RefSortValues(keys, o), o, from.Values, pivot) <= 0
	})
	more := limit > 0 && len(rest) > limit
	if more {
		rest = rest[:limit]
	}
	page, err = planner.ListSorted(d.ix, fs, keys, &from, limit)
	if err != nil {
		d.t.Fatal(err)
	}
	if diff := diffObjects(rest, page.Objects); diff != "" || page.More != more {
		d.t.Fatalf("%s: page of %d after %+v, More = %v, want %v (-want +got):\n%s", name, limit, from, page.More, more, diff)
	}
}

// watcher follows the changes made while a filter is paged through: the
// keys that matched when paging began and have matched since, with the
// same sort values; the keys whose sort values changed; and every version
// live meanwhile.
type watcher struct {
	f          planner.Filter
	keys       []planner.SortKey
	throughout map[object.Key]bool
	// last holds the sort values of the last version of each key (and
	// its kind, which is part of its Position), moved the keys whose sort
	// values or kind changed.
	last     map[object.Key][]object.SortValue
	moved    map[object.Key]bool
	versions map[*object.Object]bool
}

// watch starts following the changes for a paging of f sorted by keys
// (nil: in Position order).
func (d *differential) watch(f planner.Filter, keys []planner.SortKey) *watcher {
	w := &watcher{f: f, keys: keys, throughout: map[object.Key]bool{}, last: map[object.Key][]object.SortValue{},
		moved: map[object.Key]bool{}, versions: map[*object.Object]bool{}}
	for _, k := range d.keys {
		o := d.live[k]
		w.versions[o] = true
		w.last[k] = sortedBy(keys, o)
		if d.ref.Matches(f, o) {
			w.throughout[k] = true
		}
	}
	d.watchers = append(d.watchers, w)
	return w
}

func (d *differential) unwatch(w *watcher) {
	d.watchers = slices.DeleteFunc(d.watchers, func(x *watcher) bool { return x == w })
}

// put records o, the new version of k.
func (w *watcher) put(d *differential, k object.Key, o *object.Object) {
	w.versions[o] = true
	vals := sortedBy(w.keys, o)
	if last, ok := w.last[k]; ok && !slices.Equal(last, vals) {
		w.moved[k] = true
	}
	w.last[k] = vals
	if w.moved[k] || !d.ref.Matches(w.f, o) {
		delete(w.throughout, k)
	}
}

// sortedBy returns what a sorted list orders o by: its values of keys,
// and its kind, which is part of its Position.
func sortedBy(keys []planner.SortKey, o *object.Object) []object.SortValue {
	return append(indextest.RefSortValues(keys, o), object.SortValue{Kind: object.String, Str: o.Type.KindName()})
}

// checkPaged checks what paging returned, got, against what the watcher
// saw: in order, each a version live meanwhile that matches, no key twice
// (but those whose sort values changed, which a sorted list may meet
// again further on), and every key that matched throughout.
func (d *differential) checkPaged(name string, w *watcher, got []*object.Object) {
	d.t.Helper()
	seen := map[object.Key]bool{}
	for i, o := range got {
		if seen[o.Key()] && !w.moved[o.Key()] {
			d.t.Fatalf("%s: %s returned twice", name, o.Key())
		}
		seen[o.Key()] = true
		if !w.versions[o] {
			d.t.Fatalf("%s: %s returned, never live while paging", name, version(o))
		}
		if !d.ref.Matches(w.f, o) {
			d.t.Fatalf("%s: %s returned, does not match", name, version(o))
		}
		if i == 0 {
			continue
		}
		prev := got[i-1]
		if c := indextest.CompareRef(w.keys, indextest.RefSortValues(w.keys, prev), prev, indextest.RefSortValues(w.keys, o), o); c >= 0 {
			d.t.Fatalf("%s: %s returned before %s", name, version(prev), version(o))
		}
	}
	var missed []string
	for k := range w.throughout {
		if !seen[k] {
			missed = append(missed, k.String())
		}
	}
	if len(missed) > 0 {
		slices.Sort(missed)
		d.t.Fatalf("%s: objects that matched throughout were not returned: %v", name, missed)
	}
}

// pageUnderChurn pages through f (or a union of disjoint filters that
// selects the same), sorted by keys (nil: in Position order), with pages
// of a random size, making random changes between pages. Each page must
// be what the reference reads at that moment; together they must be what
// checkPaged wants.
func (d *differential) pageUnderChurn(c chooser, f planner.Filter, keys []planner.SortKey) {
	d.t.Helper()
	f = loosen(c, f)
	fs := []planner.Filter{f}
	if c.IntN(3) == 0 {
		fs = split(c, f)
	}
	limit, churn := 1+c.IntN(12), 1+c.IntN(30)
	name := fmt.Sprintf("%s (%d filters) in pages of %d", describe(f), len(fs), limit)
	if keys != nil {
		name += " sorted by " + describeKeys(keys)
	}
	w := d.watch(f, keys)
	defer d.unwatch(w)
	var got []*object.Object
	var after *planner.SortedPosition
	for pages := 0; ; pages++ {
		want := d.matching(fs...)
		if keys != nil {
			indextest.SortRef(want, keys)
		}
		if after != nil {
			pivot := after.Position.Placeholder()
			want = slices.DeleteFunc(want, func(o *object.Object) bool {
				return indextest.CompareRef(keys, indextest.RefSortValues(keys, o), o, after.Values, pivot) <= 0
			})
		}
		more := len(want) > limit
		if more {
			want = want[:limit]
		}
		page := d.listSorted(fs, keys, after, limit)
		if diff := diffObjects(want, page.Objects); diff != "" || page.More != more {
			d.t.Fatalf("%s: page %d, More = %v, want %v (-want +got):\n%s", name, pages, page.More, more, diff)
		}
		got = append(got, page.Objects...)
		if !page.More {
			break
		}
		last := page.Objects[len(page.Objects)-1]
		after = &planner.SortedPosition{Values: planner.SortValues(keys, last), Position: last.Position()}
		for range c.IntN(churn) {
			d.step(c)
		}
	}
	d.stats.paged(len(got), limit)
	d.checkPaged(name, w, got)
}

// pageConcurrently pages through f sorted by keys (nil: in Position
// order) while a goroutine makes random changes drawn from wr, and checks
// the pages with checkPaged.
func (d *differential) pageConcurrently(c chooser, f planner.Filter, keys []planner.SortKey, wr *rand.Rand) {
	t := d.t
	t.Helper()
	f = loosen(c, f)
	limit := 1 + c.IntN(20)
	name := fmt.Sprintf("%s in pages of %d during changes", describe(f), limit)
	if keys != nil {
		name += ", sorted by " + describeKeys(keys)
	}
	w := d.watch(f, keys)
	defer d.unwatch(w)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	// changes counts the writer's changes; it stops after maxChanges, or
	// when told to.
	const maxChanges = 5000
	var changes atomic.Int64
	var stopped atomic.Bool
	d.t = goroutineTB{t}
	defer func() { d.t = t }()
	wg.Go(func() {
		// The differential is the writer's until it returns.
		defer stopped.Store(true)
		for changes.Load() < maxChanges {
			select {
			case <-stop:
				return
			default:
				d.step(wr)
				changes.Add(1)
			}
		}
	})
	var got []*object.Object
	var after *planner.SortedPosition
	for {
		page := d.listSorted([]planner.Filter{f}, keys, after, limit)
		got = append(got, page.Objects...)
		if !page.More {
			break
		}
		last := page.Objects[len(page.Objects)-1]
		after = &planner.SortedPosition{Values: planner.SortValues(keys, last), Position: last.Position()}
		// Let the writer make a few changes before the next page.
		for next := changes.Load() + int64(1+c.IntN(8)); changes.Load() < next && !stopped.Load(); {
			runtime.Gosched()
		}
	}
	close(stop)
	wg.Wait()
	if t.Failed() {
		return
	}
	d.t = t
	d.stats.paged(len(got), limit)
	t.Logf("%d objects in pages of %d, %d changes meanwhile", len(got), limit, changes.Load())
	d.checkPaged(fmt.Sprintf("%s (%d changes)", name, changes.Load()), w, got)
}

// list reads a page of fs with List (one filter) or ListUnion.
func (d *differential) list(fs []planner.Filter, after *object.Position, limit int) planner.Page {
	if len(fs) == 1 {
		return planner.List(d.ix, fs[0], after, limit)
	}
	return planner.ListUnion(d.ix, fs, after, limit)
}

// listSorted reads a page of fs sorted by keys with ListSorted, or
// without keys with List (one filter) or ListUnion.
func (d *differential) listSorted(fs []planner.Filter, keys []planner.SortKey, after *planner.SortedPosition, limit int) planner.Page {
	if keys == nil {
		var pos *object.Position
		if after != nil {
			pos = &after.Position
		}
		return d.list(fs, pos, limit)
	}
	page, err := planner.ListSorted(d.ix, fs, keys, after, limit)
	if err != nil {
		panic(err) // the keys do not cross arrays
	}
	return page
}

// verify checks the index's own consistency.
func (d *differential) verify() {
	d.t.Helper()
	if err := d.ix.Verify(); err != nil {
		d.t.Fatal(err)
	}
	if n := planner.Count(d.ix, planner.Filter{}); n != len(d.live) {
		d.t.Fatalf("the index holds %d objects, want %d", n, len(d.live))
	}
}

// diffStats counts what the checks covered, to fail a test whose filters
// select too little to test anything.
type diffStats struct {
	filters, nonEmpty, pagings, multiPage int
}

func (s *diffStats) count(n int) {
	s.filters++
	if n > 0 {
		s.nonEmpty++
	}
}

func (s *diffStats) paged(n, limit int) {
	s.pagings++
	if n > 2*limit {
		s.multiPage++
	}
}

func (s *diffStats) add(o diffStats) {
	s.filters += o.filters
	s.nonEmpty += o.nonEmpty
	s.pagings += o.pagings
	s.multiPage += o.multiPage
}

func (s *diffStats) check(t *testing.T) {
	t.Logf("%d filters checked, %d selecting objects; %d pagings, %d of three pages or more", s.filters, s.nonEmpty, s.pagings, s.multiPage)
	if s.nonEmpty*3 < s.filters || s.multiPage*4 < s.pagings {
		t.Errorf("the random filters select too little to test the planner")
	}
}

// diffObjects returns the difference between two lists of objects, as
// versions, "" if there is none.
func diffObjects(want, got []*object.Object) string {
	if slices.Equal(want, got) {
		return "" // cmp.Diff is slow, even to find no difference
	}
	return cmp.Diff(versions(want), versions(got), cmpopts.EquateEmpty())
}

// version names one version of an object.
func version(o *object.Object) string { return o.Key().String() + "@" + o.ResourceVersion }

func versions(objs []*object.Object) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = version(o)
	}
	return out
}

// describe prints the fields a filter sets.
func describe(f planner.Filter) string {
	var parts []string
	add := func(name string, v any, set bool) {
		if set {
			parts = append(parts, fmt.Sprintf("%s=%q", name, v))
		}
	}
	add("clusters", f.Clusters, f.Clusters != nil)
	add("kinds", f.Kinds, f.Kinds != nil)
	add("resources", f.Resources, f.Resources != nil)
	add("namespaces", f.Namespaces, f.Namespaces != nil)
	if f.Selector != nil {
		add("labels", f.Selector.String(), true)
	}
	add("name", f.NameContains, f.NameContains != "")
	add("owner", f.OwnerUID, f.OwnerUID != "")
	add("owners", f.OwnerUIDs, f.OwnerUIDs != nil)
	add("fields", f.Fields.String(), !f.Fields.Empty())
	add("search", f.Search.String(), !f.Search.Empty())
	return "{" + strings.Join(parts, " ") + "}"
}

func describeAll(fs []planner.Filter) string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = describe(f)
	}
	return strings.Join(out, " ")
}

func describeKeys(keys []planner.SortKey) string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k.Path.String()
		if k.Desc {
			out[i] = "-" + out[i]
		}
	}
	return strings.Join(out, ",")
}

func describeFacet(by views.FacetBy) string {
	switch by.Key {
	case views.FacetLabel:
		return "label " + by.Label
	case views.FacetField:
		return "field " + by.Field.String()
	}
	return []string{"", "cluster", "namespace", "kind"}[by.Key]
}

// goroutineTB is the testing.TB of a goroutine other than the test's: a
// fatal failure marks the test failed and ends the goroutine, as FailNow
// may not.
type goroutineTB struct{ testing.TB }

func (g goroutineTB) Fatal(args ...any) {
	g.Error(args...)
	runtime.Goexit()
}

func (g goroutineTB) Fatalf(format string, args ...any) {
	g.Errorf(format, args...)
	runtime.Goexit()
}
