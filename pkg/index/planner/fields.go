package planner

import (
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
	"github.com/fleetcache/fleetcache/pkg/index/fieldselector"
	"strings"
)

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
					if s, _ := index.IndexedValue(fieldpath.Value{Kind: fieldpath.Number, Num: n}); s != v {
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

// cover returns the indexes of path of every resource q can match,
// and how many of q's constraints on types (resources, kinds) those
// resources satisfy throughout. ok is false when a resource q can match,
// among those the index holds, does not index path: its objects would be
// missed.
func (ix snapshot) cover(q *query, path string) (fis []*index.FieldIndex, answers int, ok bool) {
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
		fi := ix.FieldIndex(r, path)
		if fi == nil {
			return false
		}
		fis = append(fis, fi)
		return true
	}
	if q.resources != nil {
		for _, r := range q.resources {
			if kinds := ix.IndexedKinds(r); kinds != nil && !add(r, kinds) {
				return nil, 0, false
			}
		}
		answers++
	} else {
		covered := true
		ix.EachResourceKinds(func(r string, kinds map[string]int) bool {
			covered = add(r, kinds)
			return covered
		})
		if !covered {
			return nil, 0, false
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

// fieldPostings returns the postings that hold every object matching d,
// for the planner; ok is false when no index covers d.
func (ix snapshot) fieldPostings(q *query, d *fieldDim) (ps []*index.Posting, ok bool) {
	fis, _, ok := ix.cover(q, d.path)
	if !ok {
		return nil, false
	}
	for _, fi := range fis {
		for _, k := range d.keys {
			if p := fi.Value(k); p != nil {
				ps = append(ps, p)
			}
		}
	}
	return ps, true
}

// fieldCounts counts the objects matching q by their values at path
// from the postings, when the indexes cover q's resources and the
// postings answer q; it reports whether it did. It counts each value's
// posting against the ids of the matching objects, unless reading those
// objects is cheaper.
func (ix snapshot) fieldCounts(q *query, path fieldpath.Path, counts map[string]int) bool {
	if q.nothing || path.IsCluster() {
		return false
	}
	fis, answers, ok := ix.cover(q, path.String())
	if !ok {
		return false
	}
	var buf [2]index.Values
	vs := buf[:0]
	for _, fi := range fis {
		vs = append(vs, fi.Values())
	}
	if q.dims == answers {
		for _, v := range vs {
			v.Each(func(v string, p *index.Posting) { counts[v] += p.Len() })
		}
		return true
	}
	return ix.countPostings(q, vs, counts)
}
