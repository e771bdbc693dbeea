// Package postings holds the ordered sets behind the index's secondary
// indexes: a Set keeps values in the order an Order gives (the index's
// Position order), as a sorted slice while small and a B-tree once it
// grows, so that most postings (one owner's children, one
// pod-template-hash) cost a fraction of a tree, and large ones (a kind, a
// label on every object) stay fast to update and to walk from any point.
//
// Every posting of the index is in the same order, so the objects of one
// cluster or namespace are adjacent in each, and a page walks a posting
// from a cursor without visiting what precedes it.
package postings
