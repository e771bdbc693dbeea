package planner

import (
	"github.com/fleetcache/fleetcache/pkg/index"
	"math"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fleetcache/fleetcache/pkg/index/fieldselector"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/search"
)

// Filter selects objects. Empty or zero fields select everything; the
// values inside one field are ORed, and the fields are ANDed.
type Filter struct {
	// Clusters are cluster names.
	Clusters []string
	// Kinds are kinds: "Pod" (a name without a dot) matches Type.Kind in
	// any group, "Deployment.apps" matches Type.KindName().
	Kinds []string
	// Resources are kubectl resource names as in Type.Resource: "pods",
	// "deployments.apps".
	Resources []string
	// Namespaces are namespace names; "" selects cluster-scoped objects.
	Namespaces []string
	// Selector selects by labels; nil selects everything.
	Selector labels.Selector
	// NameContains selects objects whose name contains it.
	NameContains string
	// OwnerUID selects objects that have an owner reference with this UID.
	OwnerUID types.UID
	// Fields selects by the values at paths inside the objects; the empty
	// Selector selects everything. Its =, == and in narrow like label
	// requirements where Options.Indexes index the path for every
	// resource the filter can match (fieldindex.go); otherwise, and for
	// the other operators, the values are read from the stored bytes of
	// the candidates the other fields leave (requirements on the path
	// cluster narrow to those clusters first).
	Fields fieldselector.Selector
	// Search selects objects each of whose words begins a token of their
	// name, namespace, label keys and values, annotation values or images
	// (see package search); the empty Query selects everything. A token
	// index finds the candidates.
	Search search.Query
}

// Page is one page of List results.
type Page struct {
	// Objects are the matching objects, in Position order.
	Objects []*object.Object
	// Revision is the revision the page was read at: the page is a
	// consistent snapshot, and Events(Revision, …) continues from it.
	Revision uint64
	// More reports whether more matching objects exist after the last one.
	More bool
}

// snapshot is the index as a read sees it, with the read lock held: the
// planner's methods read the index through it.
type snapshot struct{ index.Reader }

// List returns the objects of ix matching f in Position order, strictly
// after after (nil: from the start), at most limit of them (limit <= 0: no
// limit). Paging with the Position of the last object of each page never
// skips or repeats an object that exists throughout, whatever changes
// meanwhile.
func List(ix *index.Index, f Filter, after *object.Position, limit int) Page {
	return ListUnion(ix, []Filter{f}, after, limit)
}

// ListUnion is List of the objects that match any of fs, read in one
// snapshot. The filters must be disjoint (no object matches two of them):
// authorization builds such unions, one filter per cluster and grant.
func ListUnion(ix *index.Index, fs []Filter, after *object.Position, limit int) Page {
	qs := compileAll(fs)
	var from *object.Object
	if after != nil {
		from = after.Placeholder()
	}
	need := math.MaxInt
	if limit > 0 {
		need = limit + 1
	}
	var page Page
	ix.Read(func(r index.Reader) { page = snapshot{r}.listUnion(qs, from, need) })
	if limit > 0 && len(page.Objects) > limit {
		page.Objects, page.More = page.Objects[:limit:limit], true
	}
	return page
}

// listUnion returns the first need objects matching one of qs after from.
func (ix snapshot) listUnion(qs []query, from *object.Object, need int) Page {
	page := Page{Revision: ix.Revision()}
	for i := range qs {
		p := ix.planFor(&qs[i])
		if p.none {
			continue
		}
		objs := ix.collect(&qs[i], &p, from, need)
		if page.Objects == nil {
			page.Objects = objs
			continue
		}
		// Merge, keeping the first need: each list is in Position order.
		merged := make([]*object.Object, 0, min(need, len(page.Objects)+len(objs)))
		a, b := page.Objects, objs
		for len(merged) < need && (len(a) > 0 || len(b) > 0) {
			if len(b) == 0 || (len(a) > 0 && object.CompareObjects(a[0], b[0]) < 0) {
				merged, a = append(merged, a[0]), a[1:]
			} else {
				merged, b = append(merged, b[0]), b[1:]
			}
		}
		page.Objects = merged
	}
	return page
}

// Count returns the number of objects of ix matching f.
func Count(ix *index.Index, f Filter) int {
	return CountUnion(ix, []Filter{f})
}

// CountUnion returns the number of objects of ix matching any of the
// disjoint filters fs (see ListUnion).
func CountUnion(ix *index.Index, fs []Filter) int {
	qs := compileAll(fs)
	n := 0
	ix.Read(func(r index.Reader) {
		for i := range qs {
			n += snapshot{r}.countQuery(&qs[i])
		}
	})
	return n
}

func (ix snapshot) countQuery(q *query) int {
	if n, ok := ix.countFromStats(q); ok {
		return n
	}
	p := ix.planFor(q)
	switch {
	case p.none:
		return 0
	case p.exact && p.sizeExact:
		return p.size
	}
	return ix.count(q, &p)
}

func compileAll(fs []Filter) []query {
	qs := make([]query, len(fs))
	for i, f := range fs {
		qs[i] = compile(f)
	}
	return qs
}

// query is a Filter prepared for matching: value lists sorted and without
// duplicates, label requirements extracted.
type query struct {
	clusters   []string
	namespaces []string
	resources  []string
	kinds      []string // full kind names, "Deployment.apps"
	bareKinds  []string // kinds without a group part, "Pod"
	// reqs are the selector's requirements, all of which must match. They
	// are taken from the Selector before locking, and evaluated under the
	// lock with apimachinery's Requirement.Matches, so no caller-supplied
	// Selector implementation runs under the lock.
	reqs labels.Requirements
	// labelDims are the requirements that narrow: key in values (=, ==,
	// in) or key exists.
	labelDims []labelDim
	nothing   bool // the selector selects nothing
	name      string
	owner     types.UID
	// fields is the field selector, evaluated last: it reads the object's
	// bytes: fieldReqs are its requirements, fieldDims those an index may
	// narrow.
	fields    fieldselector.Selector
	fieldReqs []fieldselector.Requirement
	fieldDims []fieldDim
	// search is the search, each of whose words narrows like a label
	// requirement.
	search search.Query
	// dims is how many constraints the query has: one for the clusters and
	// namespaces together (the scope), one each for kinds, resources, name,
	// owner, each label requirement, each field requirement (but those
	// that narrowClusters folds into the clusters) and each search word.
	dims int
}

func compile(f Filter) query {
	q := query{
		clusters:   sortedSet(f.Clusters),
		namespaces: sortedSet(f.Namespaces),
		resources:  sortedSet(f.Resources),
		name:       f.NameContains,
		owner:      f.OwnerUID,
		fields:     f.Fields,
		search:     f.Search,
		dims:       len(f.Search.Words()),
	}
	q.clusters, q.nothing = narrowClusters(q.clusters, f.Fields)
	q.compileFields(f.Fields)
	for _, k := range sortedSet(f.Kinds) {
		if strings.Contains(k, ".") {
			q.kinds = append(q.kinds, k)
		} else {
			q.bareKinds = append(q.bareKinds, k)
		}
	}
	if f.Selector != nil && !f.Selector.Empty() {
		reqs, selectable := f.Selector.Requirements()
		q.reqs, q.nothing = reqs, q.nothing || !selectable
		q.dims += len(reqs)
		for i := range reqs {
			switch r := &reqs[i]; r.Operator() {
			case selection.Equals, selection.DoubleEquals, selection.In:
				q.labelDims = append(q.labelDims, labelDim{key: r.Key(), values: sortedSet(r.ValuesUnsorted())})
			case selection.Exists:
				q.labelDims = append(q.labelDims, labelDim{key: r.Key(), exists: true})
			}
		}
	}
	for _, c := range []bool{q.clusters != nil || q.namespaces != nil, q.resources != nil,
		q.kinds != nil || q.bareKinds != nil, q.name != "", q.owner != ""} {
		if c {
			q.dims++
		}
	}
	return q
}

// narrowClusters returns the clusters of a filter (nil: any) intersected
// with those that the field selector's requirements on the path cluster
// (=, in) allow, so that the plan visits only their ranges; and whether
// no cluster is left. The requirements stay in the selector.
func narrowClusters(clusters []string, fields fieldselector.Selector) ([]string, bool) {
	for _, r := range fields.Requirements() {
		if !r.Path().IsCluster() || (r.Operator() != fieldselector.Equals && r.Operator() != fieldselector.In) {
			continue
		}
		allowed := sortedSet(r.Values())
		if clusters != nil {
			allowed = slices.DeleteFunc(allowed, func(c string) bool { return !contains(clusters, c) })
		}
		if len(allowed) == 0 {
			return nil, true
		}
		clusters = allowed
	}
	return clusters, false
}

// labelDim is a label requirement that narrows the candidates: the key
// exists, or has one of the values.
type labelDim struct {
	key    string
	exists bool
	values []string
}

// sortedSet returns the values sorted and without duplicates, nil if none.
func sortedSet(vs []string) []string {
	if len(vs) == 0 {
		return nil
	}
	vs = slices.Clone(vs)
	slices.Sort(vs)
	return slices.Compact(vs)
}

// matches reports whether o satisfies every constraint of the query.
func (q *query) matches(o *object.Object, r *object.BodyReader) bool { return q.matchesBut(o, -1, r) }

// matchesBut is matches without the field requirement q.fieldReqs[skipField],
// which a plan's sources satisfy throughout. r decodes o's body if a
// constraint reads it.
func (q *query) matchesBut(o *object.Object, skipField int, r *object.BodyReader) bool {
	if q.clusters != nil && !contains(q.clusters, o.Cluster) {
		return false
	}
	if q.namespaces != nil && !contains(q.namespaces, o.Namespace) {
		return false
	}
	if q.resources != nil && !contains(q.resources, o.Type.Resource) {
		return false
	}
	if (q.kinds != nil || q.bareKinds != nil) && !q.kindMatches(o.Type) {
		return false
	}
	if q.name != "" && !strings.Contains(o.Name, q.name) {
		return false
	}
	if q.owner != "" && !o.HasOwner(q.owner) {
		return false
	}
	for i := range q.reqs {
		// A *Labels fits in the interface without allocating.
		if !q.reqs[i].Matches(&o.Labels) {
			return false
		}
	}
	if !q.search.Empty() && !searchMatches(q.search, o, r) {
		return false
	}
	for i := range q.fieldReqs {
		if i != skipField && !q.fieldReqs[i].MatchesIn(r.DocFor(q.fieldReqs[i].Path(), o)) {
			return false
		}
	}
	return true
}

func (q *query) kindMatches(t *object.Type) bool {
	if contains(q.bareKinds, t.Kind) {
		return true
	}
	for _, k := range q.kinds {
		if t.KindNameIs(k) {
			return true
		}
	}
	return false
}

// contains reports whether the sorted set vs holds v.
func contains(vs []string, v string) bool {
	if len(vs) <= 8 {
		return slices.Contains(vs, v)
	}
	_, ok := slices.BinarySearch(vs, v)
	return ok
}

// plan says which objects a read visits: the objects of the sources (ORed
// postings, disjoint as one object has one kind, one value per label key,
// one Position) that lie in the ranges. Every object matching the query is
// among them.
type plan struct {
	sources []*index.Posting
	// ranges, when not nil, restrict the visit to slices of the Position
	// order: objects of one cluster, or of one namespace of one cluster.
	ranges []object.Range
	// size estimates how many objects the plan visits; sizeExact says it
	// is the exact number.
	size      int
	sizeExact bool
	// exact means every visited object matches: the query has no
	// constraint beyond those the plan applies.
	exact bool
	// overlap means an object can be in several sources (the tokens a
	// search word begins): reads skip the repeats.
	overlap bool
	// none means no object can match.
	none bool
	// fieldDone is 1 + the index in query.fieldReqs of the field
	// requirement that every object of the sources satisfies (read from an
	// index on its path), 0 for none: matching skips it.
	fieldDone int
}

// seekCost is what the planner charges for one seek into an ordered set,
// in units of visited objects.
const seekCost = 4

// planFor picks the cheapest way to visit a superset of the objects
// matching q. Candidates: the scope (the clusters and namespaces, which are
// ranges of the primary order), and each narrowing constraint's postings
// (kinds, resources, owner, label requirements =, ==, in and exists; other
// operators cannot narrow). A posting is also restricted to the scope's
// ranges when that is cheaper: every posting is in Position order, so the
// scope's objects are adjacent in it too. With no constraint that narrows,
// the plan visits the whole primary order.
func (ix snapshot) planFor(q *query) plan {
	if q.nothing {
		return plan{none: true}
	}
	total := ix.All().Len()
	best := plan{sources: []*index.Posting{ix.All()}, size: total, sizeExact: true, exact: q.dims == 0}
	scoped := q.clusters != nil || q.namespaces != nil
	if scoped {
		best.ranges, best.size = ix.scope(q)
		if best.size == 0 {
			return plan{none: true}
		}
		best.exact = q.dims == 1
	}

	scope := best
	overlap := false // whether the next postings considered may overlap
	answered := 1    // how many constraints the next postings satisfy throughout
	fieldDone := 0   // the field requirement they satisfy (plan.fieldDone)
	consider := func(ps []*index.Posting) bool {
		size := 0
		for _, p := range ps {
			size += p.Len()
		}
		if size == 0 {
			return false
		}
		c := plan{sources: ps, size: size, sizeExact: !overlap, exact: q.dims == answered, overlap: overlap, fieldDone: fieldDone}
		if scoped {
			// Visit only the part of the postings inside the scope. Assume
			// the constraint and the scope are independent to estimate its
			// size; it is at most the smaller of the two in any case.
			est := size*scope.size/max(total, 1) + seekCost*len(scope.ranges)*len(ps)
			if est < size {
				c = plan{sources: ps, ranges: scope.ranges, size: est, exact: q.dims == answered+1, overlap: overlap, fieldDone: fieldDone}
			}
		}
		if c.size < best.size {
			best = c
		}
		return true
	}

	if q.resources != nil {
		var ps []*index.Posting
		for _, r := range q.resources {
			if p := ix.Resource(r); p != nil {
				ps = append(ps, p)
			}
		}
		if !consider(ps) {
			return plan{none: true}
		}
	}
	if q.kinds != nil || q.bareKinds != nil {
		if !consider(ix.kindPostings(q)) {
			return plan{none: true}
		}
	}
	if q.owner != "" {
		p := ix.Owner(q.owner)
		if p == nil {
			return plan{none: true}
		}
		consider([]*index.Posting{p})
	}
	for _, d := range q.labelDims {
		var ps []*index.Posting
		if d.exists {
			if p := ix.LabelKey(d.key); p != nil {
				ps = append(ps, p)
			}
		}
		for _, v := range d.values {
			if p := ix.Label(object.Label{Key: d.key, Value: v}); p != nil {
				ps = append(ps, p)
			}
		}
		if !consider(ps) {
			return plan{none: true}
		}
	}
	for i := range q.fieldDims {
		ps, n, ov, ok := ix.fieldPostings(q, &q.fieldDims[i])
		if !ok {
			continue
		}
		overlap, answered, fieldDone = ov, n, 0
		if q.fieldDims[i].exact {
			fieldDone = q.fieldDims[i].req + 1
		}
		if !consider(ps) {
			return plan{none: true}
		}
		overlap, answered, fieldDone = false, 1, 0
	}
	for _, w := range q.search.Words() {
		ps, ov, ok := ix.searchPostings(w, best.size)
		if !ok {
			return plan{none: true}
		}
		overlap = ov
		if ps != nil {
			consider(ps)
		}
		overlap = false
	}
	return best
}

// kindPostings returns the postings of the kinds q selects.
func (ix snapshot) kindPostings(q *query) []*index.Posting {
	var ps []*index.Posting
	for _, k := range q.kinds {
		if p := ix.Kind(k); p != nil {
			ps = append(ps, p)
		}
	}
	if q.bareKinds != nil {
		// A bare kind selects it in every group. There are few kind names,
		// so look at each.
		ix.EachKind(func(kn string, p *index.Posting) {
			bare, _, _ := strings.Cut(kn, ".")
			if contains(q.bareKinds, bare) && !slices.Contains(ps, p) {
				ps = append(ps, p)
			}
		})
	}
	return ps
}

// scope returns the ranges of the clusters and namespaces q selects,
// in order, and how many objects they hold.
func (ix snapshot) scope(q *query) ([]object.Range, int) {
	clusters := q.clusters
	if clusters == nil {
		clusters = ix.Clusters()
	}
	var ranges []object.Range
	size := 0
	for _, c := range clusters {
		st := ix.Cluster(c)
		if st == nil {
			continue
		}
		if q.namespaces == nil {
			ranges = append(ranges, object.Range{Cluster: c})
			size += st.Objects
			continue
		}
		for _, ns := range q.namespaces {
			if n := st.Namespaces[ns]; n > 0 {
				ranges = append(ranges, object.Range{Cluster: c, Namespace: ns, HasNamespace: true})
				size += n
			}
		}
	}
	return ranges, size
}

// everything is the one range of a plan without ranges.
var everything = []object.Range{{}}

// collect returns, in order, up to need objects of the plan that
// match q and sort after from (nil: from the start).
func (ix snapshot) collect(q *query, p *plan, from *object.Object, need int) []*object.Object {
	ranges := p.ranges
	if ranges == nil {
		ranges = everything
	}
	var out []*object.Object
	visited := 0
	start := new(object.Object) // where a range starts
	var br object.BodyReader
	for _, r := range ranges {
		seek, skip := from, from != nil // skip the object at from, if any
		if p.ranges != nil {
			if from != nil && r.Before(from) {
				continue
			}
			r.Start(start)
			if from == nil || object.CompareObjects(start, from) > 0 {
				seek, skip = start, false
			}
		}
		mark := len(out)
		for _, src := range p.sources {
			found, skipping := 0, skip
			src.Ascend(seek, func(o *object.Object) bool {
				if skipping {
					skipping = false
					if object.CompareObjects(o, from) == 0 {
						return true
					}
				}
				if p.ranges != nil && !r.Contains(o) {
					return false
				}
				visited++
				if !p.exact && !q.matchesBut(o, p.fieldDone-1, &br) {
					return true
				}
				out = append(out, o)
				found++
				return mark+found < need
			})
		}
		if len(p.sources) > 1 {
			// Merge the sources' runs, each in order. Each run holds its
			// first need objects, so the merge, repeats dropped, holds
			// the first need of the union.
			slices.SortFunc(out[mark:], object.CompareObjects)
			if p.overlap {
				out = out[:mark+len(slices.Compact(out[mark:]))]
			}
			if len(out) > need {
				out = out[:need]
			}
		}
		if len(out) >= need {
			break
		}
	}
	ix.AddScanned(visited)
	return out
}

// count counts the objects of the plan that match q.
func (ix snapshot) count(q *query, p *plan) int {
	n := 0
	ix.each(q, p, func(*object.Object) { n++ })
	return n
}

// each calls fn, with the read lock held, for every object of the
// plan that matches q; fn must not call back into the index.
func (ix snapshot) each(q *query, p *plan, fn func(*object.Object)) {
	ranges := p.ranges
	if ranges == nil {
		ranges = everything
	}
	visited := 0
	start := new(object.Object)
	var br object.BodyReader
	for _, r := range ranges {
		var seek *object.Object
		if p.ranges != nil {
			seek = r.Start(start)
		}
		for i, src := range p.sources {
			src.Ascend(seek, func(o *object.Object) bool {
				if p.ranges != nil && !r.Contains(o) {
					return false
				}
				visited++
				if p.overlap && seenBefore(p.sources[:i], o) {
					return true
				}
				if p.exact || q.matchesBut(o, p.fieldDone-1, &br) {
					fn(o)
				}
				return true
			})
		}
	}
	ix.AddScanned(visited)
}

// seenBefore reports whether one of the sources holds o.
func seenBefore(sources []*index.Posting, o *object.Object) bool {
	for _, s := range sources {
		if s.Has(o) {
			return true
		}
	}
	return false
}

// countFromStats answers from the per-cluster counts the queries that
// constrain nothing but clusters, namespaces or resources, and not both
// namespaces and resources.
func (ix snapshot) countFromStats(q *query) (int, bool) {
	if q.nothing || q.reqs != nil || q.kinds != nil || q.bareKinds != nil || q.name != "" || q.owner != "" || !q.fields.Empty() ||
		!q.search.Empty() || (q.namespaces != nil && q.resources != nil) {
		return 0, false
	}
	clusters := q.clusters
	if clusters == nil {
		if q.namespaces == nil && q.resources == nil {
			return ix.All().Len(), true
		}
		clusters = ix.Clusters()
	}
	n := 0
	for _, c := range clusters {
		st := ix.Cluster(c)
		if st == nil {
			continue
		}
		switch {
		case q.namespaces != nil:
			for _, ns := range q.namespaces {
				n += st.Namespaces[ns]
			}
		case q.resources != nil:
			for _, r := range q.resources {
				n += st.Resources[r]
			}
		default:
			n += st.Objects
		}
	}
	return n, true
}
