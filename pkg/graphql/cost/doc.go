// Package cost computes an operation's cost: the most objects its answer
// can hold, computed from the document before it runs, so that one request
// cannot make the server build an answer of hundreds of megabytes. The
// engine (pkg/graphql) refuses an operation whose cost is over its
// Options.MaxCost; docs/graphql.md shows how to compute a cost.
//
// Each ResourceEdge and each Resource the answer can hold counts one (an
// edge's node is its edge's object: it does not count again). A list's
// length is
//
//   - for resources(first:) { edges } and changes(first:) { edges }, its
//     first (a literal or a variable; Options.DefaultPageSize when absent
//     or null; at most Options.MaxPageSize, over which the query fails
//     anyway); a change's resource is one Resource;
//   - for Resource.owners, 1; for Resource.children, 5: estimates, as
//     their lengths are the fleet's, not the query's;
//   - for the other lists (clusters, facets, …), which hold no Resource, 1.
//
// A field whose filter goes through relations (ResourceFilter.through)
// adds, each time it resolves, the limits of its relations: the related
// objects it may consult (filter.DefaultThroughLimit where absent). Of
// keeps the filters that hold variables apart, in a Cost whose Of reads
// them from each request's variables, so that the rest is kept with the
// document.
//
// Lists multiply through nesting, and fields add up over aliases and
// fragments; fields of one response key merge as execution merges them.
// @skip and @include are not read: the cost is what the operation can
// return whatever its variables. A subscription's cost is that of one
// event's payload.
//
// Compute is the entry: it returns the cost of an operation of a parsed
// document over the engine's schema (whose types it finds by the names
// above) with given variables, whether that
// cost holds for any variables (no variable's value was read, so the
// engine may keep it with the document), or ErrTooManyFields for an
// operation whose fragments expand to more fields than it should walk.
// Options holds the page sizes it counts.
package cost
