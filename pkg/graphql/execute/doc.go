// Package execute is the engine's one executor of GraphQL operations:
// every query, and every payload of a subscription, runs here. graphql-go
// keeps what it does well (the schema, parsing, validation, variable
// coercion and the introspection types and their resolvers); its own
// executor is not used, as it builds a map per object and a ResolveInfo
// per field and then encodes the response from those maps: about 140 KB of
// garbage for a page of 50 objects, which with a million objects live
// turns into collection pauses at p99.
//
// Compile turns an operation and its coerced variables into a Plan: per
// object type, the fields selected, collected as GraphQL's CollectFields
// does (aliases, fragments and their type conditions, @skip and @include;
// package document walks the selections), each with its arguments as
// ArgumentValues turns literals and variables into what resolvers receive.
// A plan whose variables reach only its root fields' arguments holds for
// any variables, and the caller may keep it. Interface- and union-typed
// fields get a plan per runtime type, compiled when a value of that type
// first comes.
//
// Write runs a Plan by calling the schema's resolvers and writing JSON as
// it goes, in the order the operation selects. Leaf fields that the caller
// gives a Writer for (an object's name, a value at a path) are written
// without their resolvers. Errors follow GraphQL's rules as graphql-go
// applies them: a field that fails, or whose resolver panics (PanicError),
// is null, and a null in a non-null position makes its closest nullable
// enclosing value null, the buffer cut back to where that value began;
// each error carries its response path and its places in the document.
// An answer over the caller's size limit stops with ErrTooLarge.
//
// The executor's oracle is graphql-go's own executor over the same schema
// and resolvers: this package's tests compare the two over a schema of
// their own (interfaces, unions, non-null fields that fail, lists of
// non-null items), and the engine's (TestExecution and FuzzExecution in
// pkg/graphql) over fleetcache's schema.
package execute
