package document

import (
	"testing"

	"github.com/graphql-go/graphql/language/ast"
	"github.com/graphql-go/graphql/language/parser"
)

// parse parses a document or fails the test.
func parse(t testing.TB, q string) *ast.Document {
	t.Helper()
	doc, err := parser.Parse(parser.ParseParams{Source: q})
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestDepth(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		query                  string
		regular, introspection int
	}{
		{name: "leaf", query: `{ clusters { name } }`, regular: 2},
		{name: "typename", query: `{ __typename }`, regular: 1},
		{name: "nested", query: `{ resources { edges { node { owners { owners { owners { name } } } } } } }`, regular: 7},
		{name: "widest branch counts", query: `{ a: clusters { name } b: resources { edges { node { name } } } }`, regular: 4},
		{name: "inline fragment adds nothing", query: `{ resources { edges { node { ... on Resource { name } } } } }`, regular: 4},
		{name: "fragments expanded", query: `{ resources { ...E } } fragment E on ResourceConnection { edges { node { ...N } } } fragment N on Resource { owners { name } }`, regular: 5},
		{name: "fragment used twice", query: `{ a: resources { ...E } b: resources { edges { ...F } } } fragment E on ResourceConnection { edges { ...F } } fragment F on ResourceEdge { node { name } }`, regular: 4},
		{name: "cycle is cut", query: `{ resources { edges { node { ...A } } } } fragment A on Resource { owners { ...A } }`, regular: 4},
		{name: "introspection apart", query: `{ __schema { types { fields { type { ofType { ofType { name } } } } } } clusters { name } }`, regular: 2, introspection: 7},
		{name: "root fragment with introspection", query: `{ ...Q } fragment Q on Query { __type(name: "Pod") { name } }`, introspection: 2},
		{name: "several operations", query: `query A { clusters { name } } query B { resources { totalCount } }`, regular: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			regular, introspection := Depth(parse(t, tc.query))
			if regular != tc.regular || introspection != tc.introspection {
				t.Errorf("depth = %d, introspection %d; want %d, %d", regular, introspection, tc.regular, tc.introspection)
			}
		})
	}
}
