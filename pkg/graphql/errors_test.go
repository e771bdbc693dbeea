package graphql

import (
	"context"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/views"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"

	"github.com/fleetcache/fleetcache/pkg/graphql/cursor"
	"github.com/fleetcache/fleetcache/pkg/graphql/document"
)

// nested returns a query whose selections nest depth fields deep.
func nested(depth int) string {
	// resources(1) edges(2) node(3) then owners, each one more, then name.
	if depth < 4 {
		panic("nested: depth below 4")
	}
	return "{ resources { edges { node { " + strings.Repeat("owners { ", depth-4) + "name" + strings.Repeat(" }", depth-4) + " } } } }"
}

func TestErrorCodes(t *testing.T) {
	f := newFixture(t)
	s := newServer(t, f.ix, f.tracker, Options{})
	pageCursor := cursor.EncodePage(object.Position{Cluster: "c1", Namespace: "web", Name: "web-1", Kind: "Pod", Resource: "pods"})
	revCursor := cursor.EncodeRevision(cursor.Revision{Epoch: f.ix.Epoch(), Revision: 7})
	for _, tc := range []struct {
		name     string
		query    string
		vars     map[string]any
		op       string
		code     string
		message  string // a substring of the message
		executed bool
	}{
		{name: "syntax error", query: `{ resources { edges `, code: CodeParseFailed, message: "Syntax Error"},
		{name: "unknown field", query: `{ resources { nodes { name } } }`, code: CodeValidationFailed, message: `Cannot query field "nodes"`},
		{name: "unknown argument", query: `{ resources(last: 3) { totalCount } }`, code: CodeValidationFailed, message: `Unknown argument "last"`},
		{name: "wrong argument type", query: `{ resources(first: "ten") { totalCount } }`, code: CodeValidationFailed},
		{name: "no query", query: ``, code: CodeBadRequest},
		{
			name:  "invalid label selector",
			query: `{ resources(filter: {labelSelector: "app in (web"}) { totalCount } }`, code: CodeBadUserInput, executed: true,
			message: `invalid label selector "app in (web": unable to parse requirement: found '', expected: ',' or ')'`,
		},
		{
			name:  "invalid label selector in facets",
			query: `{ facets(by: CLUSTER, filter: {labelSelector: "=x"}) { value } }`, code: CodeBadUserInput, executed: true,
			message: `invalid label selector "=x": found '=', expected: !, identifier, or 'end of string'`,
		},
		{name: "malformed cursor", query: `{ resources(after: "not-a-cursor") { totalCount } }`, code: CodeBadUserInput, executed: true, message: "malformed cursor"},
		{name: "truncated cursor", query: `{ resources(after: "` + pageCursor[:len(pageCursor)-2] + `") { totalCount } }`, code: CodeBadUserInput, executed: true, message: "malformed cursor"},
		{name: "revision cursor as after", query: `{ resources(after: "` + revCursor + `") { totalCount } }`, code: CodeBadUserInput, executed: true,
			message: "a revision cursor, not a page cursor"},
		{name: "first below 0", query: `{ resources(first: -1) { totalCount } }`, code: CodeBadUserInput, executed: true, message: "first must be between 0 and 1000, got -1"},
		{name: "first above the maximum", query: `{ resources(first: 1001) { totalCount } }`, code: CodeBadUserInput, executed: true, message: "got 1001"},
		{name: "first through a variable", query: `query($n: Int) { resources(first: $n) { totalCount } }`, vars: map[string]any{"n": 5000}, code: CodeBadUserInput, executed: true},
		{name: "variable of the wrong type", query: `query($n: Int) { resources(first: $n) { totalCount } }`, vars: map[string]any{"n": "ten"}, code: CodeBadUserInput, message: `Variable "$n"`},
		{name: "missing required variable", query: `query($c: String!) { cluster(name: $c) { name } }`, code: CodeBadUserInput, message: `Variable "$c"`},
		{name: "facets by label without key", query: `{ facets(by: LABEL) { value } }`, code: CodeBadUserInput, executed: true},
		{name: "facets with key but not by label", query: `{ facets(by: KIND, labelKey: "app") { value } }`, code: CodeBadUserInput, executed: true},
		{name: "too deep", query: nested(13), code: CodeValidationFailed, message: "query depth 13 exceeds the limit of 12"},
		{name: "too deep through fragments", query: `{ resources { edges { node { ...A } } } }
			fragment A on Resource { owners { ...B } }
			fragment B on Resource { owners { owners { owners { owners { owners { owners { owners { owners { name } } } } } } } } }`,
			code: CodeValidationFailed, message: "query depth 13 exceeds the limit of 12"},
		{name: "fragment cycle", query: `{ resources { edges { node { ...A } } } }
			fragment A on Resource { owners { ...B } }
			fragment B on Resource { children { ...A } }`, code: CodeValidationFailed, message: "spread fragment"},
		{name: "fragment spreading itself beside fields", query: `{ resources { edges { node { ...R ... on Resource { uid } } } } }
			fragment R on Resource { name ...R }`, code: CodeValidationFailed, message: `cannot spread fragment "R" within itself`},
		{name: "bracket bomb", query: strings.Repeat("{", 1<<20), code: CodeValidationFailed, message: "the query depth limit is 12"},
		{name: "list bomb", query: `{ resources(filter: {clusters: ` + strings.Repeat("[", 5000) + `}) { totalCount } }`, code: CodeValidationFailed},
		{name: "too many selections", query: "{ clusters { " + strings.Repeat("name ", document.MaxSelections) + "} }", code: CodeValidationFailed,
			message: "more than 2000 selections"},
		{name: "unknown operation", query: `query A { clusters { name } }`, op: "B", code: CodeBadRequest, message: `no operation named "B"`},
		{name: "several operations, no name", query: `query A { clusters { name } } query B { clusters { name } }`, code: CodeBadRequest},
		{name: "mutation", query: `mutation { clusters { name } }`, code: CodeValidationFailed},
		{name: "subscription", query: `subscription { clusters { name } }`, code: CodeValidationFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := s.Execute(t.Context(), Request{Query: tc.query, Variables: tc.vars, OperationName: tc.op})
			if len(res.Errors) == 0 {
				t.Fatalf("no error; data %v", res.Data)
			}
			for _, e := range res.Errors {
				if code(e) != tc.code {
					t.Errorf("code = %q, want %q (%s)", code(e), tc.code, e.Message)
				}
			}
			if !strings.Contains(res.Errors[0].Message, tc.message) {
				t.Errorf("message %q does not contain %q", res.Errors[0].Message, tc.message)
			}
			if res.Executed != tc.executed {
				t.Errorf("executed = %v, want %v", res.Executed, tc.executed)
			}
			// Nothing else breaks: the server still answers.
			if res := run(t, s, `{ clusters { name } }`, nil); len(res.Errors) > 0 {
				t.Errorf("next query failed: %v", res.Errors)
			}
		})
	}
}

// TestGraphiQLIntrospectionFits checks that the deepest introspection query
// a GraphQL IDE sends passes the document limits.
func TestGraphiQLIntrospectionFits(t *testing.T) {
	f := newFixture(t)
	s := newServer(t, f.ix, f.tracker, Options{})
	// graphql-js 16's getIntrospectionQuery with every option: 15 deep.
	typeRef := "kind name" + strings.Repeat(" ofType { kind name", 9) + strings.Repeat(" }", 9)
	q := `query IntrospectionQuery { __schema { queryType { name } types { kind name
		fields(includeDeprecated: true) { name args { name type { ` + typeRef + ` } } type { ` + typeRef + ` } }
		inputFields { name type { ` + typeRef + ` } } } } }`
	if res := run(t, s, q, nil); len(res.Errors) > 0 {
		t.Errorf("introspection query refused: %v", res.Errors)
	}
}

func TestDocumentCache(t *testing.T) {
	f := newFixture(t)
	s := newServer(t, f.ix, f.tracker, Options{DocumentCacheSize: 2})
	q := `query($c: String!) { cluster(name: $c) { name status } }`
	for _, c := range []string{"c1", "c2", "c3"} {
		var got struct{ Cluster struct{ Name string } }
		data(t, s, q, map[string]any{"c": c}, &got)
		if got.Cluster.Name != c {
			t.Errorf("cluster = %q, want %q", got.Cluster.Name, c)
		}
	}
	if hits, misses := s.cacheStats(); hits != 2 || misses != 1 {
		t.Errorf("cache hits, misses = %d, %d; want 2, 1", hits, misses)
	}
	// Invalid documents are cached with their errors.
	bad := `{ clusters { nope } }`
	first := run(t, s, bad, nil)
	second := run(t, s, bad, nil)
	if diff := cmp.Diff(codes(first), codes(second)); diff != "" || len(first.Errors) == 0 {
		t.Errorf("cached invalid document answers differently: %v vs %v", first.Errors, second.Errors)
	}
	if hits, misses := s.cacheStats(); hits != 3 || misses != 2 {
		t.Errorf("cache hits, misses = %d, %d; want 3, 2", hits, misses)
	}
	// The LRU holds 2: a third query evicts the least recently used.
	run(t, s, `{ clusters { name } }`, nil)
	run(t, s, q, map[string]any{"c": "c1"})
	if hits, misses := s.cacheStats(); hits != 3 || misses != 4 {
		t.Errorf("after eviction: cache hits, misses = %d, %d; want 3, 4", hits, misses)
	}
	// Long documents are not cached.
	long := `{ clusters { name } }` + strings.Repeat(" ", maxCachedQuery)
	run(t, s, long, nil)
	run(t, s, long, nil)
	if hits, misses := s.cacheStats(); hits != 3 || misses != 6 {
		t.Errorf("long documents: cache hits, misses = %d, %d; want 3, 6", hits, misses)
	}
}

// TestConcurrentRequests shares cached documents between goroutines; run
// with -race.
func TestConcurrentRequests(t *testing.T) {
	f := newFixture(t)
	s := newServer(t, f.ix, f.tracker, Options{})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 20 {
				res := run(t, s, pageQuery, map[string]any{"first": 1 + (i+j)%5})
				if len(res.Errors) > 0 {
					t.Error(res.Errors)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestTimeout(t *testing.T) {
	f := newFixture(t)
	t.Run("expired before execution", func(t *testing.T) {
		s := newServer(t, f.ix, f.tracker, Options{Timeout: time.Nanosecond})
		res := run(t, s, `{ resources { totalCount edges { cursor } } }`, nil)
		if diff := cmp.Diff([]string{CodeTimeout}, codes(res)); diff != "" {
			t.Errorf("codes (-want +got):\n%s\n%v", diff, res.Errors)
		}
		if !res.Executed || res.Data != nil {
			t.Errorf("executed %v, data %v; want executed with null data", res.Executed, res.Data)
		}
	})
	t.Run("expired before execution, with variables", func(t *testing.T) {
		// Direct execution has graphql-go coerce the variables first: that
		// execution times out too, and the operation's reports it.
		s := newServer(t, f.ix, f.tracker, Options{Timeout: time.Nanosecond})
		res := run(t, s, `query($n: Int) { resources(first: $n) { totalCount } }`, map[string]any{"n": 2})
		if diff := cmp.Diff([]string{CodeTimeout}, codes(res)); diff != "" {
			t.Errorf("codes (-want +got):\n%s\n%v", diff, res.Errors)
		}
		if !res.Executed || res.Data != nil {
			t.Errorf("executed %v, data %v; want executed with null data", res.Executed, res.Data)
		}
	})
	t.Run("stuck resolver", func(t *testing.T) {
		bi := &blockingIndex{Index: views.Of(f.ix), entered: make(chan struct{}), release: make(chan struct{})}
		defer close(bi.release)
		s := newServerOf(t, bi, f.tracker, Options{Timeout: 200 * time.Millisecond})
		begin := time.Now()
		res := run(t, s, `{ resources { edges { cursor } } }`, nil)
		if took := time.Since(begin); took > 5*time.Second {
			t.Errorf("answered after %s, want soon after the 200ms timeout", took)
		}
		<-bi.entered
		if diff := cmp.Diff([]string{CodeTimeout}, codes(res)); diff != "" {
			t.Errorf("codes (-want +got):\n%s\n%v", diff, res.Errors)
		}
		if !strings.Contains(res.Errors[0].Message, "request timed out after 200ms") {
			t.Errorf("message = %q", res.Errors[0].Message)
		}
	})
	t.Run("canceled by the client", func(t *testing.T) {
		s := newServer(t, f.ix, f.tracker, Options{})
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		res := s.Execute(ctx, Request{Query: `{ resources { totalCount } }`})
		if diff := cmp.Diff([]string{CodeBadRequest}, codes(res)); diff != "" {
			t.Errorf("codes (-want +got):\n%s\n%v", diff, res.Errors)
		}
	})
}

func TestNewRejectsInconsistentOptions(t *testing.T) {
	f := newFixture(t)
	if _, err := New(views.Of(f.ix), f.tracker, Options{DefaultPageSize: 50, MaxPageSize: 10}); err == nil {
		t.Error("New accepted a default page size over the maximum")
	}
}

// panickingIndex panics on every Lookup: a bug in a read the engine makes.
type panickingIndex struct{ Index }

func (panickingIndex) Lookup(cluster, namespace, name string) []*object.Object {
	panic("lookup broke")
}

// TestPanicIsInternal checks that a panic in execution reaches the caller
// as an INTERNAL error at the field that panicked, the rest of the answer
// intact, and the log at error level with the operation's name.
func TestPanicIsInternal(t *testing.T) {
	f := newFixture(t)
	var mu sync.Mutex
	var logged []string
	logger := funcr.New(func(prefix, args string) {
		mu.Lock()
		logged = append(logged, args)
		mu.Unlock()
	}, funcr.Options{Verbosity: 0})
	s := newServerOf(t, panickingIndex{views.Of(f.ix)}, f.tracker, Options{Logger: logger})
	res := s.Execute(t.Context(), Request{Query: `query Broken { clusters { name } resource(cluster: "c1", kind: "Pod", namespace: "web", name: "web-1") { name } }`})
	if diff := cmp.Diff([]string{CodeInternal}, codes(res)); diff != "" {
		t.Fatalf("codes (-want +got):\n%s\n%v", diff, res.Errors)
	}
	if diff := cmp.Diff([]any{"resource"}, res.Errors[0].Path); diff != "" {
		t.Errorf("path (-want +got):\n%s", diff)
	}
	if strings.Contains(res.Errors[0].Message, "lookup broke") {
		t.Errorf("the caller reads the panic: %q", res.Errors[0].Message)
	}
	if b := string(mustJSON(t, res)); !strings.Contains(b, `"resource":null`) || !strings.Contains(b, `{"name":"c1"}`) {
		t.Errorf("answer %s: want the clusters and a null resource", b)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(logged) != 1 || !strings.Contains(logged[0], `"operation"="Broken"`) || !strings.Contains(logged[0], "lookup broke") || !strings.Contains(logged[0], `"error"=`) {
		t.Errorf("logged %q, want one error naming the operation and the panic", logged)
	}
}

// TestStartWaitsForPlans checks that a plan left running past its
// request's deadline is the Server's: Start returns only once it ended.
func TestStartWaitsForPlans(t *testing.T) {
	f := newFixture(t)
	bi := &blockingIndex{Index: views.Of(f.ix), entered: make(chan struct{}), release: make(chan struct{})}
	s := newServerOf(t, bi, f.tracker, Options{Timeout: 50 * time.Millisecond})
	ctx, cancel := context.WithCancel(t.Context())
	started := make(chan error, 1)
	go func() { started <- s.Start(ctx) }()
	res := run(t, s, `{ resources { edges { cursor } } }`, nil)
	<-bi.entered
	if diff := cmp.Diff([]string{CodeTimeout}, codes(res)); diff != "" {
		t.Fatalf("codes (-want +got):\n%s", diff)
	}
	cancel()
	select {
	case err := <-started:
		t.Fatalf("Start returned (%v) while a plan still runs", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(bi.release)
	if err := <-started; err != nil {
		t.Fatal(err)
	}
}
