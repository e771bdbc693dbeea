package index

// Internals the tests of package index_test read.

// ObjectOverhead is objectOverhead: what the budget charges an object
// beside its body.
const ObjectOverhead = objectOverhead

// DefaultRetention is defaultRetention.
const DefaultRetention = defaultRetention

// Entries returns how many type entries, postings and per-cluster counts
// the index keeps.
func (ix *Index) Entries() (types, postings, clusters int) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return len(ix.types), len(ix.kinds) + len(ix.resources) + len(ix.labels) + len(ix.labelKeys) + len(ix.owners), len(ix.clusters)
}

// Respread returns how many ranks spreads have given again.
func (ix *Index) Respread() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.ranks.respread
}
