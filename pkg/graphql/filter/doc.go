// Package filter is the language of the arguments that select and order
// objects: the ResourceFilter input (Input) that resources, the kinds'
// root fields, facets, changes and resourceEvents take, the ResourceSort
// input and SortOrder enum of sorted pages, and the FacetKey enum; and
// their reading into the planner's terms (package planner): Parse turns a
// ResourceFilter into a planner.Filter, ParseSort a sort into
// planner.SortKeys, FacetBy a facets query's arguments into a
// views.FacetBy; SplitThrough reads a ResourceFilter's through (Through:
// the relations a filter goes through), which Parse refuses. Errors say what is wrong with the argument; the engine
// reports them as BAD_USER_INPUT.
package filter
