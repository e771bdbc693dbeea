package index

import (
	"cmp"
	"slices"
)

// FacetKey is what Facets groups matching objects by.
type FacetKey int

// The facet keys.
const (
	FacetCluster FacetKey = iota + 1
	FacetNamespace
	FacetKind // Type.KindName(): "Pod", "Deployment.apps"
	FacetLabel
)

// Facet is one value of a FacetKey and how many matching objects have it.
type Facet struct {
	Value string
	Count int
}

// Facets counts the objects matching f by cluster, namespace, kind or the
// value of the label labelKey (objects without that label are not counted).
// Cluster-scoped objects count under namespace "". The result is sorted by
// count, highest first, then by value. A facet by cluster or namespace of a
// filter on clusters alone is answered from the index's counters, without
// visiting objects.
func (ix *Index) Facets(f Filter, by FacetKey, labelKey string) []Facet {
	return ix.FacetsUnion([]Filter{f}, by, labelKey)
}

// FacetsUnion is Facets of the objects matching any of the disjoint
// filters fs (see ListUnion).
func (ix *Index) FacetsUnion(fs []Filter, by FacetKey, labelKey string) []Facet {
	qs := compileAll(fs)
	counts := map[string]int{}
	ix.mu.RLock()
	for i := range qs {
		q := &qs[i]
		if ix.facetsFromStatsLocked(q, by, counts) {
			continue
		}
		if p := ix.planLocked(q); !p.none {
			ix.eachLocked(q, &p, func(o *Object) {
				if v, ok := facetValue(o, by, labelKey); ok {
					counts[v]++
				}
			})
		}
	}
	ix.mu.RUnlock()
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

func facetValue(o *Object, by FacetKey, labelKey string) (string, bool) {
	switch by {
	case FacetCluster:
		return o.Cluster, true
	case FacetNamespace:
		return o.Namespace, true
	case FacetKind:
		return o.Type.KindName(), true
	case FacetLabel:
		return o.Labels.Lookup(labelKey)
	}
	return "", false
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
	ix.all.ascend(pivot, func(o *Object) bool {
		if o.Cluster != cluster || o.Namespace != namespace || o.Name != name {
			return false
		}
		out = append(out, o)
		return true
	})
	ix.mu.RUnlock()
	return out
}
