package index

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fleetcache/fleetcache/pkg/index/feed"
	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/search"

	"github.com/google/btree"
	"k8s.io/apimachinery/pkg/types"
)

// defaultRetention is Options.Retention when unset.
const defaultRetention = 100000

// defaultRetentionAge is Options.RetentionAge when unset.
const defaultRetentionAge = 24 * time.Hour

// defaultTombstoneRetention and defaultMaxTombstones are
// Options.TombstoneRetention and MaxTombstones when unset.
const (
	defaultTombstoneRetention = time.Hour
	defaultMaxTombstones      = 100000
)

// minType sorts before every real type: its KindName and Resource are
// empty. Placeholder objects use it to seek to the first object of a
// cluster or of a name (see object.Range.Start).
var minType = &object.Type{}

// Options configure an Index. Each field's comment states its default, used
// when the field is zero; DefaultOptions returns them all.
type Options struct {
	// Retention is how many change events are kept for followers (the
	// changes query, subscriptions resuming from a cursor). Default 100000.
	Retention int
	// RetentionAge is how long change events are kept, at most: older ones
	// are dropped as new ones are recorded. Default 24h; negative: no age
	// limit, Retention alone.
	RetentionAge time.Duration
	// Indexes are the paths that get a secondary index, per resource
	// (kubectl names: "pods", "deployments.apps"): a field selector's =,
	// == and in on them, and facets by them, read postings instead of the
	// objects' bytes. A resource listed here gets exactly its list, which
	// replaces its defaults (an empty list turns them off); other
	// resources keep theirs. The path cluster is never indexed (it has
	// ranges of its own). Default: see defaultIndexes in fieldindex.go
	// (status.phase, spec.nodeName and spec.containers[].image of pods,
	// and others for nodes, workloads, jobs, services and events).
	Indexes map[string][]fieldpath.Path
	// MemoryBudget bounds, in bytes, what the index holds, as it estimates
	// it (BudgetStatus.Used: about 0.7 KB per object plus its stored
	// body). Above three quarters of it, objects are stored without their
	// body (metadata only: identity, labels, owners, creation time);
	// objects whose metadata alone would pass it are refused (not
	// stored). See docs/operations.md, "Memory budget". Default 0: no
	// budget.
	MemoryBudget int64
	// TombstoneRetention is how long the index remembers a deleted
	// object, so that a cursor from before the deletion resumes with it
	// (Since). Default one hour.
	TombstoneRetention time.Duration
	// MaxTombstones bounds how many deleted objects the index remembers
	// for TombstoneRetention, the oldest going first: a cursor from
	// before a dropped one expires. Default 100000.
	MaxTombstones int
}

// DefaultOptions returns the Options with every default filled in: what a
// zero Options means. Configuration and flags that expose a field read its
// default from here.
func DefaultOptions() Options { return Options{}.withDefaults() }

// withDefaults fills in the defaults of unset fields.
func (o Options) withDefaults() Options {
	if o.Retention <= 0 {
		o.Retention = defaultRetention
	}
	if o.RetentionAge == 0 {
		o.RetentionAge = defaultRetentionAge
	}
	if o.MaxTombstones <= 0 {
		o.MaxTombstones = defaultMaxTombstones
	}
	if o.TombstoneRetention <= 0 {
		o.TombstoneRetention = defaultTombstoneRetention
	}
	o.Indexes = withDefaultIndexes(o.Indexes)
	return o
}

// Index is the global cross-cluster index of objects. It keeps every object
// in Position order, maintains secondary indexes for filtering, and records
// each change in a revisioned feed. It is safe for concurrent use.
type Index struct {
	epoch    string
	freelist *btree.FreeListG[*object.Object]

	// lists orders UpsertAll's calls: one list's batches go in one after
	// the other, not in turns with another list's, so that while one list
	// is inserted the others are decoded. Lists that took turns batch by
	// batch each waited for the other's with a core idle (docs/benchmarks.md,
	// "Batches that group their tokens"). It is taken before mu, never
	// after; the other writers (watch events) take mu alone, between
	// batches.
	lists sync.Mutex

	mu sync.RWMutex
	// all holds every object with its id, in Position order: the primary
	// order.
	all *entryTree
	// ids gives every object a dense id, its place in the postings;
	// ranks numbers the ids in Position order; labelSets holds each id's
	// labels as a column.
	ids       ids
	ranks     ranks
	labelSets labelSets
	// types caches, per *object.Type in use, its kind name and its postings.
	types map[*object.Type]*typeEntry
	// kinds and resources are postings by object.Type.KindName() and
	// Type.Resource.
	kinds     map[string]*Posting
	resources map[string]*Posting
	// clusterIDs and namespaceIDs are postings by cluster and by
	// namespace name ("" for cluster-scoped objects), across clusters.
	clusterIDs   map[string]*Posting
	namespaceIDs map[string]*Posting
	// labels holds a posting per label key and value, labelKeys per
	// label key.
	labels    map[string]map[string]*Posting
	labelKeys map[string]*Posting
	// owners holds a posting per owner UID.
	owners map[types.UID]*Posting
	// created orders objects by metadata.creationTimestamp, for sorting.
	created *timeOrder
	// tokens holds a posting per search token (see tokens.go), in token
	// order for prefix lookups; recentTokens, those of the tokens met
	// lately, by token (indexTokensLocked).
	tokens       *search.Tree[*Posting]
	recentTokens map[string]*Posting
	// firstPages keeps the first page of postings read lately
	// (firstpages.go). It has a lock of its own: readers write it.
	firstPages *firstPages
	// fields are the secondary indexes on configured paths (fieldindex.go).
	fields fieldIndexes
	// selectors index the label selectors objects hold (selectors.go).
	selectors selectorIndex
	// clusters counts objects by cluster, namespace and resource;
	// clusterNames lists the clusters in order.
	clusters     map[string]*ClusterCounts
	clusterNames []string
	// feed is the change feed; changes are recorded with mu held for
	// writing, so a reader holding mu sees the objects and their revision
	// together.
	feed *feed.Feed[*object.Object]
	// streams are the clusters' resource types with their clocks and
	// tombs (clocks.go); tombs holds the stream of each tomb from
	// tombHead on, oldest first.
	streams  map[Stream]*stream
	tombs    []*stream
	tombHead int
	opts     Options
	// scratch is a placeholder object for seeking while mu is held for
	// writing.
	scratch object.Object
	// bodies decodes the bodies that writes read, with mu held for
	// writing.
	bodies object.BodyReader
	// budget is the accounting of Options.MemoryBudget; budgetBytes is
	// the budget, which never changes.
	budget      budgetLocked
	budgetBytes int64

	// scanned counts the candidates reads visited; tests check with it that
	// narrow filters do not scan the index.
	scanned atomic.Int64
}

// typeEntry is what the index keeps per *object.Type in use.
type typeEntry struct {
	kindName string
	kind     *Posting
	resource *Posting
	objects  int
	// fieldsProjected: the type's objects keep the values of the
	// resource's field indexes beside their bodies, in the same order
	// (object.Type.Projected, as the informers set it), so that indexing
	// an object reads them one after the other.
	fieldsProjected bool
}

// ClusterCounts counts one cluster's objects, by resource and by
// namespace ("" for cluster-scoped objects). A Reader hands them out to
// be read, not modified.
type ClusterCounts struct {
	Objects    int
	Resources  map[string]int
	Namespaces map[string]int
}

// New returns an empty Index.
func New(opts Options) *Index {
	opts = opts.withDefaults()
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never returns an error.
	ix := &Index{
		epoch:       hex.EncodeToString(b[:]),
		freelist:    btree.NewFreeListG[*object.Object](freeListSize),
		feed:        feed.NewWithMaxAge[*object.Object](opts.Retention, opts.RetentionAge),
		opts:        opts,
		budgetBytes: opts.MemoryBudget,
		firstPages:  newFirstPages(),
	}
	ix.emptyLocked()
	return ix
}

// emptyLocked gives ix empty structures: what New starts with, and what a
// failed restore leaves (Restoring.Abort). The feed, which a restore does
// not write, is kept.
func (ix *Index) emptyLocked() {
	ix.all = newEntryTree()
	ix.ids, ix.ranks, ix.labelSets = ids{}, ranks{}, newLabelSets()
	ix.types = map[*object.Type]*typeEntry{}
	ix.kinds, ix.resources = map[string]*Posting{}, map[string]*Posting{}
	ix.clusterIDs, ix.namespaceIDs = map[string]*Posting{}, map[string]*Posting{}
	ix.labels, ix.labelKeys = map[string]map[string]*Posting{}, map[string]*Posting{}
	ix.owners = map[types.UID]*Posting{}
	ix.tokens, ix.recentTokens = search.NewTree[*Posting](), map[string]*Posting{}
	ix.created = newTimeOrder(ix.freelist)
	ix.clusters, ix.clusterNames = map[string]*ClusterCounts{}, nil
	ix.streams, ix.tombs, ix.tombHead = map[Stream]*stream{}, nil, 0
	ix.budget = budgetLocked{budget: ix.opts.MemoryBudget}
	ix.fields = newFieldIndexes(ix, ix.opts.Indexes)
	ix.selectors = newSelectorIndex()
}

// Epoch returns the random identifier New gave this index. Cursors and
// revisions are only meaningful for the index of the same epoch.
func (ix *Index) Epoch() string { return ix.epoch }

// Revision returns the revision of the last applied change, 0 when none.
func (ix *Index) Revision() uint64 { return ix.feed.Revision() }

// Events returns the events of the change feed with Revision > after, in
// order, at most limit of them (limit <= 0: all); see feed.Feed.Events.
func (ix *Index) Events(after uint64, limit int) ([]feed.Event[*object.Object], error) {
	return ix.feed.Events(after, limit)
}

// OldestRevision returns the revision of the oldest retained change;
// Revision()+1 when none is retained.
func (ix *Index) OldestRevision() uint64 { return ix.feed.Oldest() }

// RevisionBefore returns the revision of the last change recorded before
// t, as far as the retained changes tell (OldestRevision()-1 when t is
// before them all): the changes at or after t are those after it.
func (ix *Index) RevisionBefore(t time.Time) uint64 { return ix.feed.RevisionBefore(t) }

// Wait returns nil as soon as Revision() > after, or ctx.Err() if ctx ends
// first.
func (ix *Index) Wait(ctx context.Context, after uint64) error { return ix.feed.Wait(ctx, after) }

// emitLocked advances the revision and records the change in the feed.
// A deletion is also remembered as a tomb of its stream (clocks.go).
func (ix *Index) emitLocked(t feed.EventType, o, old *object.Object) {
	if t == feed.Deleted {
		ix.tombLocked(o, time.Now())
	}
	ix.feed.Record(t, o, old)
}

// Upsert adds or modifies o. It is a no-op, returning false, when the index
// already holds an object with the same key, UID and ResourceVersion at the
// same version of its type (a relist re-delivers unchanged objects; a list
// at another served version, after the cached one stopped being served,
// changes the objects' bodies and not their resourceVersions). An object
// with the same key but a different UID was deleted and recreated: the
// index records a Deleted event for the old object and an Added event for
// the new one. Otherwise it records one Added or Modified event.
//
// Under a memory budget (Options.MemoryBudget) Upsert may drop o's body
// before storing it, or refuse a new object, returning false (after
// recording the deletion of an object it replaces): callers must not read
// o's body concurrently with Upsert.
func (ix *Index) Upsert(o *object.Object) bool {
	// The tokens of o's body, most of an insert's work, are read before
	// the lock is taken: on the caller's goroutine, in parallel with other
	// callers' (wasted for an unchanged object, which a relist repeats,
	// but never time under the lock).
	r := bodyReaders.Get().(*object.BodyReader)
	defer bodyReaders.Put(r)
	return ix.UpsertPrepared(Prepared{Object: o, Text: TextTokens(o, r)})
}

// UpsertPrepared is Upsert for an object whose Text was read already:
// package wire reads it from an object's JSON as it decodes it, before
// compressing it, which saves decoding the body again. p.Text must be
// TextTokens(p.Object); the index keeps none of its strings.
func (ix *Index) UpsertPrepared(p Prepared) bool {
	ix.mu.Lock()
	changed := ix.upsertLocked(p, nil, 0)
	ix.mu.Unlock()
	return changed
}

// upsertBatch is how many objects UpsertAll inserts under one hold of
// the lock: a reader waits for one batch at most, under a millisecond of
// a cold list's Pods.
const upsertBatch = 128

// UpsertAll is UpsertPrepared for each of ps in turn (a list's objects),
// taking the lock once for each upsertBatch of them, so that lists do not
// hand the lock to each other an object at a time (docs/benchmarks.md,
// "Cold lists at 100,000 objects/s"); calls that come together go one
// after the other, and readers and single upserts in between batches.
func (ix *Index) UpsertAll(ps []Prepared) {
	ix.lists.Lock()
	defer ix.lists.Unlock()
	b := batches.Get().(*batch)
	defer func() {
		b.release()
		batches.Put(b)
	}()
	for len(ps) > 0 {
		n := min(len(ps), upsertBatch)
		b.stage(ps[:n])
		ix.mu.Lock()
		for i, p := range ps[:n] {
			b.left = len(ps) - i - 1
			ix.upsertLocked(p, b, i)
		}
		b.indexTokensLocked(ix)
		ix.mu.Unlock()
		ps = ps[n:]
		// The other goroutines' turn: while lists are applied, the
		// cores are busy, and a query would wait for one (see
		// wire.Decoder's yieldEvery).
		runtime.Gosched()
	}
}

// upsertLocked is UpsertPrepared with the lock held. With a batch b, p
// being its object at place at, a new object's tokens are left to b, and
// an object that follows the one b inserted last is known to be new
// without a lookup.
func (ix *Index) upsertLocked(p Prepared, b *batch, at int) bool {
	o := p.Object
	var e entry
	follows := b != nil && b.follows(o)
	if !follows {
		e = ix.findLocked(o.Key(), &ix.scratch)
	}
	old := e.o
	if old != nil && b != nil {
		b.forget()
		if b.holds(e.id) {
			// The batch inserted old (its key given twice): its tokens
			// are indexed before they are read to be removed.
			b.indexTokensLocked(ix)
		}
	}
	switch {
	case old == nil:
		if !ix.admitLocked(o, nil) {
			return false
		}
		ix.insertLocked(p, b, at, follows)
		ix.emitLocked(feed.Added, o, nil)
	case old.UID == o.UID && old.ResourceVersion == o.ResourceVersion && sameVersion(old.Type, o.Type):
		return false
	case old.UID != o.UID:
		ix.removeLocked(e)
		ix.emitLocked(feed.Deleted, old, nil)
		if !ix.admitLocked(o, nil) {
			return true
		}
		ix.insertLocked(p, b, at, false)
		ix.emitLocked(feed.Added, o, nil)
	default:
		ix.admitLocked(o, old)
		ix.replaceLocked(e, p)
		ix.emitLocked(feed.Modified, o, old)
	}
	return true
}

// Delete removes the object with key k and records a Deleted event carrying
// its last known state. It returns false if there is no such object.
func (ix *Index) Delete(k object.Key) bool {
	ix.mu.Lock()
	e := ix.findLocked(k, &ix.scratch)
	if e.o == nil {
		ix.mu.Unlock()
		return false
	}
	ix.removeLocked(e)
	ix.emitLocked(feed.Deleted, e.o, nil)
	ix.mu.Unlock()
	return true
}

// DeleteObject removes o only if the index currently holds exactly this
// pointer, so that pruning a stale object never deletes a newer version
// that arrived meanwhile. It returns whether it removed o.
func (ix *Index) DeleteObject(o *object.Object) bool {
	ix.mu.Lock()
	e := ix.findLocked(o.Key(), &ix.scratch)
	if e.o != o {
		ix.mu.Unlock()
		return false
	}
	ix.removeLocked(e)
	ix.emitLocked(feed.Deleted, o, nil)
	ix.mu.Unlock()
	return true
}

// RemoveCluster removes every object of the cluster, recording one Deleted
// event each, and returns how many it removed.
func (ix *Index) RemoveCluster(cluster string) int {
	n := ix.removeAll(cluster, "")
	ix.mu.Lock()
	ix.forgetRefusedLocked(cluster)
	ix.mu.Unlock()
	return n
}

// RemoveResource removes every object of one resource type of a cluster,
// recording one Deleted event each, and returns how many it removed.
func (ix *Index) RemoveResource(cluster, resource string) int {
	if resource == "" {
		return 0
	}
	return ix.removeAll(cluster, resource)
}

// removeAll removes the objects of a cluster, or of one of its resources.
func (ix *Index) removeAll(cluster, resource string) int {
	ix.mu.Lock()
	es := ix.entriesLocked(cluster, resource, &ix.scratch)
	for _, e := range es {
		ix.removeLocked(e)
		ix.emitLocked(feed.Deleted, e.o, nil)
	}
	ix.removeStreamsLocked(cluster, resource)
	ix.mu.Unlock()
	return len(es)
}

// Get returns the object with key k, or nil.
func (ix *Index) Get(k object.Key) *object.Object {
	pivot := new(object.Object)
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.findLocked(k, pivot).o
}

// Objects returns all objects of one resource type in one cluster, in no
// particular order. Resource "" returns all objects of the cluster.
func (ix *Index) Objects(cluster, resource string) []*object.Object {
	pivot := new(object.Object)
	ix.mu.RLock()
	es := ix.entriesLocked(cluster, resource, pivot)
	ix.mu.RUnlock()
	out := make([]*object.Object, len(es))
	for i, e := range es {
		out[i] = e.o
	}
	return out
}

// ObjectCount returns in constant time how many objects of one resource
// type a cluster has; resource "" counts the whole cluster.
func (ix *Index) ObjectCount(cluster, resource string) int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	st := ix.clusters[cluster]
	switch {
	case st == nil:
		return 0
	case resource == "":
		return st.Objects
	default:
		return st.Resources[resource]
	}
}

// Lookup returns every object, of any type, with exactly this cluster,
// namespace ("" for cluster-scoped objects) and name, in Position order.
func (ix *Index) Lookup(cluster, namespace, name string) []*object.Object {
	pivot := &object.Object{Cluster: cluster, Namespace: namespace, Name: name, Type: minType}
	var out []*object.Object
	ix.mu.RLock()
	ix.all.AscendGreaterOrEqual(entry{o: pivot}, func(e entry) bool {
		if o := e.o; o.Cluster != cluster || o.Namespace != namespace || o.Name != name {
			return false
		}
		out = append(out, e.o)
		return true
	})
	ix.mu.RUnlock()
	return out
}

// Namespaces returns the namespaces of cluster that hold objects, sorted.
func (ix *Index) Namespaces(cluster string) []string {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	st := ix.clusters[cluster]
	if st == nil {
		return nil
	}
	out := make([]string, 0, len(st.Namespaces))
	for ns := range st.Namespaces {
		if ns != "" {
			out = append(out, ns)
		}
	}
	slices.Sort(out)
	return out
}

// findLocked returns the entry of the object with key k, with a nil
// object when there is none. The objects sharing a cluster, namespace and
// name are adjacent in Position order, and there are few of them, so it
// seeks to the first and checks the resource of each.
func (ix *Index) findLocked(k object.Key, pivot *object.Object) entry {
	*pivot = object.Object{Cluster: k.Cluster, Namespace: k.Namespace, Name: k.Name, Type: minType}
	var found entry
	ix.all.AscendGreaterOrEqual(entry{o: pivot}, func(e entry) bool {
		if o := e.o; o.Name != k.Name || o.Namespace != k.Namespace || o.Cluster != k.Cluster {
			return false
		}
		if e.o.Type.Resource == k.Resource {
			found = e
			return false
		}
		return true
	})
	return found
}

// entriesLocked returns the entries of the objects of a cluster, or of
// one of its resources.
func (ix *Index) entriesLocked(cluster, resource string, pivot *object.Object) []entry {
	st := ix.clusters[cluster]
	if st == nil {
		return nil
	}
	n := st.Objects
	if resource != "" {
		if n = st.Resources[resource]; n == 0 {
			return nil
		}
	}
	out := make([]entry, 0, n)
	*pivot = object.Object{Cluster: cluster, Type: minType}
	ix.all.AscendGreaterOrEqual(entry{o: pivot}, func(e entry) bool {
		if e.o.Cluster != cluster {
			return false
		}
		if resource == "" || e.o.Type.Resource == resource {
			out = append(out, e)
		}
		return true
	})
	return out
}

// insertLocked adds p's object, which the index does not hold, to every
// posting and count; follows says it goes right after the object the
// batch b inserted last (batch.follows).
func (ix *Index) insertLocked(p Prepared, b *batch, at int, follows bool) {
	o := p.Object
	id := ix.ids.hold(o)
	ix.insertIDLocked(o, id)
	ix.rankLocked(entry{o: o, id: id}, b, follows)
	if b != nil {
		b.ids[at] = id
		return
	}
	ix.indexTokensLocked(o, id, p.Text)
}

// insertIDLocked is insertLocked for o, which holds id, but for its rank
// and its search tokens.
func (ix *Index) insertIDLocked(o *object.Object, id uint32) {
	ix.orderLocked(o, id)
	ix.postLocked(o, id)
}

// orderLocked puts o, which holds id, in the index's orders: the primary
// one and by creation time. It reports whether the primary order held an
// object with o's key already.
func (ix *Index) orderLocked(o *object.Object, id uint32) (held bool) {
	_, held = ix.all.ReplaceOrInsert(entry{o: o, id: id})
	ix.created.put(o)
	return held
}

// postLocked is the rest of insertIDLocked: o's postings, field and
// selector indexes, and counts. It touches neither order, so that a
// restore runs the two side by side.
func (ix *Index) postLocked(o *object.Object, id uint32) {
	te := ix.typeLocked(o.Type)
	te.objects++
	te.kind.Add(id)
	te.resource.Add(id)
	postingFor(ix.clusterIDs, o.Cluster).Add(id)
	postingFor(ix.namespaceIDs, o.Namespace).Add(id)
	ix.labelSets.hold(id, o.Labels)
	for _, l := range o.Labels {
		ix.labelPostingLocked(l).Add(id)
		postingFor(ix.labelKeys, l.Key).Add(id)
	}
	for _, r := range o.Owners {
		postingFor(ix.owners, r.UID).Add(id)
	}
	ix.indexFieldsLocked(o, id, te)
	ix.indexSelectorLocked(o, id)
	ix.chargeLocked(o, 1)

	st := ix.clusters[o.Cluster]
	if st == nil {
		st = &ClusterCounts{Resources: map[string]int{}, Namespaces: map[string]int{}}
		ix.clusters[o.Cluster] = st
		i, _ := slices.BinarySearch(ix.clusterNames, o.Cluster)
		ix.clusterNames = slices.Insert(ix.clusterNames, i, o.Cluster)
	}
	st.Objects++
	st.Resources[o.Type.Resource]++
	st.Namespaces[o.Namespace]++
}

// removeLocked removes o, which the index holds, from every posting and
// count, and drops postings and counts that become empty.
func (ix *Index) removeLocked(e entry) {
	o, id := e.o, e.id
	ix.all.Delete(e)
	te := ix.types[o.Type]
	ix.unindexFieldsLocked(o, id, te.kindName)
	ix.unindexSelectorLocked(o, id)
	removeFrom(ix.kinds, te.kindName, id)
	removeFrom(ix.resources, o.Type.Resource, id)
	if te.objects--; te.objects == 0 {
		delete(ix.types, o.Type)
	}
	removeFrom(ix.clusterIDs, o.Cluster, id)
	removeFrom(ix.namespaceIDs, o.Namespace, id)
	ix.labelSets.release(id)
	for _, l := range o.Labels {
		ix.removeLabelLocked(l, id)
		removeFrom(ix.labelKeys, l.Key, id)
	}
	for _, r := range o.Owners {
		removeFrom(ix.owners, r.UID, id)
	}
	ix.unindexTokensLocked(o, id, nil)
	ix.created.remove(o)
	ix.chargeLocked(o, -1)
	ix.ids.release(id)

	st := ix.clusters[o.Cluster]
	st.Objects--
	decrement(st.Resources, o.Type.Resource)
	decrement(st.Namespaces, o.Namespace)
	if st.Objects == 0 {
		delete(ix.clusters, o.Cluster)
		if i, ok := slices.BinarySearch(ix.clusterNames, o.Cluster); ok {
			ix.clusterNames = slices.Delete(ix.clusterNames, i, i+1)
		}
	}
}

// replaceLocked replaces the object of e by o, a newer version with the
// same key. o takes its id, so only the postings whose membership changes
// are written. Nothing is counted twice: counts depend only on the key.
func (ix *Index) replaceLocked(e entry, p Prepared) {
	old, id, o := e.o, e.id, p.Object
	if old.Type != o.Type && !o.Type.KindNameIs(ix.types[old.Type].kindName) {
		// The kind changed, and with it the Position: start over.
		ix.removeLocked(e)
		ix.insertLocked(p, nil, 0, false)
		return
	}
	ix.chargeLocked(old, -1)
	ix.chargeLocked(o, 1)
	ix.ids.objs[id] = o
	ix.all.ReplaceOrInsert(entry{o: o, id: id})
	ix.created.remove(old)
	ix.unindexTokensLocked(old, id, p.tokens())
	ix.reindexFieldsLocked(old, o, id)
	ix.reindexSelectorLocked(old, o, id)
	if old.Type != o.Type {
		// Same kind name and resource, so the same postings: swap the
		// type references.
		ix.typeLocked(o.Type).objects++
		oldTE := ix.types[old.Type]
		if oldTE.objects--; oldTE.objects == 0 {
			delete(ix.types, old.Type)
		}
	}
	ix.labelSets.replace(id, old.Labels, o.Labels)
	for _, l := range old.Labels {
		v, ok := o.Labels.Lookup(l.Key)
		if !ok || v != l.Value {
			ix.removeLabelLocked(l, id)
		}
		if !ok {
			removeFrom(ix.labelKeys, l.Key, id)
		}
	}
	for _, l := range o.Labels {
		ix.labelPostingLocked(l).Add(id)
		postingFor(ix.labelKeys, l.Key).Add(id)
	}
	for _, r := range old.Owners {
		if !o.HasOwner(r.UID) {
			removeFrom(ix.owners, r.UID, id)
		}
	}
	for _, r := range o.Owners {
		postingFor(ix.owners, r.UID).Add(id)
	}
	ix.indexTokensLocked(o, id, p.Text)
	ix.created.put(o)
}

// typeLocked returns the entry of t, creating it if needed.
func (ix *Index) typeLocked(t *object.Type) *typeEntry {
	if te := ix.types[t]; te != nil {
		return te
	}
	kn := t.KindName()
	te := &typeEntry{kindName: kn, kind: postingFor(ix.kinds, kn), resource: postingFor(ix.resources, t.Resource),
		fieldsProjected: slices.EqualFunc(t.Projected.Paths(), ix.fields.byResource[t.Resource], func(p fieldpath.Path, fi *FieldIndex) bool {
			return p.String() == fi.path.String()
		})}
	ix.types[t] = te
	return te
}

// labelPostingLocked returns the posting of l, creating it if needed.
func (ix *Index) labelPostingLocked(l object.Label) *Posting {
	values := ix.labels[l.Key]
	if values == nil {
		values = map[string]*Posting{}
		ix.labels[l.Key] = values
	}
	return postingFor(values, l.Value)
}

// removeLabelLocked removes id from the posting of l, dropping what
// becomes empty.
func (ix *Index) removeLabelLocked(l object.Label, id uint32) {
	values := ix.labels[l.Key]
	removeFrom(values, l.Value, id)
	if len(values) == 0 {
		delete(ix.labels, l.Key)
	}
}

// decrement lowers the count of k in m, dropping it at zero.
func decrement(m map[string]int, k string) {
	if n := m[k] - 1; n > 0 {
		m[k] = n
	} else {
		delete(m, k)
	}
}

// sameVersion reports whether a and b are the same version of a type.
func sameVersion(a, b *object.Type) bool {
	return a == b || a != nil && b != nil && a.GVR.Version == b.GVR.Version
}
