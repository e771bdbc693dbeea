package graphql

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/graphql-go/graphql/language/parser"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/fleetcache/fleetcache/internal/graphqltest"
	"github.com/fleetcache/fleetcache/pkg/graphql/document"
)

// FuzzLabelSelector sends selector text as a client does, in the
// labelSelector of a resources query, and checks the answer against
// labels.Selector.Matches over the fixture's objects: text that does not
// parse is a BAD_USER_INPUT error; text that parses selects exactly the
// objects whose labels match, and totalCount counts them.
func FuzzLabelSelector(f *testing.F) {
	for _, seed := range []string{
		"app=web", "app=web,tier in (fe,be),!canary", "app!=web", "tier notin (fe)", "canary", "!canary",
		"pod-template-hash", "team==web", "app in (db)", "app=web,app=db", "x>1", "", " ", ",", "app=", "app=(web)",
		"app in (web", "!app=web", "app=web, tier=fe", "example.com/x=y", "a/b/c=d",
	} {
		f.Add(seed)
	}
	fx := newFixture(f)
	s := newServer(f, fx.ix, fx.tracker, Options{DocumentCacheSize: 4})
	const query = `query($sel: String) {
  resources(filter: {labelSelector: $sel}, first: 1000) { totalCount edges { node { cluster resource namespace name } } }
}`
	f.Fuzz(func(t *testing.T, text string) {
		res := run(t, s, query, map[string]any{"sel": text})
		sel, parseErr := labels.Parse(text)
		if parseErr != nil {
			if got := codes(res); !slices.Equal(got, []string{CodeBadUserInput}) {
				t.Fatalf("selector %q (%v): error codes %v, want [%s]", text, parseErr, got, CodeBadUserInput)
			}
			return
		}
		if len(res.Errors) > 0 {
			t.Fatalf("selector %q parses, but the query failed: %v", text, res.Errors)
		}
		var want []string
		for key, o := range fx.byName {
			if sel.Matches(labels.Set(o.Labels.Map())) {
				want = append(want, key)
			}
		}
		var out struct {
			Resources struct {
				TotalCount int
				Edges      []struct {
					Node struct{ Cluster, Resource, Namespace, Name string }
				}
			}
		}
		b, err := json.Marshal(res.Data)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("decode %s: %v", b, err)
		}
		var got []string
		for _, e := range out.Resources.Edges {
			n := e.Node
			got = append(got, strings.Join([]string{n.Cluster, n.Resource, n.Namespace, n.Name}, "/"))
		}
		slices.Sort(want)
		slices.Sort(got)
		if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("selector %q (%s) (-want +got):\n%s", text, sel, diff)
		}
		if out.Resources.TotalCount != len(want) {
			t.Fatalf("selector %q: totalCount %d, want %d", text, out.Resources.TotalCount, len(want))
		}
	})
}

// tooDeep reports whether a document parses and selects deeper than
// fuzzMaxDepth, so that the server must refuse it whole. Documents whose
// brackets nest deeply are not parsed here: the server refuses those
// before parsing, and the parser recurses once per level.
func tooDeep(query string) bool {
	limits := document.NewLimits(fuzzMaxDepth)
	if limits.CheckText(query) != nil {
		return false
	}
	doc, err := parser.Parse(parser.ParseParams{Source: query})
	if err != nil {
		return false
	}
	regular, introspection := document.Depth(doc)
	return regular > limits.Depth || introspection > limits.IntrospectionDepth
}

// Limits of the server that FuzzExecuteLimits fuzzes: small, so that
// random documents reach them.
const (
	fuzzMaxDepth    = 5
	fuzzMaxPageSize = 5
)

// FuzzExecuteLimits sends any document and variables to a server with
// small limits: a document that selects deeper than MaxDepth never gets
// data, and no connection holds more than MaxPageSize edges. (The
// transports' fuzzers, pkg/transport, check what each transport adds.)
func FuzzExecuteLimits(f *testing.F) {
	for _, seed := range []struct{ query, variables string }{
		{`{ clusters { name status objectCount } }`, ``},
		{pageQuery, `{"first": 3, "filter": {"labelSelector": "app=web"}}`},
		{pageQuery, `{"first": 6}`},
		{`{ resource(cluster: "c1", kind: "Pod", namespace: "web", name: "web-1") { owners { owners { children { name } } } } }`, ``},
		{`{ resources { edges { node { ...A } } } } fragment A on Resource { owners { ...A } }`, ``},
		{`{ __schema { types { name fields { name type { name ofType { name } } } } } }`, ``},
		{`{ a: clusters { name } b: clusters { name } }`, ``},
	} {
		f.Add(seed.query, seed.variables)
	}
	fx := newFixture(f)
	s := newServer(f, fx.ix, fx.tracker, Options{MaxDepth: fuzzMaxDepth, MaxPageSize: fuzzMaxPageSize, DefaultPageSize: 2, DocumentCacheSize: 16})
	f.Fuzz(func(t *testing.T, query, variables string) {
		var vars map[string]any
		_ = json.Unmarshal([]byte(variables), &vars)
		res := s.Execute(t.Context(), Request{Query: query, Variables: vars})
		for _, e := range res.Errors {
			if code(e) == "" {
				t.Fatalf("error without a code: %+v", e)
			}
		}
		if res.Data == nil {
			return
		}
		if tooDeep(query) {
			t.Fatalf("a document deeper than %d got data", fuzzMaxDepth)
		}
		b, err := res.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var out struct{ Data any }
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		if n := graphqltest.LongestEdges(out.Data); n > fuzzMaxPageSize {
			t.Fatalf("a page of %d edges, over the limit of %d: %s", n, fuzzMaxPageSize, b)
		}
	})
}

// FuzzPrepare checks that any document text is parsed, validated and
// depth-checked without a panic, and that each error it reports has a code.
func FuzzPrepare(f *testing.F) {
	for _, q := range []string{
		`{ clusters { name } }`,
		pageQuery,
		`query($c: String!) { cluster(name: $c) { name } }`,
		`{ resources { edges { node { ...A } } } } fragment A on Resource { owners { ...A } }`,
		`{ __schema { types { name } } }`,
		`"""block""" { a(b: "\"") }`,
		`{`,
		`# comment` + "\n" + `{ facets(by: LABEL, labelKey: "app") { value } }`,
	} {
		f.Add(q)
	}
	fx := newFixture(f)
	s := newServer(f, fx.ix, fx.tracker, Options{DocumentCacheSize: 16})
	f.Fuzz(func(t *testing.T, q string) {
		doc, errs := s.prepare(q)
		if (doc.ast == nil) == (errs == nil) {
			t.Fatalf("prepare(%q) = %v, %v: want a document or errors", q, doc, errs)
		}
		for _, e := range errs {
			if code(e) == "" {
				t.Fatalf("prepare(%q): error without code: %v", q, e)
			}
		}
	})
}
