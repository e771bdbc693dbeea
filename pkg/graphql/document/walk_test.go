package document

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/graphql-go/graphql/language/ast"
)

func TestSubfields(t *testing.T) {
	tests := []struct {
		name     string
		query    string
		want     []string
		complete bool
	}{
		{name: "fields", query: `{ r { totalCount edges { node { name } } } }`, want: []string{"totalCount", "edges"}, complete: true},
		{name: "aliases and directives", query: `{ r { n: totalCount pageInfo @skip(if: true) { hasNextPage } } }`, want: []string{"totalCount", "pageInfo"}, complete: true},
		{name: "inline fragment", query: `{ r { ... on C { totalCount } ... { edges { cursor } } } }`, want: []string{"totalCount", "edges"}, complete: true},
		{name: "fragment spread", query: `{ r { totalCount ...F } } fragment F on C { edges { cursor } }`, want: []string{"totalCount"}, complete: false},
		{name: "scalar", query: `{ r }`, complete: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := parse(t, tt.query)
			op := doc.Definitions[0].(*ast.OperationDefinition)
			r := op.SelectionSet.Selections[0].(*ast.Field)
			got, complete := Subfields([]*ast.Field{r})
			if diff := cmp.Diff(tt.want, got); diff != "" || complete != tt.complete {
				t.Errorf("Subfields = %v, %t, want %v, %t (-want +got):\n%s", got, complete, tt.want, tt.complete, diff)
			}
		})
	}
}
