// Package index is fleetcache's global cross-cluster index: every cached
// Kubernetes object of every cluster, kept in one ordered, revisioned,
// in-memory structure that the API layer reads.
//
// An Index holds *Object values (see object.go), the compact immutable form
// shared with the clusters' informer stores; an Object's JSON body is
// compressed by its Type's Codec (package compact) and decoded when read,
// into reused buffers by the index's own reads. Each object has a Key (cluster,
// resource, namespace, name) that identifies it and a Position (cluster,
// namespace, name, kind, resource) that orders it. Writers call Upsert,
// Delete, DeleteObject, RemoveCluster and RemoveResource; every applied
// change advances one global revision and appends one Event to a bounded
// change feed.
//
// Readers select objects with a Filter. List returns a Page of matching
// objects in Position order, strictly after a Position cursor (keyset
// paging), together with the revision it was read at; Count counts them,
// and Facets counts them per value of a FacetBy: cluster, namespace, kind,
// a label, or the values at a path (package fieldpath).
// Secondary indexes (kind, resource, label key=value, label key, owner UID)
// and the Position order itself (which groups objects by cluster and then by
// namespace) let a narrow filter visit only its smallest candidate set
// instead of the whole index. A Filter's field selector (Filter.Fields,
// package fieldselector on the paths of package fieldpath) is read from
// the stored JSON bytes of the candidates the other constraints leave,
// last, without decoding them; its requirements on the path cluster narrow
// to those clusters' ranges first. Paths named in Options.Indexes (per
// resource, with defaults for Pods, Nodes, workloads, Services and Events)
// have secondary indexes of their own (fieldindex.go): a posting per value
// at the path. A requirement =, == or in on such a path narrows like a
// label requirement when every resource the filter can match indexes the
// path, and facets by it count the postings; IndexedPaths tells which
// paths a resource indexes.
//
// A Filter's Search (package search) is words that must each begin a
// token of an object's name, namespace, labels, annotation values or
// images: an inverted index of those tokens (tokens.go), kept on every
// change like the label index, gives each word's candidates to the
// planner, and Matchers match the same tokens.
//
// Events(after, limit) follows the feed from a revision, so a consumer that
// lists at Page.Revision and then follows Events(Page.Revision, …) sees every
// change exactly once. Events fails with ErrExpired once the changes it needs
// have left the retention window, and Wait blocks until the revision moves.
//
// An Index is safe for concurrent use.
package index
