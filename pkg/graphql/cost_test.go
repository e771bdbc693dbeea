package graphql

import (
	"errors"
	"fmt"
	"github.com/fleetcache/fleetcache/pkg/index/views"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetcache/fleetcache/pkg/graphql/cost"
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

// TestCostOf checks the engine's use of package cost (whose tests hold
// the rules): its schema and page sizes go in, and a cost that holds for
// any variables is kept with the document while one that read a variable
// is computed again for each request's.
func TestCostOf(t *testing.T) {
	f := newFixture(t)
	s := newServer(t, f.ix, f.tracker, Options{DefaultPageSize: 100, MaxPageSize: 1000})
	for _, tc := range []struct {
		name  string
		query string
		vars  []map[string]any // one request each
		want  []int
		kept  bool
	}{
		{name: "the default page and the maximum page, kept", query: `{ a: resources { edges { cursor } } b: resources(first: 5000) { edges { cursor } } }`,
			vars: []map[string]any{nil, nil}, want: []int{1100, 1100}, kept: true},
		{name: "a variable first, computed each time", query: `query($n: Int) { resources(first: $n) { edges { cursor } } }`,
			vars: []map[string]any{{"n": 50}, {"n": 3}, nil}, want: []int{50, 3, 100}},
		{name: "a variable not read, kept", query: `query($kids: Boolean!) { resource(cluster: "c1", kind: "Pod", name: "x") { name children @include(if: $kids) { name } } }`,
			vars: []map[string]any{{"kids": true}, {"kids": false}}, want: []int{6, 6}, kept: true},
		{name: "a subscription, kept", query: `subscription { resourceEvents { resource { name } } }`,
			vars: []map[string]any{nil, nil}, want: []int{1, 1}, kept: true},
		{name: "a filter variable, kept, its through read each time", query: `query($f: ResourceFilter) { resources(filter: $f, first: 10) { edges { cursor } } }`,
			vars: []map[string]any{{"f": map[string]any{"kinds": []any{"Pod"}}}, {"f": map[string]any{"through": map[string]any{"nodes": map[string]any{}}}},
				{"f": map[string]any{"through": map[string]any{"nodes": map[string]any{"limit": 5}, "owners": map[string]any{"limit": 7.0}}}}, nil},
			want: []int{10, 1010, 22, 10}, kept: true},
		{name: "a limit variable in a literal filter, kept", query: `query($n: Int) { resources(filter: {through: {owners: {limit: $n}}}, first: 1) { edges { cursor } } }`,
			vars: []map[string]any{{"n": 30}, nil}, want: []int{31, 1001}, kept: true},
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
			var got []int
			for _, vars := range tc.vars {
				n, err := s.costOf(doc, op, vars)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, n)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("costs (-want +got):\n%s", diff)
			}
			if _, kept := doc.costs.Load(op); kept != tc.kept {
				t.Errorf("kept %v, want %v", kept, tc.kept)
			}
		})
	}
}

// TestCostOfExponentialFragments checks that an operation whose fragments
// expand to a billion fields is refused (cost.ErrTooManyFields) before it
// runs, rather than costed (or planned) field by field.
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
	ix := &countingIndex{Index: views.Of(f.ix), calls: map[string]int{}}
	s := newServerOf(t, ix, f.tracker, Options{})
	doc, errs := s.prepare(b.String())
	if errs != nil {
		t.Fatalf("prepare: %v", errs)
	}
	op, _ := selectOperation(doc.ast, "")
	if _, err := s.costOf(doc, op, nil); !errors.Is(err, cost.ErrTooManyFields) {
		t.Fatalf("cost: %v, want cost.ErrTooManyFields", err)
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

// TestResponseTooLarge checks the bound on an answer's encoding, with and
// without introspection alongside, for queries and subscription events.
func TestResponseTooLarge(t *testing.T) {
	f := newFixture(t)
	all := `resources(first: 1000) { edges { node { object } } }`
	var size int
	for _, tc := range []struct {
		name, query string
	}{
		{name: "data", query: `{ ` + all + ` }`},
		{name: "with introspection", query: `{ __schema { queryType { name } } ` + all + ` }`},
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
	ix := &countingIndex{Index: views.Of(f.ix), calls: map[string]int{}}
	s := newServerOf(t, ix, f.tracker, Options{})
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
