package cost

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/graphql-go/graphql"
	"github.com/graphql-go/graphql/language/ast"
	"github.com/graphql-go/graphql/language/parser"
)

// engineSchema builds the engine's schema as far as a cost reads it, from
// its SDL (pkg/graphql/testdata/schema.graphql, which pkg/transport's audit
// test compares with the schema the server serves): its object types with
// their fields, lists and non-nulls; every other type is a String, as a
// cost reads object types only.
func engineSchema(t testing.TB) *graphql.Schema {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "testdata", "schema.graphql"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := parser.Parse(parser.ParseParams{Source: string(src)})
	if err != nil {
		t.Fatalf("parse the SDL: %v", err)
	}
	objects := map[string]*graphql.Object{}
	interfaces := map[string]*graphql.Interface{}
	var typeOf func(ast.Type) graphql.Output
	typeOf = func(t ast.Type) graphql.Output {
		switch t := t.(type) {
		case *ast.NonNull:
			return graphql.NewNonNull(typeOf(t.Type))
		case *ast.List:
			return graphql.NewList(typeOf(t.Type))
		case *ast.Named:
			if o := objects[t.Name.Value]; o != nil {
				return o
			}
			if i := interfaces[t.Name.Value]; i != nil {
				return i
			}
		}
		return graphql.String
	}
	fieldsOf := func(defs []*ast.FieldDefinition) graphql.FieldsThunk {
		return func() graphql.Fields {
			fields := graphql.Fields{}
			for _, f := range defs {
				fields[f.Name.Value] = &graphql.Field{Type: typeOf(f.Type)}
			}
			return fields
		}
	}
	for _, d := range doc.Definitions {
		if def, ok := d.(*ast.InterfaceDefinition); ok {
			interfaces[def.Name.Value] = graphql.NewInterface(graphql.InterfaceConfig{Name: def.Name.Value, Fields: fieldsOf(def.Fields)})
		}
	}
	var types []graphql.Type
	for _, d := range doc.Definitions {
		def, ok := d.(*ast.ObjectDefinition)
		if !ok {
			continue
		}
		var impl []*graphql.Interface
		for _, i := range def.Interfaces {
			impl = append(impl, interfaces[i.Name.Value])
		}
		objects[def.Name.Value] = graphql.NewObject(graphql.ObjectConfig{Name: def.Name.Value, Interfaces: impl, Fields: fieldsOf(def.Fields),
			IsTypeOf: func(graphql.IsTypeOfParams) bool { return false }})
		types = append(types, objects[def.Name.Value])
	}
	schema, err := graphql.NewSchema(graphql.SchemaConfig{Query: objects["Query"], Subscription: objects["Subscription"], Types: types})
	if err != nil {
		t.Fatalf("build the schema: %v", err)
	}
	return &schema
}

// compute returns the cost of the one operation of query.
func compute(t testing.TB, schema *graphql.Schema, query string, vars map[string]any, opts Options) (int, bool, error) {
	t.Helper()
	doc, err := parser.Parse(parser.ParseParams{Source: query})
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	for _, d := range doc.Definitions {
		if op, ok := d.(*ast.OperationDefinition); ok {
			return Compute(schema, doc, op, vars, opts)
		}
	}
	t.Fatal("no operation")
	return 0, false, nil
}

// aliases selects field n times, under the aliases a0, a1, …
func aliases(n int, field string) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, " a%d: %s", i, field)
	}
	return b.String()
}

// TestCompute holds examples of every rule of the cost, over the engine's
// schema.
func TestCompute(t *testing.T) {
	schema := engineSchema(t)
	opts := Options{DefaultPageSize: 100, MaxPageSize: 1000}
	page := func(first string) string { return `resources` + first + ` { edges { node { name } } }` }
	for _, tc := range []struct {
		name  string
		query string
		vars  map[string]any
		// dynamic: the cost read a variable's value, and holds for these
		// variables only.
		dynamic bool
		want    int
	}{
		{name: "a page of the default size", query: `{ ` + page(``) + ` }`, want: 100},
		{name: "a page of first objects", query: `{ ` + page(`(first: 10)`) + ` }`, want: 10},
		{name: "edges count, nodes do not count again", query: `{ resources(first: 7) { edges { cursor } } }`, want: 7},
		{name: "no edges, no objects", query: `{ resources(first: 1000) { totalCount revision pageInfo { hasNextPage endCursor } } }`, want: 0},
		{name: "first over the maximum counts the maximum", query: `{ ` + page(`(first: 5000)`) + ` }`, want: 1000},
		{name: "first 0", query: `{ ` + page(`(first: 0)`) + ` }`, want: 0},
		{name: "negative first", query: `{ ` + page(`(first: -3)`) + ` }`, want: 0},
		{name: "aliases add up", query: `{ a: ` + page(`(first: 10)`) + ` b: ` + page(`(first: 20)`) + ` c: ` + page(``) + ` }`, want: 130},
		{name: "the issue's hundred pages", query: `{` + aliases(100, `resources(first: 1000) { edges { node { object } } }`) + ` }`, want: 100000},
		{name: "fields cost nothing more", query: `{ resources(first: 10) { edges { node { name a: field(path: "status.phase")
			b: field(path: "spec.containers[].image") c: field(path: "spec.nodeName") } } } }`, want: 10},
		{name: "one resource", query: `{ resource(cluster: "c1", kind: "Pod", namespace: "web", name: "web-1") { name } }`, want: 1},
		{name: "nesting multiplies", query: `{ resources(first: 10) { edges { node { owners { name } children { name children { name } } } } } }`,
			want: 10 + 10*ownersPerObject + 10*childrenPerObject + 10*childrenPerObject*childrenPerObject},
		{name: "nested under one resource", query: `{ resource(cluster: "c1", kind: "Deployment", namespace: "web", name: "web") { children { children { owners { name } } } } }`,
			want: 1 + childrenPerObject + childrenPerObject*childrenPerObject*(1+ownersPerObject)},
		{name: "fragments", query: `{ resources(first: 10) { ...page } }
			fragment page on ResourceConnection { edges { node { ...obj } } }
			fragment obj on Resource { name owners { ...leaf } }
			fragment leaf on Resource { name }`, want: 10 + 10*ownersPerObject},
		{name: "inline fragments", query: `{ resources(first: 10) { ... on ResourceConnection { edges { node { ... on Resource { children { name } } } } } } }`,
			want: 10 + 10*childrenPerObject},
		{name: "a fragment spread twice counts once", query: `{ resources(first: 10) { ...page ...page } }
			fragment page on ResourceConnection { edges { node { name } } }`, want: 10},
		{name: "fields of one response key merge", query: `{ resources(first: 10) { edges { node { name } } edges { node { uid children { name } } } } }`,
			want: 10 + 10*childrenPerObject},
		{name: "fragments of one connection merge", query: `{ resources(first: 10) { ...names ...kids } }
			fragment names on ResourceConnection { edges { node { name } } }
			fragment kids on ResourceConnection { edges { node { children { name } } } }`, want: 10 + 10*childrenPerObject},
		{name: "first from a variable", query: `query($n: Int) { ` + page(`(first: $n)`) + ` }`, vars: map[string]any{"n": 50}, dynamic: true, want: 50},
		{name: "first from a variable decoded from JSON", query: `query($n: Int) { ` + page(`(first: $n)`) + ` }`, vars: map[string]any{"n": 50.0}, dynamic: true, want: 50},
		{name: "first from a json.Number variable", query: `query($n: Int) { ` + page(`(first: $n)`) + ` }`, vars: map[string]any{"n": json.Number("50")}, dynamic: true, want: 50},
		{name: "first from a variable's default", query: `query($n: Int = 30) { ` + page(`(first: $n)`) + ` }`, dynamic: true, want: 30},
		{name: "a variable given overrides its default", query: `query($n: Int = 30) { ` + page(`(first: $n)`) + ` }`, vars: map[string]any{"n": 3}, dynamic: true, want: 3},
		{name: "a null variable: the default page", query: `query($n: Int) { ` + page(`(first: $n)`) + ` }`, vars: map[string]any{"n": nil}, dynamic: true, want: 100},
		{name: "a variable not given: the default page", query: `query($n: Int) { ` + page(`(first: $n)`) + ` }`, dynamic: true, want: 100},
		{name: "a variable over the maximum", query: `query($n: Int) { ` + page(`(first: $n)`) + ` }`, vars: map[string]any{"n": 1e12}, dynamic: true, want: 1000},
		{name: "variables of several pages", query: `query($a: Int, $b: Int) { x: ` + page(`(first: $a)`) + ` y: ` + page(`(first: $b)`) + ` }`,
			vars: map[string]any{"a": 400, "b": 600}, dynamic: true, want: 1000},
		{name: "@include counts what it may include", query: `query($kids: Boolean = false) { resources(first: 10) { edges { node { children @include(if: $kids) { name } } } } }`,
			want: 10 + 10*childrenPerObject},
		{name: "clusters and facets hold no objects", query: `{ clusters { name resources { resource } } facets(by: KIND) { value count } }`, want: 0},
		{name: "introspection", query: `{ __schema { types { name fields { name } } } __typename }`, want: 0},
		{name: "a subscription: one event", query: `subscription { resourceEvents { type cursor resource { name children { name } } } }`,
			want: 1 + childrenPerObject},
		{name: "the example of docs/graphql.md", query: `{
			deployments: resources(filter: {kinds: ["Deployment.apps"]}, first: 50) {
				edges { node { name
					children { name
						children { name owners { name } } } } }
			}
			pods: resources(filter: {kinds: ["Pod"]}) { totalCount edges { cursor } }
			one: resource(cluster: "prod", kind: "Pod", namespace: "web", name: "web-1") { owners { name } }
		}`, want: 2902},
		{name: "a filter through a relation counts its default limit", query: `{ resources(first: 10, filter: {through: {nodes: {labelSelector: "zone=a"}}}) { edges { cursor } } }`,
			want: 10 + 1000},
		{name: "a filter through relations counts their limits", query: `{ resources(first: 10, filter: {through: {nodes: {limit: 50}, owners: {kinds: ["Deployment.apps"], limit: 7}}}) { totalCount } }`,
			want: 57},
		{name: "a limit over the maximum counts the maximum", query: `{ resources(first: 0, filter: {through: {nodes: {limit: 99999}}}) { totalCount } }`,
			want: 10000},
		{name: "a filter without through counts nothing more", query: `{ resources(first: 10, filter: {kinds: ["Pod"]}) { totalCount } }`, want: 0},
		{name: "a filter through a relation from a variable", query: `query($f: ResourceFilter) { resources(first: 10, filter: $f) { totalCount } }`,
			vars: map[string]any{"f": map[string]any{"through": map[string]any{"owners": map[string]any{"limit": 20.0}}}}, dynamic: true, want: 20},
		{name: "a limit from a variable", query: `query($n: Int) { resources(filter: {through: {nodes: {limit: $n}}}) { totalCount } }`,
			vars: map[string]any{"n": 30}, dynamic: true, want: 30},
		{name: "a filter variable without through", query: `query($f: ResourceFilter) { resources(first: 10, filter: $f) { totalCount } }`,
			vars: map[string]any{"f": map[string]any{"kinds": []any{"Pod"}}}, dynamic: true, want: 0},
		{name: "a clusterHealth subscription", query: `subscription { clusterHealth { name resources { resource } } }`, want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, static, err := compute(t, schema, tc.query, tc.vars, opts)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("cost %d, want %d", got, tc.want)
			}
			if static == tc.dynamic {
				t.Errorf("static %v, want %v", static, !tc.dynamic)
			}
		})
	}
}

// TestComputeTooManyFields checks the bound on the fields an operation
// selects: at maxExpandedFields it is costed, one more is ErrTooManyFields
// (whatever the variables: it is static).
func TestComputeTooManyFields(t *testing.T) {
	schema := engineSchema(t)
	for _, tc := range []struct {
		name    string
		aliases int // the resource field counts one more
		wantErr error
	}{
		{name: "at the bound", aliases: maxExpandedFields - 1},
		{name: "over the bound", aliases: maxExpandedFields, wantErr: ErrTooManyFields},
	} {
		t.Run(tc.name, func(t *testing.T) {
			query := `{ resource(cluster: "c1", kind: "Pod", name: "x") {` + aliases(tc.aliases, "name") + ` } }`
			n, static, err := compute(t, schema, query, nil, Options{DefaultPageSize: 100, MaxPageSize: 1000})
			if !errors.Is(err, tc.wantErr) || !static {
				t.Fatalf("cost %d, static %v, error %v; want static, error %v", n, static, err, tc.wantErr)
			}
			if err == nil && n != 1 {
				t.Errorf("cost %d, want 1", n)
			}
		})
	}
}
