// Package views holds the read views of an index.Index built on the
// planner (package planner): Facets, the number of matching objects per
// cluster, namespace, kind, label value or value at a path (a FacetBy),
// answered from the index's counters and postings where they suffice; and
// Contents, which resource types and namespaces each cluster holds, what
// authorization checks a caller's rights against.
//
// A View gathers, in one value, every read of an Index that the GraphQL
// API serves: lists and counts (package planner), facets and contents,
// objects by name, and the change feed. pkg/graphql reads the index
// through a View and never changes it.
package views
