// Package index is fleetcache's global cross-cluster index: every cached
// Kubernetes object of every cluster, kept in one ordered, revisioned,
// in-memory structure, with its secondary indexes and its lock.
//
// An Index holds *object.Object values (package object: the compact,
// immutable form shared with the clusters' informer stores), each
// identified by its object.Key and ordered by its object.Position: the
// primary order, which groups objects by cluster and then by namespace
// (an object.Range). Writers call Upsert, Delete, DeleteObject,
// RemoveCluster and RemoveResource; every applied change advances one
// global revision and is recorded in the index's change feed (package
// feed), which Revision, Events and Wait read. An optional memory budget
// (Options.MemoryBudget, budget.go) stores objects without their body, or
// refuses them, as the index grows.
//
// Every object has a dense id (ids.go), handed out again after a delete,
// kept beside it in the primary order. Every change updates the secondary
// indexes, each a Posting (a set of ids: a sorted slice while small, a
// roaring bitmap once it grows, package postings) per value: cluster,
// namespace name, kind, resource, label key and value, label key, owner
// UID, the search tokens of an object (tokens.go, package search), and
// the values at configured paths (Options.Indexes, fieldindex.go, a
// FieldIndex per resource and path), beside per-cluster counts by
// resource and namespace (ClusterCounts). A modification keeps the id,
// so only the postings whose membership changes are written.
// OrderedIndexes keep objects in order of an object.SortValue
// (ordered.go): one of metadata.creationTimestamp, and one per configured
// path that does not cross an array.
//
// Reads by identity (Get, Objects, ObjectCount, Lookup, Namespaces) are
// methods of the Index. Queries are not: the planner (package planner)
// reads the index through Index.Read, which holds the read lock and hands
// out a Reader, the one small API of postings, counts and ordered indexes
// that the storage offers it. Facets and contents (package views) are
// built on the planner, and views.View gathers every read that the API
// serves. The index keeps the first pages of postings that the planner
// read lately under the postings' versions (firstpages.go). Verify checks
// the secondary indexes against the primary order, for tests.
//
// An Index is safe for concurrent use.
package index
