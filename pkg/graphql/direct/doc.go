// Package direct executes the common GraphQL operations without
// graphql-go's executor, which builds a map per object and a ResolveInfo
// per field and then encodes the response from those maps: about 140 KB of
// garbage for a page of 50 objects, which with a million objects live turns
// into collection pauses at p99.
//
// Compile turns an operation into a Plan once (its fields collected as
// GraphQL's CollectFields does: aliases, fragments, @skip and @include);
// Write runs a Plan by calling the schema's own resolvers and writing JSON
// as it goes. Only the happy path is direct: introspection, arguments that
// are not plain, resolver errors and nulls in non-null fields make Compile
// or Write fail with ErrNotDirect, and the caller then has graphql-go
// execute the operation, which reports them as it always has. The root
// fields' arguments are the caller's to coerce (ArgumentValues turns
// literals and coerced variables into what resolvers receive), so that
// they are coerced exactly as graphql-go does.
//
// Its tests are the engine's (TestDirectExecution and FuzzDirect in
// pkg/graphql): they compare each answer with graphql-go's over the real
// schema, which this package does not know.
package direct
