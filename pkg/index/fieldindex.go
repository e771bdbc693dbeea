package index

import (
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
	"github.com/fleetcache/fleetcache/pkg/index/object"
)

// Secondary indexes on configured paths (Options.Indexes): for each
// resource and path, a posting per value found at the path, in the form
// facets count it (IndexedValue). The planner narrows a field selector's
// =, == and in to those postings when every resource the query can match
// indexes the path; facets by such a path count the postings.

// defaultIndexes returns the paths indexed by default, per resource: what a
// portal filters and counts by. docs/configuration.md gives the reasons.
func defaultIndexes() map[string][]fieldpath.Path {
	paths := parsePaths
	workload := paths("spec.template.spec.containers[].image")
	return map[string][]fieldpath.Path{
		"pods":                 paths("status.phase", "spec.nodeName", "spec.containers[].image"),
		"nodes":                paths("spec.unschedulable", "status.nodeInfo.kubeletVersion"),
		"deployments.apps":     workload,
		"statefulsets.apps":    workload,
		"daemonsets.apps":      workload,
		"replicasets.apps":     workload,
		"jobs.batch":           paths("status.conditions[].type"),
		"cronjobs.batch":       paths("spec.suspend"),
		"services":             paths("spec.type"),
		"events":               paths("type", "reason", "involvedObject.kind", "involvedObject.name"),
		"events.events.k8s.io": paths("type", "reason", "regarding.kind", "regarding.name"),
	}
}

// RelationPaths are the paths the relations between kinds read backwards
// (package relations, docs/graphql.md "Relations"), per resource: which
// Pods mount or reference a ConfigMap, a Secret or a claim, which Events
// are about an object. They are indexed whatever Options.Indexes say, so
// that a relation never reads every object of a kind.
var RelationPaths = map[string][]fieldpath.Path{
	"pods": parsePaths(
		"spec.volumes[].configMap.name",
		"spec.volumes[].projected.sources[].configMap.name",
		"spec.containers[].envFrom[].configMapRef.name",
		"spec.containers[].env[].valueFrom.configMapKeyRef.name",
		"spec.initContainers[].envFrom[].configMapRef.name",
		"spec.initContainers[].env[].valueFrom.configMapKeyRef.name",
		"spec.volumes[].secret.secretName",
		"spec.volumes[].projected.sources[].secret.name",
		"spec.containers[].envFrom[].secretRef.name",
		"spec.containers[].env[].valueFrom.secretKeyRef.name",
		"spec.initContainers[].envFrom[].secretRef.name",
		"spec.initContainers[].env[].valueFrom.secretKeyRef.name",
		"spec.imagePullSecrets[].name",
		"spec.volumes[].persistentVolumeClaim.claimName",
	),
	"events":               parsePaths("involvedObject.uid"),
	"events.events.k8s.io": parsePaths("regarding.uid"),
}

func parsePaths(texts ...string) []fieldpath.Path {
	out := make([]fieldpath.Path, len(texts))
	for i, t := range texts {
		out[i] = fieldpath.MustParse(t)
	}
	return out
}

// withDefaultIndexes returns the default indexes with the configured
// resources' lists in place of their defaults, and RelationPaths added to
// every resource's list.
func withDefaultIndexes(configured map[string][]fieldpath.Path) map[string][]fieldpath.Path {
	out := defaultIndexes()
	maps.Copy(out, configured)
	for r, paths := range RelationPaths {
		for _, p := range paths {
			if !slices.ContainsFunc(out[r], func(q fieldpath.Path) bool { return q.String() == p.String() }) {
				out[r] = append(slices.Clip(out[r]), p)
			}
		}
	}
	return out
}

// fieldIndexes are an Index's secondary indexes on paths.
type fieldIndexes struct {
	// byResource holds each resource's indexes, fixed by New.
	byResource map[string][]*FieldIndex
	// kinds counts the objects of every resource the index holds by kind
	// name, to tell which resources a kind filter can match.
	kinds map[string]map[string]int
}

// FieldIndex is the index of one path of one resource: a posting per
// value (IndexedValue), and for a path that does not cross an array (a
// sortable one) an ordered index for sorting.
type FieldIndex struct {
	path    fieldpath.Path
	values  map[string]*Posting
	ordered *valueOrder
}

// Value returns the posting of the objects with the value v (as
// IndexedValue writes it) at the path, nil if there are none.
func (fi *FieldIndex) Value(v string) *Posting { return fi.values[v] }

// Values returns the values objects have at the path, each with the
// posting of those objects.
func (fi *FieldIndex) Values() Values { return Values{fi.values} }

// Ordered returns the index's objects in order of their value, nil when
// the path crosses an array.
func (fi *FieldIndex) Ordered() OrderedIndex {
	if fi.ordered == nil {
		return nil
	}
	return fi.ordered
}

func newFieldIndexes(ix *Index, indexes map[string][]fieldpath.Path) fieldIndexes {
	fx := fieldIndexes{byResource: map[string][]*FieldIndex{}, kinds: map[string]map[string]int{}}
	for r, paths := range indexes {
		var fis []*FieldIndex
		for _, p := range paths {
			// The path cluster has its own ranges; the zero Path names nothing.
			if p.IsCluster() || p.String() == "" ||
				slices.ContainsFunc(fis, func(fi *FieldIndex) bool { return fi.path.String() == p.String() }) {
				continue
			}
			fi := &FieldIndex{path: p, values: map[string]*Posting{}}
			if !p.Crosses() {
				fi.ordered = newValueOrder(ix, p)
			}
			fis = append(fis, fi)
		}
		if fis != nil {
			fx.byResource[r] = fis
		}
	}
	return fx
}

// lookup returns the index of resource on the path text, or nil.
func (fx *fieldIndexes) lookup(resource, path string) *FieldIndex {
	for _, fi := range fx.byResource[resource] {
		if fi.path.String() == path {
			return fi
		}
	}
	return nil
}

// IndexedPaths returns the paths that have a secondary index for objects
// of resource (a kubectl name such as "pods"), as Options.Indexes
// configured them with the defaults filled in.
func (ix *Index) IndexedPaths(resource string) []fieldpath.Path {
	fis := ix.fields.byResource[resource]
	out := make([]fieldpath.Path, len(fis))
	for i, fi := range fis {
		out[i] = fi.path
	}
	return out
}

// fieldValues appends to dst the distinct values at path in o, in the form
// facets count them. They may point into o's bytes.
func fieldValues(path fieldpath.Path, o *object.Object, r *object.BodyReader, dst []string) []string {
	start := len(dst)
	o.Each(path, r, func(v fieldpath.Value) bool {
		if s, ok := IndexedValue(v); ok {
			dst = append(dst, s)
		}
		return true
	})
	return distinct(dst, start)
}

// distinctValues is fieldValues for json, the value at path that an
// object keeps beside its body (object.Object.Projected); with sorted, it
// also returns the sort value of the first value at path
// (object.SortValueFrom; Absent when none).
func distinctValues(path fieldpath.Path, json []byte, dst []string, sorted bool) ([]string, object.SortValue) {
	var first object.SortValue
	if string(json) == "null" {
		// Absent, as most of a Pod's relation paths are: not parsed.
		return dst, first
	}
	start, seen := len(dst), false
	path.EachInJSON(json, func(v fieldpath.Value) bool {
		if sorted && !seen {
			first, seen = object.SortValueFrom(v), true
		}
		if s, ok := IndexedValue(v); ok {
			dst = append(dst, s)
		}
		return true
	})
	return distinct(dst, start), first
}

// distinct sorts dst[start:] and drops its repeats.
func distinct(dst []string, start int) []string {
	if len(dst)-start > 1 {
		slices.Sort(dst[start:])
		dst = dst[:start+len(slices.Compact(dst[start:]))]
	}
	return dst
}

// indexFieldsLocked adds o, of kind kindName, to the postings of its
// values; insertLocked calls it.
func (ix *Index) indexFieldsLocked(o *object.Object, id uint32, te *typeEntry) {
	kinds := ix.fields.kinds[o.Type.Resource]
	if kinds == nil {
		kinds = map[string]int{}
		ix.fields.kinds[o.Type.Resource] = kinds
	}
	kinds[te.kindName]++
	fis := ix.fields.byResource[o.Type.Resource]
	var buf [4]string
	// add indexes values, and first, the sort value, when it was read
	// with them from the projected JSON (one parse for both).
	add := func(fi *FieldIndex, values []string, first *object.SortValue) {
		for _, v := range values {
			fi.postingLocked(v).Add(id)
		}
		switch {
		case fi.ordered == nil:
		case first != nil && !object.IsCreationTimestamp(fi.path):
			fi.ordered.putValue(id, *first)
		default:
			fi.ordered.put(o, id, &ix.bodies)
		}
	}
	if te.fieldsProjected && o.EachProjected(func(i int, json []byte) {
		values, first := distinctValues(fis[i].path, json, buf[:0], fis[i].ordered != nil)
		add(fis[i], values, &first)
	}) {
		return
	}
	for _, fi := range fis {
		add(fi, fieldValues(fi.path, o, &ix.bodies, buf[:0]), nil)
	}
}

// unindexFieldsLocked removes o, of kind kindName, from the postings of
// its values; removeLocked calls it.
func (ix *Index) unindexFieldsLocked(o *object.Object, id uint32, kindName string) {
	kinds := ix.fields.kinds[o.Type.Resource]
	decrement(kinds, kindName)
	if len(kinds) == 0 {
		delete(ix.fields.kinds, o.Type.Resource)
	}
	var buf [4]string
	for _, fi := range ix.fields.byResource[o.Type.Resource] {
		for _, v := range fieldValues(fi.path, o, &ix.bodies, buf[:0]) {
			removeFrom(fi.values, v, id)
		}
		if fi.ordered != nil {
			fi.ordered.remove(o, id, &ix.bodies)
		}
	}
}

// reindexFieldsLocked moves id from the postings of old's values to those
// of o's, a newer version of old with the same kind name, which takes its
// id; replaceLocked calls it.
func (ix *Index) reindexFieldsLocked(old, o *object.Object, id uint32) {
	var oldBuf, newBuf [4]string
	for _, fi := range ix.fields.byResource[o.Type.Resource] {
		nv := fieldValues(fi.path, o, &ix.bodies, newBuf[:0])
		for _, v := range fieldValues(fi.path, old, &ix.bodies, oldBuf[:0]) {
			if !slices.Contains(nv, v) {
				removeFrom(fi.values, v, id)
			}
		}
		for _, v := range nv {
			fi.postingLocked(v).Add(id)
		}
		if fi.ordered != nil {
			fi.ordered.remove(old, id, &ix.bodies)
			fi.ordered.put(o, id, &ix.bodies)
		}
	}
}

// postingLocked returns the posting of v, creating it if needed. v may
// point into an object's bytes: a new entry holds a copy.
func (fi *FieldIndex) postingLocked(v string) *Posting {
	p := fi.values[v]
	if p == nil {
		p = new(Posting)
		fi.values[strings.Clone(v)] = p
	}
	return p
}

// IndexedValue returns the form in which a value found at a path is
// indexed (field indexes' postings per value) and counted (facets by a
// path): strings as they are, numbers in their shortest decimal form (3
// and 3.0 are "3"), booleans "true" and "false"; false for objects and
// arrays.
func IndexedValue(v fieldpath.Value) (string, bool) {
	switch v.Kind {
	case fieldpath.String:
		return v.Str, true
	case fieldpath.Number:
		if v.Num == 0 {
			return "0", true // -0 is 0
		}
		if math.Abs(v.Num) < 1e21 {
			return strconv.FormatFloat(v.Num, 'f', -1, 64), true // 123456789, not 1.23456789e+08
		}
		return strconv.FormatFloat(v.Num, 'g', -1, 64), true
	case fieldpath.Bool:
		return strconv.FormatBool(v.Bool), true
	}
	return "", false
}
