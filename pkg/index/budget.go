package index

import (
	"github.com/fleetcache/fleetcache/pkg/index/object"
)

// objectOverhead is what the budget charges for an object beside its
// body: its object.Object, labels, owners and its share of the secondary indexes.
// Measured on realistic Pods (BenchmarkIndexScale, 300,000 Pods: 941 B of
// heap per Pod whose compressed body is 272 B), rounded up.
const objectOverhead = 700

// softShare is the share of Options.MemoryBudget above which objects are
// stored without their body (metadata only), in quarters: the last quarter
// holds objects that would not fit with their body.
const softShare = 3

// BudgetStatus is what the index holds against its memory budget
// (Options.MemoryBudget).
type BudgetStatus struct {
	// Budget is Options.MemoryBudget; 0 means none.
	Budget int64
	// Used is the estimate of the bytes the index holds: objectOverhead
	// per object plus each object's stored body.
	Used int64
	// MetadataOnly counts the objects held without their body.
	MetadataOnly int
	// Refused counts the objects not stored since the index started,
	// because even their metadata would have passed the budget.
	Refused uint64
}

// clusterResource names one resource type of one cluster.
type clusterResource struct{ cluster, resource string }

// budgetLocked is the index's accounting; every field is guarded by
// Index.mu.
type budgetLocked struct {
	budget       int64
	used         int64
	metadataOnly map[clusterResource]int
	refused      map[clusterResource]uint64
	metaTotal    int
	refusedTotal uint64
}

// cost is what the budget charges for o.
func cost(o *object.Object) int64 { return objectOverhead + int64(o.StoredSize()) }

// admitLocked applies the budget to o, about to replace old (nil for a
// new object): above three quarters of the budget o's body is dropped; a new
// object that would pass the budget even without its body is refused,
// false. A modification is never refused: it adds no object.
func (ix *Index) admitLocked(o, old *object.Object) bool {
	b := &ix.budget
	if b.budget <= 0 {
		return true
	}
	used := b.used
	if old != nil {
		used -= cost(old)
	}
	if old == nil && used+objectOverhead+1 > b.budget {
		if b.refused == nil {
			b.refused = map[clusterResource]uint64{}
		}
		b.refused[clusterResource{o.Cluster, o.Type.Resource}]++
		b.refusedTotal++
		return false
	}
	if used+cost(o) > b.budget/4*softShare && !o.MetadataOnly() {
		// o is not shared with any reader of bodies yet: the informer
		// store that holds it reads its metadata only.
		o.DropBody()
	}
	return true
}

// chargeLocked adds o (sign 1) or takes it away (sign -1) from the
// accounting.
func (ix *Index) chargeLocked(o *object.Object, sign int) {
	b := &ix.budget
	b.used += int64(sign) * cost(o)
	if !o.MetadataOnly() {
		return
	}
	if b.metadataOnly == nil {
		b.metadataOnly = map[clusterResource]int{}
	}
	k := clusterResource{o.Cluster, o.Type.Resource}
	if n := b.metadataOnly[k] + sign; n > 0 {
		b.metadataOnly[k] = n
	} else {
		delete(b.metadataOnly, k)
	}
	b.metaTotal += sign
}

// Budget returns what the index holds against its memory budget.
func (ix *Index) Budget() BudgetStatus {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	b := &ix.budget
	return BudgetStatus{Budget: b.budget, Used: b.used, MetadataOnly: b.metaTotal, Refused: b.refusedTotal}
}

// Degraded returns how many objects of one resource type of a cluster
// the memory budget degraded: held without their body, and refused since
// the index started (or since the cluster was last removed).
func (ix *Index) Degraded(cluster, resource string) (metadataOnly int, refused uint64) {
	if ix.budgetBytes <= 0 {
		// Without a budget nothing is degraded: health asks for every
		// type of every cluster, so spare it the lock.
		return 0, 0
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	k := clusterResource{cluster, resource}
	return ix.budget.metadataOnly[k], ix.budget.refused[k]
}

// forgetRefusedLocked drops the refusal counts of a removed cluster.
func (ix *Index) forgetRefusedLocked(cluster string) {
	for k := range ix.budget.refused {
		if k.cluster == cluster {
			delete(ix.budget.refused, k)
		}
	}
}
