package graphql

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/graphql-go/graphql/language/ast"
	"github.com/graphql-go/graphql/testutil"
)

// executionCases are operations over the fixture, each with whether it
// answers without errors.
var executionCases = []struct {
	name   string
	query  string
	vars   map[string]any
	opName string
	ok     bool
}{
	{name: "clusters", ok: true, query: `{ clusters { name status lastSyncTime lastEventTime objectCount message
		resources { resource kind status objectCount lastError } } }`},
	{name: "cluster", ok: true, query: `{ c1: cluster(name: "c1") { name status } none: cluster(name: "none") { name } }`},
	{name: "resource by key", ok: true, query: `{ resource(cluster: "c1", kind: "ConfigMap", namespace: "web", name: "settings") {
		cluster resource apiVersion kind namespace name uid resourceVersion labels annotations creationTimestamp object } }`},
	{name: "cluster-scoped resource", ok: true, query: `{ resource(cluster: "c2", kind: "Namespace", name: "web") { namespace name labels } }`},
	{name: "missing resource", ok: true, query: `{ resource(cluster: "c2", kind: "Pod", namespace: "web", name: "none") { name } }`},
	{name: "page with filter", ok: true, query: `{ resources(filter: {namespaces: ["web"], labelSelector: "app=web,tier in (fe,be),!canary"}, first: 3) {
		totalCount revision staleClusters pageInfo { hasNextPage endCursor } edges { cursor node { cluster kind name } } } }`},
	{name: "owners and children", ok: true, query: `{
		d: resources(filter: {clusters: "c1", kinds: "Deployment.apps"}) { edges { node { name children { kind name children { name owners { name } } } } } }
		p: resources(filter: {ownerUid: "uid-c1-replicasets.apps-web-web-abc"}) { totalCount edges { node { name owners { kind name owners { name } } } } } }`},
	{name: "facets", ok: true, query: `{
		byCluster: facets(by: CLUSTER) { value count }
		byLabel: facets(by: LABEL, labelKey: "app", filter: {namespaces: ["web"]}) { value count }
		byKind: facets(by: KIND) { value count }
		byNamespace: facets(by: NAMESPACE, filter: {clusters: ["c1", "c2"]}) { count value } }`},
	{name: "typename", ok: true, query: `{ __typename resources(first: 1) { __typename edges { __typename node { __typename name } } }
		clusters { t: __typename } }`},
	{name: "merged fields", ok: true, query: `{ resources(first: 2) { edges { node { name } } edges { cursor node { kind name } } totalCount } }`},
	{name: "fragments", ok: true, query: `query { resources(first: 4) { ...Conn } }
		fragment Conn on ResourceConnection { edges { node { ...R ... on Resource { uid } ... on Resource { kind } } } pageInfo { ...P } }
		fragment R on Resource { name ...R2 }
		fragment R2 on Resource { namespace labels }
		fragment P on PageInfo { endCursor hasNextPage }`},
	{name: "literal directives", ok: true, query: `{ clusters { name @skip(if: true) status @include(if: false) message @include(if: true)
		objectCount @skip(if: false) @include(if: true) ... on Cluster @skip(if: true) { lastSyncTime } ... on Cluster @include(if: true) { lastEventTime } } }`},
	{name: "variables", ok: true, query: `query($f: ResourceFilter, $n: Int = 2, $after: String, $skip: Boolean!) {
		resources(filter: $f, first: $n, after: $after) { totalCount edges { node { name @skip(if: $skip) kind } } } }`,
		vars: map[string]any{"f": map[string]any{"clusters": "c1", "labelSelector": "app=web"}, "skip": false}},
	{name: "variables skipping", ok: true, query: `query($f: ResourceFilter, $n: Int = 2, $after: String, $skip: Boolean!) {
		resources(filter: $f, first: $n, after: $after) { totalCount edges { node { name @skip(if: $skip) kind } } } }`,
		vars: map[string]any{"n": 1, "skip": true}},
	{name: "null variable with a default", ok: true, query: `query($n: Int = 2) { resources(first: $n) { edges { node { name } } } }`,
		vars: map[string]any{"n": nil}},
	{name: "directive variable default", ok: true, query: `query($show: Boolean = true) { clusters { name @include(if: $show) status } }`},
	{name: "variables in literals", ok: true, query: `query($c: String!, $ns: [String!]) {
		resources(filter: {clusters: [$c], namespaces: $ns, nameContains: "web"}) { totalCount edges { node { cluster namespace name } } } }`,
		vars: map[string]any{"c": "c2", "ns": "web"}},
	{name: "enum variable", ok: true, query: `query($by: FacetKey!) { facets(by: $by) { value count } }`, vars: map[string]any{"by": "NAMESPACE"}},
	{name: "operation name", ok: true, opName: "Two", query: `query One { clusters { name } } query Two { cluster(name: "c3") { name status message } }`},
	{name: "first zero", ok: true, query: `{ resources(first: 0) { totalCount pageInfo { hasNextPage endCursor } edges { cursor } } }`},
	{name: "field selector and fields", ok: true, query: `{ resources(filter: {fieldSelector: "data.color=blue,cluster!=c3"}) {
		totalCount edges { node { name c: field(path: "cluster") color: field(path: "data.color") none: field(path: "status.phase")
		owner: field(path: "metadata.annotations[\"owner\"]") } } }
		p: resources(filter: {fieldSelector: "metadata.ownerReferences[].kind in (ReplicaSet)"}) { edges { node { name
		field(path: "metadata.ownerReferences[].name") } } } }`},
	{name: "identity", ok: true, query: `{ resources(first: 20) { edges { node { cluster namespace name kind uid resourceVersion apiVersion } } } }`},
	{name: "columns", ok: true, query: `{ resources(first: 20) { edges { node { kind name columns { name value } c: columns { value } } } } }`},
	{name: "columns with ages and priorities", ok: true, query: `{ resources(first: 20) { edges { node { kind name
		columns(age: true) { name value priority } c: columns(age: false) { name priority } } } } }`},
	{name: "columns with an age variable", ok: true, query: `query($age: Boolean) { resources(first: 5) { edges { node { columns(age: $age) { name priority } } } } }`,
		vars: map[string]any{"age": true}},
	{name: "field with a variable", ok: true, query: `query($p: String!) { resources(first: 3) { edges { node { field(path: $p) } } } }`,
		vars: map[string]any{"p": "metadata.name"}},
	{name: "field with an absent variable", query: `query($p: String) { resources(first: 1) { edges { node { field(path: $p) } } } }`},
	{name: "bad field path", query: `{ resources(first: 1) { edges { node { field(path: "a..b") } } } }`},
	{name: "bad field selector", query: `{ resources(filter: {fieldSelector: "a>b"}) { totalCount } }`},

	{name: "negative first", query: `{ resources(first: -1) { totalCount } }`},
	{name: "bad selector", query: `{ resources(filter: {labelSelector: "app in (web"}) { totalCount } }`},
	{name: "bad cursor", query: `{ resources(after: "garbage") { totalCount } }`},
	{name: "bad variable", query: `query($n: Int) { resources(first: $n) { totalCount } }`, vars: map[string]any{"n": "many"}},
	{name: "missing variable", query: `query($skip: Boolean!) { clusters { name @skip(if: $skip) } }`},
	{name: "introspection", ok: true, query: `{ __schema { queryType { name } } }`},
	{name: "type introspection", ok: true, query: `{ __type(name: "Resource") { name } clusters { name } }`},
	{name: "sorted page", query: `{ resources(sort: [{field: "metadata.name", order: DESC}, {field: "cluster"}], first: 4) {
		edges { cursor node { cluster name } } pageInfo { endCursor hasNextPage } } }`, ok: true},
	{name: "error after partial data", query: `{ clusters { name } resources(first: 2000) { totalCount } }`},
}

// TestExecution checks that the executor writes exactly what graphql-go's
// executor would: the same JSON, token for token, in the same order,
// errors included.
func TestExecution(t *testing.T) {
	f := newFixture(t)
	s := newServer(t, f.ix, f.tracker, Options{})
	for _, tc := range executionCases {
		t.Run(tc.name, func(t *testing.T) {
			for i := range 2 { // the second time from the cached plan
				got := s.Execute(t.Context(), Request{Query: tc.query, Variables: tc.vars, OperationName: tc.opName})
				want := executeWithGraphQLGo(t, s, tc.query, tc.vars, tc.opName)
				if diff := cmp.Diff(jsonTokens(t, comparable(t, want)), jsonTokens(t, comparable(t, got))); diff != "" {
					t.Fatalf("run %d: the executor differs from graphql-go (-graphql-go +executor):\n%s", i, diff)
				}
				if ok := len(got.Errors) == 0; ok != tc.ok {
					t.Fatalf("run %d: answered without errors %v, want %v: %s", i, ok, tc.ok, mustJSON(t, got))
				}
			}
		})
	}
}

// TestPlainVariables checks that the variables direct execution takes as
// they are given are those graphql-go coerces to themselves, and that it
// leaves every other to graphql-go.
func TestPlainVariables(t *testing.T) {
	f := newFixture(t)
	s := newServer(t, f.ix, f.tracker, Options{})
	const query = `query($c: String!, $after: String, $skip: Boolean!, $show: Boolean = true) {
		resources(filter: {clusters: [$c]}, after: $after) { edges { node { name @skip(if: $skip) namespace @include(if: $show) } } } }`
	for _, tc := range []struct {
		name  string
		vars  map[string]any
		plain bool
	}{
		{"all given", map[string]any{"c": "c1", "after": "x", "skip": false, "show": true}, true},
		{"more given than defined", map[string]any{"c": "c1", "after": "x", "skip": true, "show": false, "other": 1}, true},
		{"one absent", map[string]any{"c": "c1", "after": "x", "skip": false}, false},
		{"null", map[string]any{"c": "c1", "after": nil, "skip": false, "show": true}, false},
		{"a number for a String", map[string]any{"c": 3, "after": "x", "skip": false, "show": true}, false},
		{"a string for a Boolean", map[string]any{"c": "c1", "after": "x", "skip": "yes", "show": true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			op := preparedOperation(t, s, query)
			got, plain := plainVariables(op, tc.vars)
			if plain != tc.plain {
				t.Fatalf("plain = %v, want %v", plain, tc.plain)
			}
			want, res := s.probeVariables(t.Context(), op, tc.vars)
			if plain && res != nil {
				t.Fatalf("graphql-go does not coerce %v", tc.vars)
			}
			if diff := cmp.Diff(want, got); plain && diff != "" {
				t.Errorf("variables differ from graphql-go's (-graphql-go +plain):\n%s", diff)
			}
		})
	}
	// Types other than String and Boolean are graphql-go's to coerce.
	for _, q := range []string{`query($n: Int) { resources(first: $n) { totalCount } }`,
		`query($f: ResourceFilter) { resources(filter: $f) { totalCount } }`,
		`query($by: FacetKey!) { facets(by: $by) { value } }`,
		`query($ns: [String!]) { resources(filter: {namespaces: $ns}) { totalCount } }`} {
		if _, plain := plainVariables(preparedOperation(t, s, q), map[string]any{"n": 2.0, "f": map[string]any{}, "by": "KIND", "ns": "web"}); plain {
			t.Errorf("%s: taken as given", q)
		}
	}
}

// preparedOperation returns the one operation of query, parsed and
// validated by s.
func preparedOperation(t testing.TB, s *Server, query string) *ast.OperationDefinition {
	t.Helper()
	doc, errs := s.prepare(query)
	if errs != nil {
		t.Fatal(errs)
	}
	op, err := selectOperation(doc.ast, "")
	if err != nil {
		t.Fatal(err)
	}
	return op
}

// jsonTokens returns the tokens of a JSON text, in order: two texts with
// the same tokens differ only in spacing and escapes.
func jsonTokens(t testing.TB, b []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out []string
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		out = append(out, fmt.Sprintf("%T %v", tok, tok))
	}
}

// FuzzExecution runs any document and variables both ways, with the
// executor and with graphql-go's: the answers must be the same, errors
// included.
func FuzzExecution(f *testing.F) {
	for _, tc := range executionCases {
		f.Add(tc.query, string(mustJSON(f, tc.vars)), tc.opName)
	}
	fx := newFixture(f)
	s := newServer(f, fx.ix, fx.tracker, Options{DocumentCacheSize: 16})
	f.Fuzz(func(t *testing.T, query, vars, opName string) {
		var v map[string]any
		if json.Unmarshal([]byte(vars), &v) != nil {
			v = nil
		}
		got := s.Execute(t.Context(), Request{Query: query, Variables: v, OperationName: opName})
		o, res := s.Prepare(Request{Query: query, OperationName: opName})
		if res != nil || o.Type() != OperationQuery {
			return // not executed: no oracle to ask
		}
		want := executeWithGraphQLGo(t, s, query, v, opName)
		if diff := cmp.Diff(jsonTokens(t, comparable(t, want)), jsonTokens(t, comparable(t, got))); diff != "" {
			t.Fatalf("the executor differs from graphql-go (-graphql-go +executor):\n%s", diff)
		}
	})
}

// TestIntrospectionAgainstGraphQLGo checks the whole introspection query
// that GraphiQL and code generators send against graphql-go's answer,
// named things compared by name (graphql-go lists types and input fields
// in map order).
func TestIntrospectionAgainstGraphQLGo(t *testing.T) {
	f := newFixture(t)
	s := newServer(t, f.ix, f.tracker, Options{})
	got := s.Execute(t.Context(), Request{Query: testutil.IntrospectionQuery})
	if len(got.Errors) > 0 {
		t.Fatal(got.Errors)
	}
	want := executeWithGraphQLGo(t, s, testutil.IntrospectionQuery, nil, "")
	byName := func(r *Result) any {
		var out any
		if err := json.Unmarshal(mustJSON(t, r), &out); err != nil {
			t.Fatal(err)
		}
		sortByName(out)
		return out
	}
	if diff := cmp.Diff(byName(want), byName(got)); diff != "" {
		t.Fatalf("the executor differs from graphql-go (-graphql-go +executor):\n%s", diff)
	}
	if n := strings.Count(string(mustJSON(t, got)), `"kind":"OBJECT"`); n < 10 {
		t.Fatalf("%d object types", n)
	}
}

// sortByName sorts, everywhere in v, the lists of objects that have names.
func sortByName(v any) {
	switch v := v.(type) {
	case map[string]any:
		for _, e := range v {
			sortByName(e)
		}
	case []any:
		for _, e := range v {
			sortByName(e)
		}
		name := func(e any) string {
			m, _ := e.(map[string]any)
			n, _ := m["name"].(string)
			return n
		}
		slices.SortStableFunc(v, func(a, b any) int { return strings.Compare(name(a), name(b)) })
	}
}
