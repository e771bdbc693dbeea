// Package ordered encodes the data of a GraphQL result with the fields of
// each object in the order the query selects them.
//
// graphql-go returns objects as Go maps, which encoding/json writes in key
// order; GraphQL responses should list fields in the order the query
// selects them. Selections (New) are an operation's selection sets and its
// document's fragments; Selections.Encode walks the data along them,
// fragments expanded (package document collects the fields), and stops
// with ErrTooLarge once the encoding passes a limit, so that the engine
// (pkg/graphql) abandons an answer over its response size limit without
// encoding it whole.
package ordered
