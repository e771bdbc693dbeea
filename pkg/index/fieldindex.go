package index

import (
	"maps"
	"slices"
	"strings"

	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
	"github.com/fleetcache/fleetcache/pkg/index/fieldselector"
)

// Secondary indexes on configured paths (Options.Indexes): for each
// resource and path, a posting per value found at the path, in the form
// facets count it (fieldFacetValue). The planner narrows a field selector's
// =, == and in to those postings when every resource the query can match
// indexes the path; facets by such a path count the postings.

// defaultIndexes returns the paths indexed by default, per resource: what a
// portal filters and counts by. docs/configuration.md gives the reasons.
func defaultIndexes() map[string][]fieldpath.Path {
	paths := func(texts ...string) []fieldpath.Path {
		out := make([]fieldpath.Path, len(texts))
		for i, t := range texts {
			out[i] = fieldpath.MustParse(t)
		}
		return out
	}
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

// withDefaultIndexes returns the default indexes with the configured
// resources' lists in place of their defaults.
func withDefaultIndexes(configured map[string][]fieldpath.Path) map[string][]fieldpath.Path {
	out := defaultIndexes()
	maps.Copy(out, configured)
	return out
}

// fieldIndexes are an Index's secondary indexes on paths.
type fieldIndexes struct {
	// byResource holds each resource's indexes, fixed by New.
	byResource map[string][]*fieldIndex
	// kinds counts the objects of every resource the index holds by kind
	// name, to tell which resources a kind filter can match.
	kinds map[string]map[string]int
}

// fieldIndex is the index of one path of one resource: a posting per
// value, and for a path that does not cross an array (a sortable one) an
// ordered index for sorting.
type fieldIndex struct {
	path    fieldpath.Path
	values  map[string]*posting
	ordered *orderedIndex
}

func newFieldIndexes(indexes map[string][]fieldpath.Path) fieldIndexes {
	fx := fieldIndexes{byResource: map[string][]*fieldIndex{}, kinds: map[string]map[string]int{}}
	for r, paths := range indexes {
		var fis []*fieldIndex
		for _, p := range paths {
			// The path cluster has its own ranges; the zero Path names nothing.
			if p.IsCluster() || p.String() == "" ||
				slices.ContainsFunc(fis, func(fi *fieldIndex) bool { return fi.path.String() == p.String() }) {
				continue
			}
			fi := &fieldIndex{path: p, values: map[string]*posting{}}
			if !p.Crosses() {
				fi.ordered = newOrderedIndex(p)
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
func (fx *fieldIndexes) lookup(resource, path string) *fieldIndex {
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
func fieldValues(path fieldpath.Path, o *Object, r *bodyReader, dst []string) []string {
	start := len(dst)
	path.EachIn(r.docFor(path, o), func(v fieldpath.Value) bool {
		if s, ok := fieldFacetValue(v); ok {
			dst = append(dst, s)
		}
		return true
	})
	if len(dst)-start > 1 {
		slices.Sort(dst[start:])
		dst = dst[:start+len(slices.Compact(dst[start:]))]
	}
	return dst
}

// indexFieldsLocked adds o, of kind kindName, to the postings of its
// values; insertLocked calls it.
func (ix *Index) indexFieldsLocked(o *Object, kindName string) {
	kinds := ix.fields.kinds[o.Type.Resource]
	if kinds == nil {
		kinds = map[string]int{}
		ix.fields.kinds[o.Type.Resource] = kinds
	}
	kinds[kindName]++
	var buf [4]string
	for _, fi := range ix.fields.byResource[o.Type.Resource] {
		for _, v := range fieldValues(fi.path, o, &ix.bodies, buf[:0]) {
			fi.postingLocked(v).Put(o, ix.freelist)
		}
		if fi.ordered != nil {
			fi.ordered.put(o, ix.freelist, &ix.bodies)
		}
	}
}

// unindexFieldsLocked removes o, of kind kindName, from the postings of
// its values; removeLocked calls it.
func (ix *Index) unindexFieldsLocked(o *Object, kindName string) {
	kinds := ix.fields.kinds[o.Type.Resource]
	decrement(kinds, kindName)
	if len(kinds) == 0 {
		delete(ix.fields.kinds, o.Type.Resource)
	}
	var buf [4]string
	for _, fi := range ix.fields.byResource[o.Type.Resource] {
		for _, v := range fieldValues(fi.path, o, &ix.bodies, buf[:0]) {
			removeFrom(fi.values, v, fi.values[v], o)
		}
		if fi.ordered != nil {
			fi.ordered.remove(o, &ix.bodies)
		}
	}
}

// reindexFieldsLocked moves o, a newer version of old with the same kind
// name, to the postings of its values; replaceLocked calls it.
func (ix *Index) reindexFieldsLocked(old, o *Object) {
	var oldBuf, newBuf [4]string
	for _, fi := range ix.fields.byResource[o.Type.Resource] {
		nv := fieldValues(fi.path, o, &ix.bodies, newBuf[:0])
		for _, v := range fieldValues(fi.path, old, &ix.bodies, oldBuf[:0]) {
			if !slices.Contains(nv, v) {
				removeFrom(fi.values, v, fi.values[v], old)
			}
		}
		for _, v := range nv {
			// put replaces old where it is, and adds o where it is not.
			fi.postingLocked(v).Put(o, ix.freelist)
		}
		if fi.ordered != nil {
			fi.ordered.remove(old, &ix.bodies)
			fi.ordered.put(o, ix.freelist, &ix.bodies)
		}
	}
}

// postingLocked returns the posting of v, creating it if needed. v may
// point into an object's bytes: a new entry holds a copy.
func (fi *fieldIndex) postingLocked(v string) *posting {
	p := fi.values[v]
	if p == nil {
		p = new(posting)
		fi.values[strings.Clone(v)] = p
	}
	return p
}

// fieldDim is a field selector requirement that an index can narrow:
// path = value or path in (values).
type fieldDim struct {
	// req is the requirement's index in query.fieldReqs.
	req  int
	path string
	// crosses says the path crosses an array: an object may be in the
	// postings of several values.
	crosses bool
	// keys are the values whose postings hold every object that satisfies
	// the requirement: each value as written, and the shortest form of
	// the number it is.
	keys []string
	// exact means every object of those postings satisfies it: no value
	// is a number written otherwise than in its shortest form ("3.0").
	exact bool
}

// compileFields counts q's field requirements among its constraints (those
// on the path cluster with = and in, which narrowClusters turned into
// q.clusters, excepted) and keeps those an index may narrow.
func (q *query) compileFields(fields fieldselector.Selector) {
	q.fieldReqs = fields.Requirements()
	for i, r := range q.fieldReqs {
		eq := r.Operator() == fieldselector.Equals || r.Operator() == fieldselector.In
		switch {
		case eq && r.Path().IsCluster():
			continue
		case eq:
			d := fieldDim{req: i, path: r.Path().String(), crosses: r.Path().Crosses(), exact: true}
			for _, v := range r.Values() {
				d.keys = append(d.keys, v)
				if n, ok := fieldselector.ParseNumber(v); ok {
					if s, _ := fieldFacetValue(fieldpath.Value{Kind: fieldpath.Number, Num: n}); s != v {
						d.keys, d.exact = append(d.keys, s), false
					}
				}
			}
			d.keys = sortedSet(d.keys)
			q.fieldDims = append(q.fieldDims, d)
		}
		q.dims++
	}
}

// coverLocked returns the indexes of path of every resource q can match,
// and how many of q's constraints on types (resources, kinds) those
// resources satisfy throughout. ok is false when a resource q can match,
// among those the index holds, does not index path: its objects would be
// missed.
func (ix *Index) coverLocked(q *query, path string) (fis []*fieldIndex, answers int, ok bool) {
	kindFilter := q.kinds != nil || q.bareKinds != nil
	kindsAnswered := true
	add := func(r string, kinds map[string]int) bool {
		if kindFilter {
			some, all := false, true
			for kn := range kinds {
				if q.kindNameMatches(kn) {
					some = true
				} else {
					all = false
				}
			}
			if !some {
				return true // q matches no object of r
			}
			kindsAnswered = kindsAnswered && all
		}
		fi := ix.fields.lookup(r, path)
		if fi == nil {
			return false
		}
		fis = append(fis, fi)
		return true
	}
	if q.resources != nil {
		for _, r := range q.resources {
			if kinds := ix.fields.kinds[r]; kinds != nil && !add(r, kinds) {
				return nil, 0, false
			}
		}
		answers++
	} else {
		for r, kinds := range ix.fields.kinds {
			if !add(r, kinds) {
				return nil, 0, false
			}
		}
	}
	if kindFilter && kindsAnswered {
		answers++
	}
	return fis, answers, true
}

// kindNameMatches is kindMatches for a kind name ("Deployment.apps").
func (q *query) kindNameMatches(kn string) bool {
	bare, _, _ := strings.Cut(kn, ".")
	return contains(q.bareKinds, bare) || contains(q.kinds, kn)
}

// fieldPostingsLocked returns the postings that hold every object
// matching d, for the planner, and how many of q's constraints they
// satisfy throughout; ok is false when no index covers d.
func (ix *Index) fieldPostingsLocked(q *query, d *fieldDim) (ps []*posting, answers int, overlap, ok bool) {
	fis, answers, ok := ix.coverLocked(q, d.path)
	if !ok {
		return nil, 0, false, false
	}
	for _, fi := range fis {
		for _, k := range d.keys {
			if p := fi.values[k]; p != nil {
				ps = append(ps, p)
			}
		}
	}
	if d.exact {
		answers++
	}
	return ps, answers, d.crosses && len(d.keys) > 1, true
}

// fieldFacetsLocked counts the objects matching q by their values at path
// from the postings, when the indexes cover q's resources and q has no
// constraint beyond those on types and a scope; it reports whether it did.
// Within a scope it seeks each value's posting in each range, unless
// reading the scope's objects is cheaper.
func (ix *Index) fieldFacetsLocked(q *query, path fieldpath.Path, counts map[string]int) bool {
	if q.nothing || path.IsCluster() {
		return false
	}
	fis, answers, ok := ix.coverLocked(q, path.String())
	scoped := q.clusters != nil || q.namespaces != nil
	switch {
	case !ok:
		return false
	case q.dims == answers:
		for _, fi := range fis {
			for v, p := range fi.values {
				counts[v] += p.Len()
			}
		}
		return true
	case q.dims != answers+1 || !scoped:
		return false
	}
	ranges, size := ix.scopeLocked(q)
	values := 0
	for _, fi := range fis {
		values += len(fi.values)
	}
	// A seek costs about a fifth of reading a path from an object's bytes.
	if values*len(ranges) > 5*size {
		return false
	}
	visited := 0
	start := new(Object)
	for _, fi := range fis {
		for v, p := range fi.values {
			n := 0
			for _, r := range ranges {
				*start = Object{Cluster: r.cluster, Namespace: r.namespace, Type: minType}
				p.Ascend(start, func(o *Object) bool {
					if !r.contains(o) {
						return false
					}
					n++
					return true
				})
			}
			if n > 0 {
				counts[v] += n
			}
			visited += n
		}
	}
	ix.scanned.Add(int64(visited))
	return true
}
