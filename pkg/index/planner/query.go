package planner

import (
	"github.com/RoaringBitmap/roaring/v2"

	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
	"github.com/fleetcache/fleetcache/pkg/index/object"
)

// Query is a Filter compiled for reading the index, for the reads built
// on the planner (package views): the scope and types it names, the
// objects it matches, and the counts the index answers without visiting
// objects. A Query is immutable.
type Query struct{ q query }

// Compile prepares f for reading. f's Selector is read once, here.
func Compile(f Filter) *Query { return &Query{q: compile(f)} }

// Clusters returns the clusters the filter selects, sorted (with those a
// field selector on the path cluster allows), nil for any.
func (q *Query) Clusters() []string { return q.q.clusters }

// Namespaces returns the namespaces the filter selects, sorted, nil for
// any.
func (q *Query) Namespaces() []string { return q.q.namespaces }

// Resources returns the resources the filter selects, sorted, nil for any.
func (q *Query) Resources() []string { return q.q.resources }

// MatchesKind reports whether the filter's kinds select objects of t; true
// when it names no kind.
func (q *Query) MatchesKind(t *object.Type) bool {
	return (q.q.kinds == nil && q.q.bareKinds == nil) || q.q.kindMatches(t)
}

// Each calls fn, with the read lock r stands for held, for every object
// of r that matches q, visiting only the candidates of the cheapest plan;
// fn must not call back into the index.
func (q *Query) Each(r index.Reader, fn func(*object.Object)) {
	ix := snapshot{r}
	if p := ix.planFor(&q.q); !p.none {
		ix.each(&q.q, &p, fn)
	}
}

// CountScope adds to counts the objects matching q per cluster, or with
// byNamespace per namespace, from the index's per-cluster counters,
// without visiting objects, when q constrains nothing but clusters; it
// reports whether it could.
func (q *Query) CountScope(r index.Reader, byNamespace bool, counts map[string]int) bool {
	return snapshot{r}.scopeCounts(&q.q, byNamespace, counts)
}

// CountPostings adds to counts the objects matching q that each posting
// of vs holds, counted against the ids of the matching objects, when the
// postings answer q and intersecting costs less than reading the matching
// objects; it reports whether it could. Facets by cluster, namespace and
// kind use it.
func (q *Query) CountPostings(r index.Reader, vs index.Values, counts map[string]int) bool {
	return snapshot{r}.countPostings(&q.q, []index.Values{vs}, counts)
}

// CountLabel adds to counts the objects matching q per value of the label
// key from the label postings, when the postings answer q and that costs
// less than reading the matching objects; it reports whether it could.
func (q *Query) CountLabel(r index.Reader, key string, counts map[string]int) bool {
	return snapshot{r}.labelCounts(&q.q, key, counts)
}

// CountField adds to counts the objects matching q per value at path
// (index.IndexedValue) from the postings of the field indexes, when they
// cover every resource q can match and the postings answer q; it reports
// whether it could.
func (q *Query) CountField(r index.Reader, path fieldpath.Path, counts map[string]int) bool {
	return snapshot{r}.fieldCounts(&q.q, path, counts)
}

// labelCounts counts the objects matching q by their value of the label
// key: from the postings' sizes when q constrains nothing; otherwise each
// value's posting counted against the ids of the matching objects, or
// the label sets of those ids (Reader.CountLabelValues), whichever costs
// less. It reports whether it did.
func (ix snapshot) labelCounts(q *query, key string, counts map[string]int) bool {
	vs := []index.Values{ix.LabelValues(key)}
	ids, all, ok := ix.matching(q)
	switch {
	case !ok:
		return false
	case all:
		return ix.countAll(vs, counts)
	}
	n := int(ids.GetCardinality())
	if postingsCostMore(vs, n, labelSetCost*n) {
		ix.CountLabelValues(ids, key, counts)
		return true
	}
	countIntersections(ids, vs, counts)
	return true
}

// Costs of counting a facet's values, in nanoseconds, about: an id of a
// value's posting intersected with the matching ids; a matching id's
// label set read; a matching object read for its value.
const (
	postingIDCost = 2
	labelSetCost  = 8
	objectCost    = 150
)

// countPostings is Query.CountPostings, over the values of one or more
// dimensions (a path indexed in several resources).
func (ix snapshot) countPostings(q *query, vs []index.Values, counts map[string]int) bool {
	ids, all, ok := ix.matching(q)
	switch {
	case !ok:
		return false
	case all:
		return ix.countAll(vs, counts)
	}
	n := int(ids.GetCardinality())
	if postingsCostMore(vs, n, objectCost*n) {
		return false
	}
	countIntersections(ids, vs, counts)
	return true
}

// countAll counts every object by the postings' sizes, unless the values
// are so many that reading the objects costs less; it reports whether it
// did.
func (ix snapshot) countAll(vs []index.Values, counts map[string]int) bool {
	values := 0
	for _, v := range vs {
		values += v.Len()
	}
	if values > ix.Len()/4 {
		return false
	}
	for _, v := range vs {
		v.Each(func(v string, p *index.Posting) { counts[v] += p.Len() })
	}
	return true
}

// postingsCostMore reports whether intersecting each posting with n
// matching ids costs more than other nanoseconds: it visits at most the
// smaller side for each value.
func postingsCostMore(vs []index.Values, n, other int) bool {
	work := 0
	for _, v := range vs {
		v.Each(func(_ string, p *index.Posting) { work += min(p.Len(), n) })
	}
	return postingIDCost*work > other
}

// countIntersections counts, per value, its posting's ids among ids.
func countIntersections(ids *roaring.Bitmap, vs []index.Values, counts map[string]int) {
	for _, v := range vs {
		v.Each(func(v string, p *index.Posting) {
			if n := p.AndLen(ids); n > 0 {
				counts[v] += n
			}
		})
	}
}

// scopeCounts fills counts from the per-cluster counters when the query
// constrains nothing but clusters: by cluster, or with byNamespace by
// namespace.
func (ix snapshot) scopeCounts(q *query, byNamespace bool, counts map[string]int) bool {
	if q.dims > 1 || q.namespaces != nil || q.nothing || (q.dims == 1 && q.clusters == nil) {
		return false
	}
	clusters := q.clusters
	if clusters == nil {
		clusters = ix.Clusters()
	}
	for _, c := range clusters {
		st := ix.Cluster(c)
		if st == nil {
			continue
		}
		if !byNamespace {
			counts[c] += st.Objects
			continue
		}
		for ns, n := range st.Namespaces {
			counts[ns] += n
		}
	}
	return true
}
