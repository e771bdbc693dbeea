package ordered

import (
	"errors"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/graphql-go/graphql/language/ast"
	"github.com/graphql-go/graphql/language/parser"
)

func TestEncode(t *testing.T) {
	page := map[string]any{
		"totalCount": 2,
		"edges": []any{
			map[string]any{"node": map[string]any{"name": "a", "kind": "Pod"}},
			map[string]any{"node": map[string]any{"name": "b", "kind": "Pod"}},
		},
	}
	for _, tc := range []struct {
		name  string
		query string
		data  any
		limit int
		want  string
		err   error
	}{
		{name: "selection order, not key order", query: `{ resources { totalCount edges { node { name kind } } } }`,
			data: map[string]any{"resources": page},
			want: `{"resources":{"totalCount":2,"edges":[{"node":{"name":"a","kind":"Pod"}},{"node":{"name":"b","kind":"Pod"}}]}}`},
		{name: "aliases", query: `{ z: clusters { name } a: clusters { name } }`,
			data: map[string]any{"a": []any{}, "z": []any{map[string]any{"name": "c1"}}},
			want: `{"z":[{"name":"c1"}],"a":[]}`},
		{name: "fragments and inline fragments expanded in place", query: `{ resources { ...E totalCount } } fragment E on ResourceConnection { edges { node { ... on Resource { kind } name } } }`,
			data: map[string]any{"resources": page},
			want: `{"resources":{"edges":[{"node":{"kind":"Pod","name":"a"}},{"node":{"kind":"Pod","name":"b"}}],"totalCount":2}}`},
		{name: "skipped fields left out", query: `{ clusters { name status } }`,
			data: map[string]any{"clusters": []any{map[string]any{"status": "SYNCED"}}},
			want: `{"clusters":[{"status":"SYNCED"}]}`},
		{name: "null object", query: `{ cluster(name: "x") { name } }`,
			data: map[string]any{"cluster": nil},
			want: `{"cluster":null}`},
		{name: "JSON scalar kept whole", query: `{ resource { labels } }`,
			data: map[string]any{"resource": map[string]any{"labels": map[string]any{"b": "2", "a": "1"}}},
			want: `{"resource":{"labels":{"a":"1","b":"2"}}}`},
		{name: "over the limit", query: `{ resources { totalCount edges { node { name kind } } } }`,
			data: map[string]any{"resources": page}, limit: 40, err: ErrTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc, err := parser.Parse(parser.ParseParams{Source: tc.query})
			if err != nil {
				t.Fatal(err)
			}
			limit := tc.limit
			if limit == 0 {
				limit = math.MaxInt
			}
			got, err := New(doc, doc.Definitions[0].(*ast.OperationDefinition)).Encode(tc.data, limit)
			if !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
				t.Fatalf("Encode error = %v, want %v", err, tc.err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("Encode (-want +got):\n%s", diff)
			}
		})
	}
}
