package index

import (
	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
	"github.com/fleetcache/fleetcache/pkg/index/object"

	"k8s.io/apimachinery/pkg/types"
)

// Reader is the index as its planner reads it (package planner): the
// postings of the primary order and of the secondary indexes, the
// per-cluster counts, the ordered indexes and the revision, all at one
// revision. Index.Read hands one out with the read lock held; it is valid
// only during that call, and nothing it returns may be modified.
//
// This is the whole boundary between the storage and the planner: the
// primary order is walked with Ascend, a posting is a set of object ids
// (package postings) that Object turns into objects, and nothing else of
// the index is visible.
type Reader struct{ ix *Index }

// Read calls fn with a Reader of the index, holding the read lock: the
// index does not change while fn runs. fn must not call back into the
// index; goroutines it starts must end before it returns.
func (ix *Index) Read(fn func(r Reader)) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	fn(Reader{ix})
}

// Revision returns the revision of the last applied change: the revision
// of what the Reader sees.
func (r Reader) Revision() uint64 { return r.ix.feed.Revision() }

// Len returns how many objects the index holds.
func (r Reader) Len() int { return r.ix.all.Len() }

// Ascend calls fn with every object at or after from (nil: from the
// first) and its id, in Position order, the primary order, until fn
// returns false.
func (r Reader) Ascend(from *object.Object, fn func(o *object.Object, id uint32) bool) {
	it := func(e entry) bool { return fn(e.o, e.id) }
	if from == nil {
		r.ix.all.Ascend(it)
	} else {
		r.ix.all.AscendGreaterOrEqual(entry{o: from}, it)
	}
}

// Object returns the object of an id that a posting holds.
func (r Reader) Object(id uint32) *object.Object { return r.ix.ids.object(id) }

// Ranks returns the rank of every id, to be read, not modified: a
// number that grows with the Position order of the id's object, so that
// objects compare as their ranks do.
func (r Reader) Ranks() []uint64 { return r.ix.ranks.r }

// RankBlock returns bounds of the ranks of the ids of id's block (every
// such id's rank r has lo <= r <= hi), and the first id of the next
// block: a read that wants ranks outside them skips to it.
func (r Reader) RankBlock(id uint32) (lo, hi uint64, next uint32) {
	b := id >> rankBlockBits
	return r.ix.ranks.lo[b], r.ix.ranks.hi[b], (b + 1) << rankBlockBits
}

// RankRegion is RankBlock for the region of id, 1<<16 ids (64 blocks);
// next is 0 after the last region of the id space.
func (r Reader) RankRegion(id uint32) (lo, hi uint64, next uint32) {
	g := id >> rankRegionBits
	return r.ix.ranks.rlo[g], r.ix.ranks.rhi[g], (g + 1) << rankRegionBits
}

// RankSpread returns about what share of the ranks in use the bounds of
// a block (RankBlock), and of a region (RankRegion), span: how much of
// the id space a read that wants a few ranks can skip.
func (r Reader) RankSpread() (block, region float64) { return r.ix.ranks.spread() }

// RankAfter returns the least rank of the objects that sort after from,
// and false when none does.
func (r Reader) RankAfter(from *object.Object) (uint64, bool) {
	var rank uint64
	found := false
	r.ix.all.AscendGreaterOrEqual(entry{o: from}, func(e entry) bool {
		if object.CompareObjects(e.o, from) == 0 {
			return true // the object at from is not after it
		}
		rank, found = r.ix.ranks.of(e.id), true
		return false
	})
	return rank, found
}

// ClusterIDs returns the posting of a cluster's objects, nil if it has
// none.
func (r Reader) ClusterIDs(cluster string) *Posting { return r.ix.clusterIDs[cluster] }

// ClusterValues returns the clusters that have objects, each with the
// posting of its objects.
func (r Reader) ClusterValues() Values { return Values{r.ix.clusterIDs} }

// NamespaceValues returns the namespace names that objects have ("":
// cluster-scoped), each with the posting of those objects, across
// clusters.
func (r Reader) NamespaceValues() Values { return Values{r.ix.namespaceIDs} }

// NamespaceIDs returns the posting of the objects in namespaces of this
// name, in every cluster ("": cluster-scoped objects), nil if there are
// none.
func (r Reader) NamespaceIDs(namespace string) *Posting { return r.ix.namespaceIDs[namespace] }

// Resource returns the posting of the objects of a resource ("pods"), nil
// if there are none.
func (r Reader) Resource(resource string) *Posting { return r.ix.resources[resource] }

// Kind returns the posting of the objects of a kind name
// ("Deployment.apps", object.Type.KindName), nil if there are none.
func (r Reader) Kind(kindName string) *Posting { return r.ix.kinds[kindName] }

// KindValues returns the kind names that have objects, each with the
// posting of its objects.
func (r Reader) KindValues() Values { return Values{r.ix.kinds} }

// Owner returns the posting of the objects with an owner reference of
// this UID, nil if there are none.
func (r Reader) Owner(uid types.UID) *Posting { return r.ix.owners[uid] }

// Label returns the posting of the objects with the label l, nil if there
// are none.
func (r Reader) Label(l object.Label) *Posting { return r.ix.labels[l.Key][l.Value] }

// LabelKey returns the posting of the objects with a label of this key,
// nil if there are none.
func (r Reader) LabelKey(key string) *Posting { return r.ix.labelKeys[key] }

// LabelValues returns the values objects have for the label key, each
// with the posting of those objects.
func (r Reader) LabelValues(key string) Values { return Values{r.ix.labels[key]} }

// EachToken calls fn, in token order, with the posting of every search
// token (see tokens.go) that begins with prefix, until fn returns false.
func (r Reader) EachToken(prefix string, fn func(p *Posting) bool) {
	r.ix.tokens.Prefix(prefix, func(_ string, p *Posting) bool { return fn(p) })
}

// Clusters returns the names of the clusters that have objects, sorted.
func (r Reader) Clusters() []string { return r.ix.clusterNames }

// Cluster returns the counts of a cluster's objects, nil if it has none.
func (r Reader) Cluster(name string) *ClusterCounts { return r.ix.clusters[name] }

// EachType calls fn with every object.Type that objects point at.
func (r Reader) EachType(fn func(t *object.Type)) {
	for t := range r.ix.types {
		fn(t)
	}
}

// IndexedKinds returns, for a resource that has objects, how many of them
// have each kind name; nil for a resource without objects.
func (r Reader) IndexedKinds(resource string) map[string]int { return r.ix.fields.kinds[resource] }

// EachResourceKinds calls fn with every resource that has objects and
// IndexedKinds of it, until fn returns false.
func (r Reader) EachResourceKinds(fn func(resource string, kinds map[string]int) bool) {
	for res, kinds := range r.ix.fields.kinds {
		if !fn(res, kinds) {
			return
		}
	}
}

// FieldIndex returns the secondary index of resource on the path text
// (Options.Indexes), nil if it has none.
func (r Reader) FieldIndex(resource, path string) *FieldIndex {
	return r.ix.fields.lookup(resource, path)
}

// Ordered returns the ordered index of objects by the value at path: the
// one of metadata.creationTimestamp, which every object is in, or nil for
// another path (see FieldIndex.Ordered for those).
func (r Reader) Ordered(path fieldpath.Path) OrderedIndex {
	if path.String() == creationTimestamp.String() {
		return r.ix.created
	}
	return nil
}

// AddScanned counts n objects that a read visited (see Index.Scanned).
func (r Reader) AddScanned(n int) { r.ix.scanned.Add(int64(n)) }

// Scanned returns how many objects the reads of the index visited (read
// to match or to return them; ids and ranks read from postings are not
// objects) since it was made: tests check with it that narrow filters do
// not scan the index.
func (ix *Index) Scanned() int64 { return ix.scanned.Load() }
