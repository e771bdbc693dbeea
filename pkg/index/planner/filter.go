package planner

import (
	"cmp"
	"math"
	"slices"
	"strings"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/postings"

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
	// OwnerUIDs selects objects that have an owner reference with one of
	// these UIDs (a union of owner postings); empty: no constraint. With
	// OwnerUID, both hold.
	OwnerUIDs []types.UID
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
	page, _ := listCounted(ix, fs, after, limit, false)
	return page
}

// ListCountUnion is ListUnion and CountUnion in one snapshot, as a page
// with its total count is read: each filter is planned once, and where
// the page comes from the intersection of the filter's postings, the
// count is that intersection's size.
func ListCountUnion(ix *index.Index, fs []Filter, after *object.Position, limit int) (Page, int) {
	return listCounted(ix, fs, after, limit, true)
}

func listCounted(ix *index.Index, fs []Filter, after *object.Position, limit int, counted bool) (Page, int) {
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
	n := 0
	ix.Read(func(r index.Reader) { page, n = snapshot{r}.listUnion(qs, from, need, counted) })
	if limit > 0 && len(page.Objects) > limit {
		page.Objects, page.More = page.Objects[:limit:limit], true
	}
	return page, n
}

// listUnion returns the first need objects matching one of qs after from,
// and, if counted, how many match in all.
func (ix snapshot) listUnion(qs []query, from *object.Object, need int, counted bool) (Page, int) {
	page := Page{Revision: ix.Revision()}
	n := 0
	for i := range qs {
		p := ix.planFor(&qs[i])
		if p.none {
			continue
		}
		objs, ids := ix.collect(&qs[i], &p, from, need)
		if counted {
			n += ix.countPlanned(&qs[i], &p, ids)
		}
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
	return page, n
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
	return ix.countPlanned(q, &p, nil)
}

// countPlanned counts the objects of the plan p of q; ids, when not nil,
// are the plan's candidates, intersected already.
func (ix snapshot) countPlanned(q *query, p *plan, ids *roaring.Bitmap) int {
	switch {
	case p.none:
		return 0
	case ids != nil && p.exact:
		return int(ids.GetCardinality())
	case !p.narrowed() && p.exact:
		return p.scope
	}
	return ix.count(q, p)
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
	reqs    labels.Requirements
	nothing bool // the selector selects nothing
	name    string
	owner   types.UID
	owners  []types.UID // sorted, no duplicates
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
		owners:     sortedUIDs(f.OwnerUIDs),
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
	}
	for _, c := range []bool{q.clusters != nil || q.namespaces != nil, q.resources != nil,
		q.kinds != nil || q.bareKinds != nil, q.name != "", q.owner != "", q.owners != nil} {
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

// sortedSet returns the values sorted and without duplicates, nil if none.
func sortedSet(vs []string) []string {
	if len(vs) == 0 {
		return nil
	}
	vs = slices.Clone(vs)
	slices.Sort(vs)
	return slices.Compact(vs)
}

// sortedUIDs returns the UIDs sorted and without duplicates, nil if none.
func sortedUIDs(uids []types.UID) []types.UID {
	if len(uids) == 0 {
		return nil
	}
	uids = slices.Clone(uids)
	slices.Sort(uids)
	return slices.Compact(uids)
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
	if q.owners != nil && !slices.ContainsFunc(q.owners, o.HasOwner) {
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

// plan is how a read finds the objects matching a query: the postings
// that narrow it (dims, each the union of its postings, intersected), the
// scope's ranges of the primary order, and whether a candidate still needs
// testing against the query.
type plan struct {
	// none means no object can match.
	none bool
	// ranges, when not nil, are the scope's slices of the primary order:
	// objects of one cluster, or of one namespace of one cluster; scope
	// is how many objects they hold (the index's size when nil).
	ranges []object.Range
	scope  int
	// include are the postings every matching object is in, smallest
	// first; exclude those no matching object is in. A scope dim (the
	// clusters' or namespaces' postings) is among include: reads that
	// walk the ranges skip it.
	include []dim
	exclude []dim
	// exact means every object that the dims and the scope admit
	// matches: the query has no constraint beyond them.
	exact bool
	// fieldDone is 1 + the index in query.fieldReqs of a field
	// requirement that the dims answer (read from an index on its path),
	// 0 for none: matching skips it.
	fieldDone int
	// total is how many objects the index holds.
	total int
}

// dim is one narrowing constraint: the objects in any of its postings.
type dim struct {
	sets []*index.Posting
	// size is the sum of the postings' sizes: the union's, unless
	// overlap says an object can be in several (the tokens a search word
	// begins, the values at a path that crosses an array).
	size    int
	overlap bool
	scope   bool
}

// has reports whether one of d's postings holds id.
func (d *dim) has(id uint32) bool {
	for _, s := range d.sets {
		if s.Has(id) {
			return true
		}
	}
	return false
}

// bitmap returns the union of d's postings, not to be modified: a
// posting's own bitmap when it is the only one.
func (d *dim) bitmap() *roaring.Bitmap {
	if len(d.sets) == 1 {
		return d.sets[0].Bitmap()
	}
	return postings.Union(d.sets)
}

// narrowed reports whether a posting narrows the plan: otherwise its
// candidates are every object of its scope.
func (p *plan) narrowed() bool { return len(p.include) > 0 }

// estimate is how many objects the plan's candidates are expected to be,
// taking the dims as independent, and the smallest dim's size at most.
func (p *plan) estimate() int {
	if !p.narrowed() {
		return p.scope
	}
	est := float64(p.scope)
	for i := range p.include {
		if !p.include[i].scope {
			est *= float64(p.include[i].size) / float64(max(p.total, 1))
		}
	}
	return min(int(math.Ceil(est)), p.include[0].size)
}

// admits reports whether o, of id id, found by a walk of the plan's
// ranges, matches q: its id is in every dim but the scope's and in no
// excluded one, and it satisfies what the dims do not answer.
func (p *plan) admits(q *query, o *object.Object, id uint32, br *object.BodyReader) bool {
	for i := range p.include {
		if !p.include[i].scope && !p.include[i].has(id) {
			return false
		}
	}
	for i := range p.exclude {
		if p.exclude[i].has(id) {
			return false
		}
	}
	return p.exact || q.matchesBut(o, p.fieldDone-1, br)
}

// candidates returns the intersection of the plan's dims, less its
// excluded ones: every object that can match, and with an exact plan
// those that do. It is to be read, not modified: it may be a posting's
// own. The plan must be narrowed.
func (p *plan) candidates() *roaring.Bitmap {
	var acc *roaring.Bitmap
	switch {
	case len(p.include) > 1:
		// A new bitmap of what the first two hold in common: a copy of
		// the first would be all of it, and garbage the collector scans.
		acc = roaring.And(p.include[0].bitmap(), p.include[1].bitmap())
	case len(p.include[0].sets) == 1 && len(p.exclude) == 0:
		// The posting's own, read under the index's read lock: a copy
		// cost a page of one posting half its time.
		return p.include[0].bitmap()
	case len(p.include[0].sets) == 1:
		acc = p.include[0].bitmap().Clone() // the posting's own
	default:
		acc = p.include[0].bitmap() // a union of its own
	}
	for i := 2; i < len(p.include) && !acc.IsEmpty(); i++ {
		acc.And(p.include[i].bitmap())
	}
	for i := range p.exclude {
		if acc.IsEmpty() {
			break
		}
		acc.AndNot(p.exclude[i].bitmap())
	}
	return acc
}

// planFor finds the postings that narrow q: the scope (the clusters' and
// namespaces' postings, and the ranges of the primary order they cover),
// the resources, kinds and owner, the label requirements (=, ==, in and
// exists; !=, notin and !key exclude), the field requirements that an
// index on their path covers, and the search words. A constraint that no
// posting answers (a name, a label's gt or lt, a field requirement on an
// unindexed path) is tested on each candidate.
func (ix snapshot) planFor(q *query) plan {
	if q.nothing {
		return plan{none: true}
	}
	p := plan{total: ix.Len(), scope: ix.Len()}
	answered := 0
	include := func(sets []*index.Posting, overlap bool) bool {
		d := dim{overlap: overlap}
		for _, s := range sets {
			if s != nil && s.Len() > 0 {
				d.sets = append(d.sets, s)
				d.size += s.Len()
			}
		}
		if d.size == 0 {
			return false
		}
		p.include = append(p.include, d)
		answered++
		return true
	}
	if q.clusters != nil || q.namespaces != nil {
		p.ranges, p.scope = ix.scope(q)
		if p.scope == 0 {
			return plan{none: true}
		}
		answered++
	}
	if q.resources != nil {
		var sets []*index.Posting
		for _, r := range q.resources {
			sets = append(sets, ix.Resource(r))
		}
		if !include(sets, false) {
			return plan{none: true}
		}
	}
	if (q.kinds != nil || q.bareKinds != nil) && !include(ix.kindPostings(q), false) {
		return plan{none: true}
	}
	if q.owner != "" && !include([]*index.Posting{ix.Owner(q.owner)}, false) {
		return plan{none: true}
	}
	if q.owners != nil {
		sets := make([]*index.Posting, len(q.owners))
		for i, uid := range q.owners {
			sets[i] = ix.Owner(uid)
		}
		// An object may name two of them: the postings overlap.
		if !include(sets, true) {
			return plan{none: true}
		}
	}
	var excludes [][]*index.Posting
	for i := range q.reqs {
		r := &q.reqs[i]
		switch r.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
			var sets []*index.Posting
			for _, v := range sortedSet(r.ValuesUnsorted()) {
				sets = append(sets, ix.Label(object.Label{Key: r.Key(), Value: v}))
			}
			if !include(sets, false) {
				return plan{none: true}
			}
		case selection.Exists:
			if !include([]*index.Posting{ix.LabelKey(r.Key())}, false) {
				return plan{none: true}
			}
		case selection.NotEquals, selection.NotIn:
			var sets []*index.Posting
			for _, v := range sortedSet(r.ValuesUnsorted()) {
				if s := ix.Label(object.Label{Key: r.Key(), Value: v}); s != nil {
					sets = append(sets, s)
				}
			}
			excludes = append(excludes, sets)
		case selection.DoesNotExist:
			var sets []*index.Posting
			if s := ix.LabelKey(r.Key()); s != nil {
				sets = append(sets, s)
			}
			excludes = append(excludes, sets)
		}
	}
	for i := range q.fieldDims {
		d := &q.fieldDims[i]
		sets, ok := ix.fieldPostings(q, d)
		if !ok {
			continue
		}
		if !include(sets, d.crosses && len(d.keys) > 1) {
			return plan{none: true}
		}
		if !d.exact {
			answered-- // the postings narrow; each candidate is still tested
		} else if p.fieldDone == 0 {
			p.fieldDone = d.req + 1
		} else {
			answered-- // matching skips one requirement at most
		}
	}
	for _, w := range q.search.Words() {
		sets, ok := ix.searchPostings(w, p.total/2)
		if !ok {
			return plan{none: true}
		}
		if sets != nil {
			include(sets, len(sets) > 1)
		}
	}
	if p.narrowed() {
		// The scope joins the intersection (a walk has the ranges).
		p.include = append(p.include, ix.scopeDims(q)...)
		// Exclusions narrow an intersection; alone, they would leave most
		// of the index to walk, as testing does.
		for _, sets := range excludes {
			if len(sets) > 0 {
				p.exclude = append(p.exclude, dim{sets: sets})
			}
			answered++
		}
	}
	slices.SortStableFunc(p.include, func(a, b dim) int { return cmp.Compare(a.size, b.size) })
	p.exact = answered == q.dims
	return p
}

// scopeDims returns the dims of q's scope: the postings of its clusters
// and of its namespaces, none when q has no scope.
func (ix snapshot) scopeDims(q *query) []dim {
	var out []dim
	add := func(sets []*index.Posting) {
		d := dim{scope: true}
		for _, s := range sets {
			if s != nil {
				d.sets = append(d.sets, s)
				d.size += s.Len()
			}
		}
		out = append(out, d)
	}
	if q.clusters != nil {
		var sets []*index.Posting
		for _, c := range q.clusters {
			sets = append(sets, ix.ClusterIDs(c))
		}
		add(sets)
	}
	if q.namespaces != nil {
		var sets []*index.Posting
		for _, ns := range q.namespaces {
			sets = append(sets, ix.NamespaceIDs(ns))
		}
		add(sets)
	}
	return out
}

// matching returns the ids of the objects matching q, when the postings
// answer every constraint of q; ok is false otherwise, and all is true
// (with no ids) when q constrains nothing. Facets count postings against
// them.
func (ix snapshot) matching(q *query) (ids *roaring.Bitmap, all, ok bool) {
	p := ix.planFor(q)
	switch {
	case p.none:
		return roaring.New(), false, true
	case !p.exact:
		return nil, false, false
	case !p.narrowed() && p.ranges == nil:
		return nil, true, true
	case !p.narrowed():
		p.include = ix.scopeDims(q)
		slices.SortStableFunc(p.include, func(a, b dim) int { return cmp.Compare(a.size, b.size) })
	}
	return p.candidates(), false, true
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
		ix.KindValues().Each(func(kn string, p *index.Posting) {
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

// Costs of the two ways to read a page, in nanoseconds, as measured on
// realistic Pods (BenchmarkIndexScale): a step of a walk of the primary
// order, the object's id tested against the dims' postings; a seek into
// the primary order; an id of the smallest dim intersected with the
// others; a candidate of the intersection, its rank read and compared
// with the cursor's and the best kept.
const (
	walkCost      = 40
	seekCost      = 150
	intersectCost = 1
	materialCost  = 7
	blockCost     = 50
)

// collect returns, in order, up to need objects of the plan that match q
// and sort after from (nil: from the start). It walks the primary order
// from from, through the plan's ranges, testing each object against the
// dims, when that is expected to reach need matches soon; otherwise it
// intersects the dims and keeps the first need of the candidates. A walk
// that visits far more objects than expected (the dims are not
// independent) gives up for the intersection, which it returns too (nil
// when it walked).
func (ix snapshot) collect(q *query, p *plan, from *object.Object, need int) ([]*object.Object, *roaring.Bitmap) {
	if !p.narrowed() {
		out, _ := ix.walk(q, p, from, need, math.MaxInt)
		return out, nil
	}
	// A walk visits about need objects per share of its scope that
	// matches.
	visits, est := p.scope, p.estimate()
	if est > 0 && need < p.scope {
		visits = min(visits, int(float64(need)*float64(p.scope)/float64(est)))
	}
	if walkCost*visits+seekCost*len(p.ranges) < ix.firstOfCost(p, need, est) {
		if out, ok := ix.walk(q, p, from, need, 4*visits+1024); ok {
			return out, nil
		}
	}
	ids := p.candidates()
	return ix.firstOf(q, p, ids, from, need), ids
}

// firstOfCost is about what firstOf costs, in nanoseconds: intersecting
// the dims, then ranking the candidates of the blocks of ids it does not
// skip. Where ids were handed out in Position order, a block spans a
// small share of the order and firstOf ranks little more than need
// candidates; where each block spans all of it, every candidate.
func (ix snapshot) firstOfCost(p *plan, need, est int) int {
	block, region := ix.RankSpread()
	ranked := float64(min(need, est)) + float64(est)*block
	blocks := float64(ix.Len()>>10)*region + float64(ix.Len()>>16)
	return intersectCost*p.include[0].size + int(materialCost*ranked+blockCost*blocks)
}

// walk returns, in order, up to need objects of the plan that match q
// after from, walking the primary order through the plan's ranges. It
// gives up, false, after visiting budget objects.
func (ix snapshot) walk(q *query, p *plan, from *object.Object, need, budget int) ([]*object.Object, bool) {
	ranges := p.ranges
	if ranges == nil {
		ranges = everything
	}
	var out []*object.Object
	visited := 0
	start := new(object.Object) // where a range starts
	var br object.BodyReader
	ok := true
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
		ix.Ascend(seek, func(o *object.Object, id uint32) bool {
			if skip {
				skip = false
				if object.CompareObjects(o, from) == 0 {
					return true
				}
			}
			if p.ranges != nil && !r.Contains(o) {
				return false
			}
			if visited++; visited > budget {
				ok = false
				return false
			}
			if p.admits(q, o, id, &br) {
				out = append(out, o)
			}
			return len(out) < need
		})
		if len(out) >= need || !ok {
			break
		}
	}
	ix.AddScanned(visited)
	return out, ok
}

// firstOf returns, in order, the first need objects of ids that match q
// and sort after from. It orders the ids by their ranks (index.Reader.Ranks,
// which grow with the Position order), reading an object only to
// match it against what the dims do not answer and to return it.
func (ix snapshot) firstOf(q *query, p *plan, ids *roaring.Bitmap, from *object.Object, need int) []*object.Object {
	// The first page of one posting that answers the whole query may
	// have been read before (index.Reader.FirstByRank).
	var posting *index.Posting
	if from == nil && p.exact && len(p.include) == 1 && len(p.include[0].sets) == 1 && len(p.exclude) == 0 {
		posting = p.include[0].sets[0]
		if first, ok := ix.FirstByRank(posting, need); ok {
			ix.AddScanned(len(first))
			return ix.objects(first)
		}
	}
	least := uint64(0)
	if from != nil {
		r, ok := ix.RankAfter(from)
		if !ok {
			return nil
		}
		least = r
	}
	h := &rankHeap{items: make([]ranked, 0, min(need, 256))}
	var br object.BodyReader
	read := 0 // objects read: ids and ranks are not
	ranks := ix.Ranks()
	// A region or block of ids whose ranks all lie before the cursor, or
	// after the worst kept once the heap is full, is skipped whole.
	skip := func(lo, hi uint64) bool {
		return hi < least || (len(h.items) == need && lo >= h.items[0].rank)
	}
	it := ids.Iterator()
	for it.HasNext() {
		if lo, hi, next := ix.RankRegion(it.PeekNext()); skip(lo, hi) {
			if next == 0 {
				break // the last region of the id space
			}
			it.AdvanceIfNeeded(next)
			continue
		}
		lo, hi, next := ix.RankBlock(it.PeekNext())
		if skip(lo, hi) {
			if next == 0 {
				break
			}
			it.AdvanceIfNeeded(next)
			continue
		}
		for it.HasNext() && (next == 0 || it.PeekNext() < next) {
			id := it.Next()
			r := ranks[id]
			if r < least || (len(h.items) == need && r >= h.items[0].rank) {
				continue
			}
			if !p.exact {
				if read++; !q.matchesBut(ix.Object(id), p.fieldDone-1, &br) {
					continue
				}
			}
			if len(h.items) < need {
				h.push(ranked{rank: r, id: id})
			} else {
				h.replaceTop(ranked{rank: r, id: id})
			}
		}
	}
	if p.exact {
		read = len(h.items)
	}
	ix.AddScanned(read)
	h.sort()
	first := make([]uint32, len(h.items))
	for i, x := range h.items {
		first[i] = x.id
	}
	if posting != nil {
		ix.KeepFirstByRank(posting, need, first)
	}
	return ix.objects(first)
}

// objects returns the objects of ids.
func (ix snapshot) objects(ids []uint32) []*object.Object {
	out := make([]*object.Object, len(ids))
	for i, id := range ids {
		out[i] = ix.Object(id)
	}
	return out
}

// ranked is an id with its rank.
type ranked struct {
	rank uint64
	id   uint32
}

// rankHeap keeps ids with the greatest rank on top. It is typed, not a
// container/heap: a page ranks thousands of ids, and heap.Push boxed each
// one it kept.
type rankHeap struct{ items []ranked }

// push adds x.
func (h *rankHeap) push(x ranked) {
	h.items = append(h.items, x)
	for i := len(h.items) - 1; i > 0; {
		up := (i - 1) / 2
		if h.items[up].rank >= h.items[i].rank {
			break
		}
		h.items[up], h.items[i] = h.items[i], h.items[up]
		i = up
	}
}

// replaceTop puts x in place of the id with the greatest rank.
func (h *rankHeap) replaceTop(x ranked) {
	h.items[0] = x
	h.down(len(h.items))
}

// sort orders the items by rank, least first, in place (a heapsort: the
// items are a heap already, and a generic sort's comparisons were a
// fifth of a sparse page's time).
func (h *rankHeap) sort() {
	for n := len(h.items) - 1; n > 0; n-- {
		h.items[0], h.items[n] = h.items[n], h.items[0]
		h.down(n)
	}
}

// down moves the item at the top of the heap of the first n items down to
// its place.
func (h *rankHeap) down(n int) {
	for i := 0; ; {
		top := i
		if l := 2*i + 1; l < n && h.items[l].rank > h.items[top].rank {
			top = l
		}
		if r := 2*i + 2; r < n && h.items[r].rank > h.items[top].rank {
			top = r
		}
		if top == i {
			return
		}
		h.items[i], h.items[top] = h.items[top], h.items[i]
		i = top
	}
}

// count counts the objects of the plan that match q: an intersection's
// cardinality when the plan is exact.
func (ix snapshot) count(q *query, p *plan) int {
	if p.narrowed() && p.exact {
		switch {
		case len(p.exclude) > 0:
		case len(p.include) == 1 && !p.include[0].overlap:
			return p.include[0].size
		case len(p.include) == 2:
			// Counted in place: nothing is copied.
			return p.include[1].andLen(p.include[0].bitmap())
		case len(p.include) > 2:
			// The largest dim is only counted against, never copied.
			last := len(p.include) - 1
			acc := (&plan{include: p.include[:last]}).candidates()
			return p.include[last].andLen(acc)
		}
		return int(p.candidates().GetCardinality())
	}
	n := 0
	ix.each(q, p, func(*object.Object) { n++ })
	return n
}

// andLen returns how many of the ids of b d's postings hold.
func (d *dim) andLen(b *roaring.Bitmap) int {
	if len(d.sets) == 1 {
		return d.sets[0].AndLen(b)
	}
	return int(d.bitmap().AndCardinality(b))
}

// each calls fn, with the read lock held, for every object of the plan
// that matches q, in no particular order; fn must not call back into the
// index.
func (ix snapshot) each(q *query, p *plan, fn func(*object.Object)) {
	if !p.narrowed() {
		ix.eachIn(q, p, p.ranges, fn)
		return
	}
	var br object.BodyReader
	visited := 0
	p.candidates().Iterate(func(id uint32) bool {
		o := ix.Object(id)
		visited++
		if p.exact || q.matchesBut(o, p.fieldDone-1, &br) {
			fn(o)
		}
		return true
	})
	ix.AddScanned(visited)
}

// eachIn calls fn for every object of ranges (nil: the whole index) that
// matches q, for a plan that is not narrowed.
func (ix snapshot) eachIn(q *query, p *plan, ranges []object.Range, fn func(*object.Object)) {
	walked := ranges != nil
	if ranges == nil {
		ranges = everything
	}
	visited := 0
	start := new(object.Object)
	var br object.BodyReader
	for _, r := range ranges {
		var seek *object.Object
		if walked {
			seek = r.Start(start)
		}
		ix.Ascend(seek, func(o *object.Object, _ uint32) bool {
			if walked && !r.Contains(o) {
				return false
			}
			visited++
			if p.exact || q.matchesBut(o, p.fieldDone-1, &br) {
				fn(o)
			}
			return true
		})
	}
	ix.AddScanned(visited)
}

// countFromStats answers from the per-cluster counts the queries that
// constrain nothing but clusters, namespaces or resources, and not both
// namespaces and resources.
func (ix snapshot) countFromStats(q *query) (int, bool) {
	if q.nothing || q.reqs != nil || q.kinds != nil || q.bareKinds != nil || q.name != "" || q.owner != "" || q.owners != nil || !q.fields.Empty() ||
		!q.search.Empty() || (q.namespaces != nil && q.resources != nil) {
		return 0, false
	}
	clusters := q.clusters
	if clusters == nil {
		if q.namespaces == nil && q.resources == nil {
			return ix.Len(), true
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
