package graphql

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetcache/fleetcache/pkg/index"
)

// TestColumnsDirect checks that Resource.columns of realistic Pods (a
// restarted container, whose Restarts cell holds a relative time) is
// executed directly, and answers as graphql-go does.
func TestColumnsDirect(t *testing.T) {
	ix := index.New(index.Options{})
	for _, o := range newBenchPods(t, 3) {
		ix.Upsert(o)
	}
	s := newServer(t, ix, newFixture(t).tracker, Options{})
	q := `{ resources(first: 3) { edges { node { name columns { name value } ... on Resource { columns { value } } } } } }`
	before := s.direct.Load()
	got := s.Execute(t.Context(), Request{Query: q})
	if s.direct.Load() == before || len(got.Errors) > 0 {
		t.Fatalf("not executed directly: %s", mustJSON(t, got))
	}
	want := executeWithGraphQLGo(t, s, q, nil, "")
	if diff := cmp.Diff(jsonTokens(t, mustJSON(t, want)), jsonTokens(t, mustJSON(t, got))); diff != "" {
		t.Fatalf("direct execution differs from graphql-go (-graphql-go +direct):\n%s", diff)
	}
	for _, cell := range []string{`{"name":"Ready","value":"2/2"}`, `{"name":"Status","value":"Running"}`, `"value":"1 (`, `ago)"`} {
		if !strings.Contains(string(mustJSON(t, got)), cell) {
			t.Errorf("the answer lacks %s: %s", cell, mustJSON(t, got))
		}
	}
}
