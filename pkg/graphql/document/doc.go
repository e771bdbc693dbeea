// Package document reads GraphQL documents where graphql-go does not: the
// limits a document must keep before graphql-go validates it, and the
// walks over its selections that the engine (pkg/graphql) shares.
//
// Limits (NewLimits) holds the depth limits of a server's documents: how
// deeply operations may nest field selections, and introspection (__schema,
// __type), which may always go as deep as GraphiQL's introspection query.
// Its CheckText refuses, before parsing, text whose brackets nest deeper
// than any document within the limits (graphql-go's parser recurses once
// per level); its Check refuses a parsed document that graphql-go's
// validation would crash on (a variable without a type, a fragment that
// spreads itself), that holds more than MaxSelections selections (the
// validation takes time quadratic in them), or that nests deeper than the
// limits (Depth measures it, fragments expanded). Errors that graphql-go's
// parser should have reported wrap ErrSyntax.
//
// RootType, Fragments, CollectFields and ResponseKey walk an operation's
// selections with its fragments expanded: CollectFields is GraphQL's field
// collection, with a Selector that decides which directives and type
// conditions hold.
// The executor's plans (pkg/graphql/execute) collect with the request's
// variables and each object's type; the cost (pkg/graphql/cost) collects
// every selection, an upper bound for any variables.
package document
