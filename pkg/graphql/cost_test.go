package graphql

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// hundredPages is the query of issue 13: 100 aliases of a full page of
// objects, 100,000 objects in one answer.
var hundredPages = func() string {
	var b strings.Builder
	b.WriteString("{")
	for i := range 100 {
		fmt.Fprintf(&b, " a%d: resources(first: 1000) { edges { node { object } } }", i)
	}
	b.WriteString(" }")
	return b.String()
}()

func TestCost(t *testing.T) {
	f := newFixture(t)
	s := newServer(t, f.ix, f.tracker, Options{DefaultPageSize: 100, MaxPageSize: 1000})
	page := func(first string) string { return `resources` + first + ` { edges { node { name } } }` }
	for _, tc := range []struct {
		name  string
		query string
		vars  map[string]any
		want  int
	}{
		{name: "a page of the default size", query: `{ ` + page(``) + ` }`, want: 100},
		{name: "a page of first objects", query: `{ ` + page(`(first: 10)`) + ` }`, want: 10},
		{name: "edges count, nodes do not count again", query: `{ resources(first: 7) { edges { cursor } } }`, want: 7},
		{name: "no edges, no objects", query: `{ resources(first: 1000) { totalCount revision pageInfo { hasNextPage endCursor } } }`, want: 0},
		{name: "first over the maximum counts the maximum", query: `{ ` + page(`(first: 5000)`) + ` }`, want: 1000},
		{name: "first 0", query: `{ ` + page(`(first: 0)`) + ` }`, want: 0},
		{name: "negative first", query: `{ ` + page(`(first: -3)`) + ` }`, want: 0},
		{name: "aliases add up", query: `{ a: ` + page(`(first: 10)`) + ` b: ` + page(`(first: 20)`) + ` c: ` + page(``) + ` }`, want: 130},
		{name: "the issue's hundred pages", query: hundredPages, want: 100000},
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
		{name: "first from a variable", query: `query($n: Int) { ` + page(`(first: $n)`) + ` }`, vars: map[string]any{"n": 50}, want: 50},
		{name: "first from a variable decoded from JSON", query: `query($n: Int) { ` + page(`(first: $n)`) + ` }`, vars: map[string]any{"n": 50.0}, want: 50},
		{name: "first from a variable's default", query: `query($n: Int = 30) { ` + page(`(first: $n)`) + ` }`, want: 30},
		{name: "a variable given overrides its default", query: `query($n: Int = 30) { ` + page(`(first: $n)`) + ` }`, vars: map[string]any{"n": 3}, want: 3},
		{name: "a null variable: the default page", query: `query($n: Int) { ` + page(`(first: $n)`) + ` }`, vars: map[string]any{"n": nil}, want: 100},
		{name: "a variable not given: the default page", query: `query($n: Int) { ` + page(`(first: $n)`) + ` }`, want: 100},
		{name: "a variable over the maximum", query: `query($n: Int) { ` + page(`(first: $n)`) + ` }`, vars: map[string]any{"n": 1e12}, want: 1000},
		{name: "variables of several pages", query: `query($a: Int, $b: Int) { x: ` + page(`(first: $a)`) + ` y: ` + page(`(first: $b)`) + ` }`,
			vars: map[string]any{"a": 400, "b": 600}, want: 1000},
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
		{name: "a clusterHealth subscription", query: `subscription { clusterHealth { name resources { resource } } }`, want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc, errs := s.prepare(tc.query)
			if errs != nil {
				t.Fatalf("prepare: %v", errs)
			}
			op, err := selectOperation(doc.ast, "")
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.costOf(doc, op, tc.vars)
			if err != nil {
				t.Fatal(err)
			}
			if again, _ := s.costOf(doc, op, tc.vars); again != got {
				t.Errorf("cost %d, then %d", got, again)
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("cost %d, want %d", got, tc.want)
			}
		})
	}
}

// TestCostOfExponentialFragments checks that an operation whose fragments
// expand to a billion fields is refused after maxExpandedFields, rather
// than costed (or planned) field by field.
func TestCostOfExponentialFragments(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{ resource(cluster: "c1", kind: "Pod", name: "x") { ...f0 } }`)
	const levels, fanOut = 9, 10
	for i := range levels {
		fmt.Fprintf(&b, "\nfragment f%d on Resource {", i)
		for j := range fanOut {
			if i == levels-1 {
				fmt.Fprintf(&b, " a%d: name", j)
			} else {
				fmt.Fprintf(&b, " a%d: owners { ...f%d }", j, i+1)
			}
		}
		b.WriteString(" }")
	}
	f := newFixture(t)
	ix := &countingIndex{Index: f.ix, calls: map[string]int{}}
	s := newServer(t, ix, f.tracker, Options{})
	doc, errs := s.prepare(b.String())
	if errs != nil {
		t.Fatalf("prepare: %v", errs)
	}
	op, _ := selectOperation(doc.ast, "")
	if _, err := s.costOf(doc, op, nil); !errors.Is(err, errTooManyFields) {
		t.Fatalf("cost: %v, want errTooManyFields", err)
	}
	res := run(t, s, b.String(), nil)
	if diff := cmp.Diff([]string{CodeQueryTooComplex}, codes(res)); diff != "" || res.Executed {
		t.Errorf("executed %v, codes (-want +got):\n%s", res.Executed, diff)
	}
	if len(ix.calls) > 0 {
		t.Errorf("the index was read: %v", ix.calls)
	}
}

func TestFormatCount(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 100000: "100,000", 1234567: "1,234,567"} {
		if got := formatCount(n); got != want {
			t.Errorf("formatCount(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestResponseTooLarge checks the bound on an answer's encoding, when the
// operation runs directly and when graphql-go runs it (introspection
// alongside), for queries and subscription events.
func TestResponseTooLarge(t *testing.T) {
	f := newFixture(t)
	all := `resources(first: 1000) { edges { node { object } } }`
	var size int
	for _, tc := range []struct {
		name, query string
	}{
		{name: "direct", query: `{ ` + all + ` }`},
		{name: "graphql-go", query: `{ __schema { queryType { name } } ` + all + ` }`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			full := run(t, newServer(t, f.ix, f.tracker, Options{}), tc.query, nil)
			if len(full.Errors) > 0 {
				t.Fatalf("without a small limit: %v", full.Errors)
			}
			b, err := full.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			size = len(b)
			// A limit just over the answer lets it through; one below it
			// does not.
			if res := run(t, newServer(t, f.ix, f.tracker, Options{MaxResponseBytes: int64(size)}), tc.query, nil); len(res.Errors) > 0 {
				t.Errorf("limit of the answer's size: %v", res.Errors)
			}
			res := run(t, newServer(t, f.ix, f.tracker, Options{MaxResponseBytes: int64(size / 2)}), tc.query, nil)
			b, err = res.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{CodeResponseTooLarge}, codes(res)); diff != "" || !res.Executed || !strings.HasPrefix(string(b), `{"data":null,`) {
				t.Errorf("over the limit: %s; codes (-want +got):\n%s", b, diff)
			}
			if !strings.Contains(string(b), fmt.Sprintf("passed %s bytes", formatCount(size/2))) {
				t.Errorf("message does not give the limit: %s", b)
			}
		})
	}
	t.Run("subscription event", func(t *testing.T) {
		s := newServer(t, f.ix, f.tracker, Options{MaxResponseBytes: 64})
		sub, res := s.Subscribe(t.Context(), Request{Query: `subscription($since: String) { resourceEvents(since: $since) { resource { object } } }`,
			Variables: map[string]any{"since": epochCursor(s, 0)}})
		if sub == nil {
			t.Fatalf("subscribe: %v", res.Errors)
		}
		defer sub.Close()
		for range 2 { // each event is refused, and the subscription goes on
			res, err := sub.Next(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{CodeResponseTooLarge}, codes(res)); diff != "" {
				t.Errorf("event over the limit (-want +got):\n%s", diff)
			}
		}
	})
}

// BenchmarkCost measures the cost check of a portal's page query, which
// every query pays: kept with the document when first is a literal,
// computed again when it is a variable.
func BenchmarkCost(b *testing.B) {
	f := newFixture(b)
	s := newServer(b, f.ix, f.tracker, Options{})
	const fields = `{ totalCount pageInfo { hasNextPage endCursor } edges { cursor node { cluster namespace name kind labels creationTimestamp owners { kind name } } } }`
	for _, bc := range []struct {
		name, query string
		vars        map[string]any
	}{
		{name: "first=literal", query: `query($f: ResourceFilter) { resources(filter: $f, first: 50) ` + fields + ` }`},
		{name: "first=variable", query: `query($f: ResourceFilter, $n: Int) { resources(filter: $f, first: $n) ` + fields + ` }`, vars: map[string]any{"n": 50.0}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			doc, errs := s.prepare(bc.query)
			if errs != nil {
				b.Fatal(errs)
			}
			op, _ := selectOperation(doc.ast, "")
			b.ReportAllocs()
			for b.Loop() {
				if res := s.checkCost(doc, op, bc.vars); res != nil {
					b.Fatal(res.Errors)
				}
			}
		})
	}
}

// TestQueryTooComplexBeforeRunning sends the hundred pages: refused
// before anything runs, as an error before execution (HTTP 400 with
// application/graphql-response+json), with the cost and the limit in the
// message.
func TestQueryTooComplexBeforeRunning(t *testing.T) {
	f := newFixture(t)
	ix := &countingIndex{Index: f.ix, calls: map[string]int{}}
	s := newServer(t, ix, f.tracker, Options{})
	res := run(t, s, hundredPages, nil)
	if res.Executed || res.Data != nil || !cmp.Equal(codes(res), []string{CodeQueryTooComplex}) {
		t.Fatalf("got %+v; want no execution, %s", res, CodeQueryTooComplex)
	}
	if msg := res.Errors[0].Message; !strings.Contains(msg, "100,000 objects") || !strings.Contains(msg, "limit of 10,000") {
		t.Errorf("message does not give the cost and the limit: %s", msg)
	}
	if len(ix.calls) > 0 {
		t.Errorf("the index was read for a refused query: %v", ix.calls)
	}
	// Within the limit, the same page runs.
	res = run(t, s, `{ a: resources(first: 1000) { edges { node { object } } } }`, nil)
	if len(res.Errors) > 0 || ix.calls["List"] != 1 {
		t.Errorf("one page: %+v, index calls %v", res.Errors, ix.calls)
	}
}
