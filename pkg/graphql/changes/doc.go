// Package changes answers Query.changes: what was added, modified and
// deleted among the objects a filter selects, read from the changes the
// index retains (its feed), a page at a time, oldest or newest first,
// between two bounds (a duration before now, a time, or a revision
// cursor).
//
// A Query reads an Index (the feed's part of views.View) and an Engine,
// the GraphQL server (package graphql), for what the engine owns: filter
// arguments, page sizes, the caller's rights, revision cursors and error
// codes. Field returns the query's field with its ChangeConnection and
// ChangePageInfo types; each change is classified as resourceEvents
// classifies it (fanout.Classify), so a page of changes and a
// subscription from the page's revision never disagree.
package changes
