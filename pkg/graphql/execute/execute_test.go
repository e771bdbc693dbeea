package execute

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/graphql-go/graphql"
	"github.com/graphql-go/graphql/gqlerrors"
	"github.com/graphql-go/graphql/language/ast"
	"github.com/graphql-go/graphql/language/parser"

	"github.com/fleetcache/fleetcache/pkg/graphql/document"
)

// The values of the test schema.
type (
	dog struct {
		Name    string
		Barks   bool
		Friends []any
	}
	cat struct {
		Name  string
		Lives int
	}
	// robot is a value no type of the schema accepts.
	robot struct{ Name string }
)

var errFailed = errors.New("failed on purpose")

// testSchema is a schema with what fleetcache's does not have yet
// (interfaces, unions, types decided by ResolveType and by IsTypeOf) and
// fields that fail in every position, nullable or not.
func testSchema(t testing.TB) *graphql.Schema {
	t.Helper()
	named := graphql.NewInterface(graphql.InterfaceConfig{
		Name:   "Named",
		Fields: graphql.Fields{"name": {Type: graphql.NewNonNull(graphql.String)}},
	})
	var dogType, catType *graphql.Object
	named.ResolveType = func(p graphql.ResolveTypeParams) *graphql.Object {
		switch p.Value.(type) {
		case *dog:
			return dogType
		case *cat:
			return catType
		}
		return nil
	}
	fail := func(graphql.ResolveParams) (any, error) { return nil, errFailed }
	dogType = graphql.NewObject(graphql.ObjectConfig{
		Name:       "Dog",
		Interfaces: []*graphql.Interface{named},
		IsTypeOf:   func(p graphql.IsTypeOfParams) bool { _, ok := p.Value.(*dog); return ok },
		Fields: graphql.FieldsThunk(func() graphql.Fields {
			return graphql.Fields{
				"name":    {Type: graphql.NewNonNull(graphql.String)},
				"barks":   {Type: graphql.Boolean},
				"friends": {Type: graphql.NewList(named)},
				"strictFriends": {Type: graphql.NewList(graphql.NewNonNull(named)),
					Resolve: func(p graphql.ResolveParams) (any, error) { return p.Source.(*dog).Friends, nil }},
				"fail":        {Type: graphql.String, Resolve: fail},
				"failNonNull": {Type: graphql.NewNonNull(graphql.String), Resolve: fail},
			}
		}),
	})
	catType = graphql.NewObject(graphql.ObjectConfig{
		Name:       "Cat",
		Interfaces: []*graphql.Interface{named},
		IsTypeOf:   func(p graphql.IsTypeOfParams) bool { _, ok := p.Value.(*cat); return ok },
		Fields: graphql.Fields{
			"name":  {Type: graphql.NewNonNull(graphql.String)},
			"lives": {Type: graphql.NewNonNull(graphql.Int)},
			"nullLives": {Type: graphql.NewNonNull(graphql.Int),
				Resolve: func(graphql.ResolveParams) (any, error) { return nil, nil }},
		},
	})
	pet := graphql.NewUnion(graphql.UnionConfig{Name: "Pet", Types: []*graphql.Object{dogType, catType}})
	color := graphql.NewEnum(graphql.EnumConfig{Name: "Color", Values: graphql.EnumValueConfigMap{
		"RED": {Value: "red"}, "BLUE": {Value: "blue"},
	}})
	input := graphql.NewInputObject(graphql.InputObjectConfig{Name: "Input", Fields: graphql.InputObjectConfigFieldMap{
		"a": {Type: graphql.String, DefaultValue: "dflt"},
		"b": {Type: graphql.NewList(graphql.Int)},
	}})
	rex := &dog{Name: "rex", Barks: true}
	tom := &cat{Name: "tom", Lives: 9}
	rex.Friends = []any{tom, &dog{Name: "fido"}}
	pets := []any{rex, tom, nil}
	query := graphql.NewObject(graphql.ObjectConfig{Name: "Query", Fields: graphql.Fields{
		"pets":        {Type: graphql.NewList(pet), Resolve: func(graphql.ResolveParams) (any, error) { return pets, nil }},
		"named":       {Type: graphql.NewList(named), Resolve: func(graphql.ResolveParams) (any, error) { return pets, nil }},
		"strict":      {Type: graphql.NewList(graphql.NewNonNull(named)), Resolve: func(graphql.ResolveParams) (any, error) { return pets, nil }},
		"dog":         {Type: dogType, Resolve: func(graphql.ResolveParams) (any, error) { return rex, nil }},
		"mustDog":     {Type: graphql.NewNonNull(dogType), Resolve: func(graphql.ResolveParams) (any, error) { return rex, nil }},
		"cat":         {Type: catType, Resolve: func(graphql.ResolveParams) (any, error) { return tom, nil }},
		"robot":       {Type: named, Resolve: func(graphql.ResolveParams) (any, error) { return &robot{Name: "r2"}, nil }},
		"robotPet":    {Type: pet, Resolve: func(graphql.ResolveParams) (any, error) { return &robot{Name: "r2"}, nil }},
		"wrongObject": {Type: dogType, Resolve: func(graphql.ResolveParams) (any, error) { return tom, nil }},
		"fail":        {Type: graphql.String, Resolve: fail},
		"failNonNull": {Type: graphql.NewNonNull(graphql.String), Resolve: fail},
		"notList":     {Type: graphql.NewList(graphql.String), Resolve: func(graphql.ResolveParams) (any, error) { return 3, nil }},
		"nan":         {Type: graphql.Float, Resolve: func(graphql.ResolveParams) (any, error) { return math.NaN(), nil }},
		"listPtr": {Type: graphql.NewList(graphql.Int),
			Resolve: func(graphql.ResolveParams) (any, error) { l := []int{1, 2}; return &l, nil }},
		"echo": {Type: graphql.String,
			Args: graphql.FieldConfigArgument{
				"s": {Type: graphql.String}, "n": {Type: graphql.Int, DefaultValue: 3}, "l": {Type: graphql.NewList(graphql.Int)},
				"c": {Type: color}, "i": {Type: input},
			},
			Resolve: func(p graphql.ResolveParams) (any, error) {
				b, err := json.Marshal(p.Args)
				return string(b), err
			}},
	}})
	s, err := graphql.NewSchema(graphql.SchemaConfig{Query: query, Types: []graphql.Type{dogType, catType}})
	if err != nil {
		t.Fatal(err)
	}
	return &s
}

// oracleCases are documents over testSchema, with coerced variables.
var oracleCases = []struct {
	name, query string
	vars        map[string]any
}{
	{name: "interface fragments", query: `{ named { __typename name ... on Dog { barks friends { name ... on Cat { lives } } } ... on Cat { lives } } }`},
	{name: "union fragments", query: `{ pets { __typename ... on Dog { name } ...C } } fragment C on Cat { name lives }`},
	{name: "fragment on an interface in an object", query: `{ dog { ...N barks } cat { ...N } } fragment N on Named { name }`},
	{name: "null in a list of non-null items", query: `{ strict { name } dog { name } }`},
	{name: "non-null items of a nested list", query: `{ dog { strictFriends { name } } }`},
	{name: "nullable field fails", query: `{ fail dog { name fail } }`},
	{name: "non-null field fails", query: `{ dog { name failNonNull } cat { name } }`},
	{name: "non-null root field fails", query: `{ dog { name } failNonNull }`},
	{name: "non-null object with a failing non-null field", query: `{ cat { name } mustDog { failNonNull } }`},
	{name: "null for a non-null scalar", query: `{ cat { name nullLives } }`},
	{name: "several errors", query: `{ a: fail b: fail dog { fail friends { ... on Dog { fail } } } }`},
	{name: "type resolving to no type", query: `{ robot { name } robotPet { __typename } }`},
	{name: "object of another type", query: `{ wrongObject { name } }`},
	{name: "not a list", query: `{ notList }`},
	{name: "NaN", query: `{ nan }`},
	{name: "pointer to a list", query: `{ listPtr }`},
	{name: "arguments", query: `{ a: echo b: echo(s: "x", n: 5, l: 7, c: RED, i: {b: [1, 2]}) c: echo(l: [1, 2], i: {a: "y"}) }`},
	{name: "variables", query: `query($s: String, $n: Int, $i: Input, $skip: Boolean!) { echo(s: $s, n: $n, i: $i) dog @skip(if: $skip) { name } cat { name @include(if: $skip) } }`,
		// As graphql-go coerces them: the input object's default filled in.
		vars: map[string]any{"s": "v", "n": 1, "i": map[string]any{"a": "dflt", "b": []any{3}}, "skip": true}},
	{name: "aliases and merges", query: `{ x: dog { name } x: dog { barks } y: dog { n: name } dog { ... on Dog { name } } }`},
	// Not __schema.types: graphql-go lists them in map order.
	{name: "introspection", query: `{ __schema { queryType { name } directives { name args { name defaultValue } } }
		__type(name: "Named") { name kind fields { name type { kind name ofType { kind name } } } possibleTypes { name } } }`},
	{name: "typename at the root", query: `{ __typename }`},
}

// TestAgainstGraphQLGo checks the executor against graphql-go's executor
// over testSchema: the same data and the same errors, located alike.
func TestAgainstGraphQLGo(t *testing.T) {
	schema := testSchema(t)
	for _, tc := range oracleCases {
		t.Run(tc.name, func(t *testing.T) {
			doc, op := parse(t, schema, tc.query)
			want := graphql.Execute(graphql.ExecuteParams{Schema: *schema, AST: doc, Args: tc.vars, Context: t.Context()})
			for run := range 2 { // the second from the same plan
				p, _, err := Compile(schema, doc, op, tc.vars, nil)
				if err != nil {
					t.Fatal(err)
				}
				data, errs, err := Write(t.Context(), nil, p, nil, nil, math.MaxInt)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(normalized(t, want.Data, want.Errors), normalized(t, json.RawMessage(data), errs)); diff != "" {
					t.Fatalf("run %d: differs from graphql-go (-graphql-go +executor):\n%s\nexecutor wrote %s", run, diff, data)
				}
			}
		})
	}
}

// normalized returns data and errors as JSON values, the errors in a fixed
// order (graphql-go resolves sibling fields in map order).
func normalized(t testing.TB, data any, errs []gqlerrors.FormattedError) any {
	t.Helper()
	var out struct {
		Data   any
		Errors []any
	}
	b, err := json.Marshal(data)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &out.Data); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	var keys [][]byte
	for _, e := range errs {
		e.Extensions = nil
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, b)
	}
	slices.SortFunc(keys, bytes.Compare)
	for _, k := range keys {
		var v any
		if err := json.Unmarshal(k, &v); err != nil {
			t.Fatal(err)
		}
		out.Errors = append(out.Errors, v)
	}
	return out
}

// TestOrder checks that objects' fields come in the order the operation
// selects them, fragments expanded in place.
func TestOrder(t *testing.T) {
	schema := testSchema(t)
	doc, op := parse(t, schema, `{ z: cat { lives ...N } a: dog { barks ... on Named { name } } } fragment N on Named { name }`)
	p, _, err := Compile(schema, doc, op, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	data, errs, err := Write(t.Context(), nil, p, nil, nil, math.MaxInt)
	if err != nil || errs != nil {
		t.Fatal(err, errs)
	}
	if want := `{"z":{"lives":9,"name":"tom"},"a":{"barks":true,"name":"rex"}}`; string(data) != want {
		t.Errorf("wrote %s, want %s", data, want)
	}
}

// TestPanic checks that a resolver's panic makes its field null, with an
// error that carries it (the engine logs it and answers INTERNAL), and
// that execution goes on.
func TestPanic(t *testing.T) {
	q := graphql.NewObject(graphql.ObjectConfig{Name: "Query", Fields: graphql.Fields{
		"boom": {Type: graphql.String, Resolve: func(graphql.ResolveParams) (any, error) { panic("boom") }},
		"ok":   {Type: graphql.String, Resolve: func(graphql.ResolveParams) (any, error) { return "fine", nil }},
	}})
	s, err := graphql.NewSchema(graphql.SchemaConfig{Query: q})
	if err != nil {
		t.Fatal(err)
	}
	doc, op := parse(t, &s, `{ boom ok }`)
	p, _, err := Compile(&s, doc, op, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	data, errs, err := Write(t.Context(), nil, p, nil, nil, math.MaxInt)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"boom":null,"ok":"fine"}`; string(data) != want {
		t.Errorf("wrote %s, want %s", data, want)
	}
	var pe *PanicError
	if len(errs) != 1 || !errors.As(Cause(errs[0]), &pe) || pe.Value != "boom" || !strings.Contains(string(pe.Stack), "TestPanic") {
		t.Fatalf("errors %v, want one carrying the panic and its stack", errs)
	}
	if diff := cmp.Diff([]any{"boom"}, errs[0].Path); diff != "" {
		t.Errorf("path (-want +got):\n%s", diff)
	}
}

// TestTooLarge checks that writing stops once the data pass the limit.
func TestTooLarge(t *testing.T) {
	schema := testSchema(t)
	doc, op := parse(t, schema, `{ named { name } }`)
	p, _, err := Compile(schema, doc, op, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	full, _, err := Write(t.Context(), nil, p, nil, nil, math.MaxInt)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Write(t.Context(), nil, p, nil, nil, len(full)); err != nil {
		t.Errorf("a limit of the answer's size: %v", err)
	}
	if _, _, err := Write(t.Context(), nil, p, nil, nil, len(full)-1); !errors.Is(err, ErrTooLarge) {
		t.Errorf("a limit one byte short: %v, want ErrTooLarge", err)
	}
}

// TestStatic checks which plans hold for any variables: those whose
// variables reach only the root fields' arguments, which Write takes.
func TestStatic(t *testing.T) {
	schema := testSchema(t)
	for _, tc := range []struct {
		query  string
		static bool
	}{
		{`{ dog { name } }`, true},
		{`query($s: String) { echo(s: $s) }`, true},
		{`query($b: Boolean!) { dog { name @skip(if: $b) } }`, false},
		{`query($b: Boolean!) { dog @include(if: $b) { name } }`, false},
		{`query($b: Boolean!) { named { ... on Dog { barks @skip(if: $b) } } }`, false},
		{`query($b: Boolean!) { named { ...D } } fragment D on Dog { barks @skip(if: $b) }`, false},
	} {
		doc, op := parse(t, schema, tc.query)
		_, static, err := Compile(schema, doc, op, map[string]any{"b": true, "s": "x"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if static != tc.static {
			t.Errorf("%s: holds for any variables %v, want %v", tc.query, static, tc.static)
		}
	}
	// A kept plan answers with other variables given to Write.
	doc, op := parse(t, schema, `query($s: String) { echo(s: $s) }`)
	p, _, _ := Compile(schema, doc, op, map[string]any{"s": "first"}, nil)
	data, _, _ := Write(t.Context(), nil, p, nil, map[string]map[string]any{"echo": {"s": "second", "n": 3}}, math.MaxInt)
	if want := `{"echo":"{\"n\":3,\"s\":\"second\"}"}`; string(data) != want {
		t.Errorf("wrote %s, want %s", data, want)
	}
}

// parse parses and validates query against schema.
func parse(t testing.TB, schema *graphql.Schema, query string) (*ast.Document, *ast.OperationDefinition) {
	t.Helper()
	doc, err := parser.Parse(parser.ParseParams{Source: query})
	if err != nil {
		t.Fatal(err)
	}
	if v := graphql.ValidateDocument(schema, doc, nil); !v.IsValid {
		t.Fatalf("%s: %v", query, v.Errors)
	}
	for _, d := range doc.Definitions {
		if op, ok := d.(*ast.OperationDefinition); ok {
			return doc, op
		}
	}
	t.Fatal("no operation")
	return nil, nil
}

// FuzzAgainstGraphQLGo runs any valid document over testSchema both ways.
func FuzzAgainstGraphQLGo(f *testing.F) {
	for _, tc := range oracleCases {
		f.Add(tc.query)
	}
	schema := testSchema(f)
	f.Fuzz(func(t *testing.T, query string) {
		doc, err := parser.Parse(parser.ParseParams{Source: query})
		if err != nil || len(query) > 2000 || strings.Count(query, "{") > 12 {
			return
		}
		// What graphql-go's validation would crash on, the engine refuses
		// before.
		if len(document.NewLimits(12).Check(doc)) > 0 {
			return
		}
		if v := graphql.ValidateDocument(schema, doc, nil); !v.IsValid {
			return
		}
		var op *ast.OperationDefinition
		for _, d := range doc.Definitions {
			if o, ok := d.(*ast.OperationDefinition); ok {
				if op != nil {
					return
				}
				op = o
			}
		}
		if op == nil || op.Operation != ast.OperationTypeQuery || len(op.VariableDefinitions) > 0 {
			return
		}
		ctx := context.Background()
		want := graphql.Execute(graphql.ExecuteParams{Schema: *schema, AST: doc, Context: ctx})
		p, _, err := Compile(schema, doc, op, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		data, errs, err := Write(ctx, nil, p, nil, nil, math.MaxInt)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(normalized(t, want.Data, want.Errors), normalized(t, json.RawMessage(data), errs)); diff != "" {
			t.Fatalf("%s: differs from graphql-go (-graphql-go +executor):\n%s", fmt.Sprint(query), diff)
		}
	})
}

// FuzzAppendFloat checks AppendFloat against encoding/json, which the
// other leaves' values go through.
func FuzzAppendFloat(f *testing.F) {
	for _, v := range []float64{0, math.Copysign(0, -1), 1, -1.5, 0.1, 1e-6, 9.99e-7, 1e-7, -1.234e-300, 1e20, 1e21, 123456789e20, math.MaxFloat64, math.SmallestNonzeroFloat64, 12.5} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v float64) {
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return
		}
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendFloat(nil, v); string(got) != string(want) {
			t.Errorf("AppendFloat(%v) = %s, encoding/json writes %s", v, got, want)
		}
	})
}
