// Package fieldselector parses and evaluates field selectors: requirements
// on the values at paths (package fieldpath) inside an object, such as
//
//	status.phase!=Running,spec.nodeName in (node-1,node-2),status.containerStatuses[].restartCount>3
//
// Parse turns the text into a Selector: Requirements, all of which must
// hold, each a path, an Operator and its values. Selector.String prints
// the canonical form (requirements sorted, == written =), which parses
// back to the same Selector. Selector.Matches evaluates it against an
// object's cluster and stored JSON bytes without decoding the object.
//
// Across an array (a path with []) a requirement holds when some element
// satisfies it, except != and notin, which hold when no element equals
// (so they also hold when the value is absent, as in Kubernetes).
package fieldselector
