package graphql

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetcache/fleetcache/internal/graphqltest"
	"github.com/fleetcache/fleetcache/pkg/authn"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
	"github.com/fleetcache/fleetcache/pkg/index/views"
)

// The fixtures of internal/graphqltest, by the names these tests use.
var (
	podType    = graphqltest.PodType
	cmType     = graphqltest.ConfigMapType
	nsType     = graphqltest.NamespaceType
	deployType = graphqltest.DeploymentType
	rsType     = graphqltest.ReplicaSetType
	created    = graphqltest.Created
	uidOf      = graphqltest.UIDOf
	version    = graphqltest.Version
	waitFor    = graphqltest.WaitFor
)

// spec describes a synthetic object (graphqltest.Spec).
type spec struct {
	cluster     string
	typ         *object.Type
	namespace   string
	name        string
	labels      map[string]string
	annotations map[string]string
	owners      []*object.Object
	data        map[string]any
}

func newObject(t testing.TB, s spec) *object.Object {
	t.Helper()
	return graphqltest.NewObject(t, graphqltest.Spec{Cluster: s.cluster, Type: s.typ, Namespace: s.namespace, Name: s.name,
		Labels: s.labels, Annotations: s.annotations, Owners: s.owners, Data: s.data})
}

// fixture is graphqltest.Fixture.
type fixture struct {
	ix      *index.Index
	tracker *health.Tracker
	byName  map[string]*object.Object
	f       *graphqltest.Fixture
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	f := graphqltest.NewFixture(t)
	return &fixture{ix: f.Index, tracker: f.Tracker, byName: f.ByName, f: f}
}

func (f *fixture) object(t testing.TB, key string) *object.Object {
	t.Helper()
	return f.f.Object(t, key)
}

func newServer(t testing.TB, ix *index.Index, h Health, opts Options) *Server {
	t.Helper()
	return newServerOf(t, views.Of(ix), h, opts)
}

// newServerOf is newServer on any Index, such as a fake one.
func newServerOf(t testing.TB, ix Index, h Health, opts Options) *Server {
	t.Helper()
	s, err := New(ix, h, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// run executes a query and returns the result as a JSON response body.
func run(t testing.TB, s *Server, query string, vars map[string]any) *Result {
	t.Helper()
	return s.Execute(t.Context(), Request{Query: query, Variables: vars})
}

// data executes a query that must succeed and decodes its data into out.
func data(t testing.TB, s *Server, query string, vars map[string]any, out any) {
	t.Helper()
	decodeResult(t, run(t, s, query, vars), query, out)
}

// dataAs is data for the caller u.
func dataAs(t testing.TB, s *Server, u *authn.User, query string, out any) {
	t.Helper()
	decodeResult(t, s.Execute(authn.WithUser(t.Context(), u), Request{Query: query}), query, out)
}

// decodeResult decodes the data of a result that must have no error.
func decodeResult(t testing.TB, res *Result, query string, out any) {
	t.Helper()
	if len(res.Errors) > 0 {
		t.Fatalf("query failed: %v\nquery: %s", res.Errors, query)
	}
	b, err := json.Marshal(res.Data)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
}

// codes returns the extensions.code of each error.
func codes(res *Result) []string {
	var out []string
	for _, e := range res.Errors {
		out = append(out, code(e))
	}
	return out
}

var updateGolden = flag.Bool("update", os.Getenv("UPDATE_GOLDEN") != "", "rewrite golden files (or set UPDATE_GOLDEN=1)")

// golden compares got, indented, with testdata/<name>.json, or rewrites it
// with UPDATE_GOLDEN=1.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Indent(&buf, got, "", "  "); err != nil {
		t.Fatalf("indent %s: %v", got, err)
	}
	buf.WriteByte('\n')
	goldenFile(t, name+".json", buf.Bytes())
}

// goldenFile compares got with testdata/<name>, or rewrites it with
// UPDATE_GOLDEN=1.
func goldenFile(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *updateGolden {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with UPDATE_GOLDEN=1 to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got; UPDATE_GOLDEN=1 rewrites it):\n%s", path, diff)
	}
}

// countingIndex counts the calls of each method of an Index.
type countingIndex struct {
	Index
	calls map[string]int
}

func (c *countingIndex) ListUnion(fs []planner.Filter, after *object.Position, limit int) planner.Page {
	c.calls["List"]++
	return c.Index.ListUnion(fs, after, limit)
}

func (c *countingIndex) CountUnion(fs []planner.Filter) int {
	c.calls["Count"]++
	return c.Index.CountUnion(fs)
}

func (c *countingIndex) ListCountUnion(fs []planner.Filter, after *object.Position, limit int) (planner.Page, int) {
	c.calls["ListCount"]++
	return c.Index.ListCountUnion(fs, after, limit)
}

// blockingIndex's List blocks until release is closed: a read that takes
// longer than any timeout.
type blockingIndex struct {
	Index
	entered chan struct{}
	release chan struct{}
}

func (b *blockingIndex) ListUnion(fs []planner.Filter, after *object.Position, limit int) planner.Page {
	close(b.entered)
	<-b.release
	return b.Index.ListUnion(fs, after, limit)
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
