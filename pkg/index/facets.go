package index

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
)

// FacetKey is what Facets groups matching objects by.
type FacetKey int

// The facet keys.
const (
	FacetCluster FacetKey = iota + 1
	FacetNamespace
	FacetKind // Type.KindName(): "Pod", "Deployment.apps"
	FacetLabel
	FacetField // the values at a path inside the object
)

// FacetBy is what Facets groups matching objects by: a FacetKey, with the
// label key of FacetLabel or the path of FacetField.
type FacetBy struct {
	Key FacetKey
	// Label is the label key of FacetLabel.
	Label string
	// Field is the path of FacetField.
	Field fieldpath.Path
}

// Facet is one value of a FacetKey and how many matching objects have it.
type Facet struct {
	Value string
	Count int
}

// Facets counts the objects matching f by cluster, namespace, kind, the
// value of a label (objects without that label are not counted) or the
// values at a path (see FacetField). Cluster-scoped objects count under
// namespace "". The result is sorted by count, highest first, then by
// value. A facet by cluster or namespace of a filter on clusters alone is
// answered from the index's counters, without visiting objects.
//
// By FacetField, an object counts once under each distinct value found at
// the path, read from its stored bytes: once per value where the path
// crosses an array, not at all where it has none. Strings count as they
// are, numbers in their shortest decimal form (3 and 3.0 are "3"), booleans as
// "true" and "false"; objects and arrays are not values to count by.
func (ix *Index) Facets(f Filter, by FacetBy) []Facet {
	return ix.FacetsUnion([]Filter{f}, by)
}

// FacetsUnion is Facets of the objects matching any of the disjoint
// filters fs (see ListUnion).
func (ix *Index) FacetsUnion(fs []Filter, by FacetBy) []Facet {
	qs := compileAll(fs)
	counts := map[string]int{}
	count := func(o *Object) {
		if v, ok := facetValue(o, by); ok {
			counts[v]++
		}
	}
	// read counts the values read from the objects' bytes. Its keys are
	// copies: a value read points into a decoded body that the next
	// object's overwrites (and assigning to a map's existing string key
	// stores the new key, hence the pointers).
	read := map[string]*int{}
	if by.Key == FacetField {
		var seen []string // the values of one object
		var r bodyReader
		count = func(o *Object) {
			seen = seen[:0]
			by.Field.EachIn(r.docFor(by.Field, o), func(v fieldpath.Value) bool {
				s, ok := fieldFacetValue(v)
				if !ok || slices.Contains(seen, s) {
					return true
				}
				seen = append(seen, s)
				if n := read[s]; n != nil {
					*n++
				} else {
					n := 1
					read[strings.Clone(s)] = &n
				}
				return true
			})
		}
	}
	ix.mu.RLock()
	for i := range qs {
		q := &qs[i]
		if ix.facetsFromStatsLocked(q, by.Key, counts) ||
			(by.Key == FacetField && ix.fieldFacetsLocked(q, by.Field, counts)) ||
			(by.Key == FacetLabel && ix.labelFacetsLocked(q, by.Label, counts)) {
			continue
		}
		if p := ix.planLocked(q); !p.none {
			ix.eachLocked(q, &p, count)
		}
	}
	ix.mu.RUnlock()
	for v, n := range read {
		counts[v] += *n
	}
	out := make([]Facet, 0, len(counts))
	for v, n := range counts {
		out = append(out, Facet{Value: v, Count: n})
	}
	slices.SortFunc(out, func(a, b Facet) int {
		if c := cmp.Compare(b.Count, a.Count); c != 0 {
			return c
		}
		return cmp.Compare(a.Value, b.Value)
	})
	return out
}

func facetValue(o *Object, by FacetBy) (string, bool) {
	switch by.Key {
	case FacetCluster:
		return o.Cluster, true
	case FacetNamespace:
		return o.Namespace, true
	case FacetKind:
		return o.Type.KindName(), true
	case FacetLabel:
		return o.Labels.Lookup(by.Label)
	}
	return "", false
}

// fieldFacetValue returns the facet value of a value found at a path:
// false for objects and arrays.
func fieldFacetValue(v fieldpath.Value) (string, bool) {
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

// labelFacetsLocked counts every object by its value of the label key from
// the label postings' sizes, when q constrains nothing and there are fewer
// distinct labels than objects to visit; it reports whether it did.
func (ix *Index) labelFacetsLocked(q *query, key string, counts map[string]int) bool {
	if q.nothing || q.dims != 0 || len(ix.labels) >= ix.all.Len() {
		return false
	}
	for l, p := range ix.labels {
		if l.Key == key {
			counts[l.Value] += p.Len()
		}
	}
	return true
}

// facetsFromStatsLocked fills counts from the per-cluster counters when the
// query constrains nothing but clusters and the facet is by cluster or
// namespace.
func (ix *Index) facetsFromStatsLocked(q *query, by FacetKey, counts map[string]int) bool {
	if (by != FacetCluster && by != FacetNamespace) || q.dims > 1 || q.namespaces != nil || q.nothing ||
		(q.dims == 1 && q.clusters == nil) {
		return false
	}
	clusters := q.clusters
	if clusters == nil {
		clusters = ix.clusterNames
	}
	for _, c := range clusters {
		st := ix.clusters[c]
		if st == nil {
			continue
		}
		if by == FacetCluster {
			counts[c] += st.objects
			continue
		}
		for ns, n := range st.namespaces {
			counts[ns] += n
		}
	}
	return true
}

// Lookup returns every object, of any type, with exactly this cluster,
// namespace ("" for cluster-scoped objects) and name, in Position order.
func (ix *Index) Lookup(cluster, namespace, name string) []*Object {
	pivot := &Object{Cluster: cluster, Namespace: namespace, Name: name, Type: minType}
	var out []*Object
	ix.mu.RLock()
	ix.all.Ascend(pivot, func(o *Object) bool {
		if o.Cluster != cluster || o.Namespace != namespace || o.Name != name {
			return false
		}
		out = append(out, o)
		return true
	})
	ix.mu.RUnlock()
	return out
}
