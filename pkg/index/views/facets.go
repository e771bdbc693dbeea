package views

import (
	"cmp"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
	"slices"
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
func Facets(ix *index.Index, f planner.Filter, by FacetBy) []Facet {
	return FacetsUnion(ix, []planner.Filter{f}, by)
}

// FacetsUnion is Facets of the objects matching any of the disjoint
// filters fs (see planner.ListUnion).
func FacetsUnion(ix *index.Index, fs []planner.Filter, by FacetBy) []Facet {
	qs := make([]*planner.Query, len(fs))
	for i, f := range fs {
		qs[i] = planner.Compile(f)
	}
	counts := map[string]int{}
	count := func(o *object.Object) {
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
		var r object.BodyReader
		count = func(o *object.Object) {
			seen = seen[:0]
			by.Field.EachIn(r.DocFor(by.Field, o), func(v fieldpath.Value) bool {
				s, ok := index.IndexedValue(v)
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
	ix.Read(func(r index.Reader) {
		for _, q := range qs {
			if fromIndex(r, q, by, counts) {
				continue
			}
			q.Each(r, count)
		}
	})
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

// fromIndex counts the objects matching q into counts without reading
// them, from the index's counters or its postings, when it can; it
// reports whether it did.
func fromIndex(r index.Reader, q *planner.Query, by FacetBy, counts map[string]int) bool {
	switch by.Key {
	case FacetCluster:
		return q.CountScope(r, false, counts) ||
			q.CountPostings(r, r.ClusterValues(), counts)
	case FacetNamespace:
		return q.CountScope(r, true, counts) ||
			q.CountPostings(r, r.NamespaceValues(), counts)
	case FacetKind:
		return q.CountPostings(r, r.KindValues(), counts)
	case FacetLabel:
		return q.CountLabel(r, by.Label, counts)
	case FacetField:
		return q.CountField(r, by.Field, counts)
	}
	return false
}

func facetValue(o *object.Object, by FacetBy) (string, bool) {
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
