// Package typed builds a GraphQL object type for each kind the fleet
// caches, from the members' OpenAPI v3 schemas (package openapi), and
// reads their values from each object's stored JSON.
//
// Build takes an openapi.Snapshot (for each kind, the versions the fleet
// serves) and returns Types: per kind an object type that implements the
// engine's Resource interface (its fields are the engine's, given in
// Options) plus the schema's top-level properties (metadata, spec, status,
// data, …), and the name of its root field. A kind's versions are merged:
// the union of their properties; a value whose versions disagree on its
// type is JSON, its description saying which version has what. Nested
// objects get types named by their path ("PodSpecContainers"); maps,
// x-kubernetes-preserve-unknown-fields and values of no type are JSON;
// enums are strings (their values in the description); int32 is Int,
// other integers Long; int-or-string is IntOrString. Lists of objects and
// of scalars hold non-null items: an item of another type is left out.
//
// Values are never decoded into maps: a nested object's value is a view of
// the stored bytes (a node), each field reads its member with gjson, and
// Types.Writer gives the executor a Writer for leaves and lists of leaves
// that copies their stored text into the answer, as Resource.field does.
package typed
