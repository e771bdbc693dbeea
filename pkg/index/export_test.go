package index

// Internals the tests of package index_test read.

// CompareParts is compareParts.
var CompareParts = compareParts

// ObjectOverhead is objectOverhead: what the budget charges an object
// beside its body.
const ObjectOverhead = objectOverhead

// DefaultRetention is defaultRetention.
const DefaultRetention = defaultRetention

// StatusApart returns where o's stored body is split in two parts (0: not
// split) and where its status begins in its JSON.
func StatusApart(o *Object) (split, statusAt int) { return o.body.Split(), int(o.statusAt) }

// Entries returns how many type entries, postings and per-cluster counts
// the index keeps.
func (ix *Index) Entries() (types, postings, clusters int) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return len(ix.types), len(ix.kinds) + len(ix.resources) + len(ix.labels) + len(ix.labelKeys) + len(ix.owners), len(ix.clusters)
}
