// Package postings holds the sets behind the index's secondary indexes:
// a Set holds the dense ids of the objects with one value (a kind, a
// label, a namespace, a search token), as a sorted slice while small and
// a roaring bitmap once it grows, so that most postings (one owner's
// children, one pod-template-hash) cost a few bytes per id, large ones a
// few bits, and a conjunction of requirements is an intersection of
// bitmaps whose cardinality is its count.
//
// Ids are not in any order that readers care about: the index keeps the
// objects' Position order in its primary B-tree, and its planner (package
// planner) combines the two.
//
// A bitmap Set counts its ids and has a Version that names them as they
// are, so that what was read from it (a first page) can be kept until
// they change.
package postings
