// Package planner answers queries over an index.Index: which objects
// match a Filter, in which order, and how many.
//
// A Filter (clusters, namespaces, kinds, resources, a label selector, a
// field selector, an owner, a name part, a search) is compiled into a
// query, whose plan holds the postings of every constraint that has them
// (dims: the scope's clusters and namespaces, resources, kinds, owner,
// label requirements, covered field requirements, search words), each a
// union of bitmaps of object ids, and the scope's Ranges of the primary
// order. An exact plan needs no matching: its count is the cardinality of
// the dims' intersection. Otherwise each candidate is matched against the
// rest of the query, field selectors last, on the stored bytes. List and
// ListUnion read a Page in Position order after a cursor (keyset paging),
// by walking the primary order from the cursor through the ranges and
// testing each object's id against the dims when matches are dense, or by
// intersecting the dims and keeping the first of the candidates when they
// are sparse (docs/design.md, "Postings as bitmaps"). Count and CountUnion
// count, some from the index's counters alone; ListSorted orders by
// SortKeys (values at paths), walking an index.OrderedIndex of the first
// key when that is short, otherwise keeping the top of every candidate,
// read by several goroutines; a SortedPosition is its cursor. A Matcher
// tests objects one at a time, as followers of the feed do, and Query is
// a compiled Filter for the reads built on the planner (package views).
//
// The planner reads the index only through index.Reader, under the read
// lock Index.Read holds: postings by value, the primary order, counts,
// ordered and field indexes. It keeps no state of its own.
package planner
