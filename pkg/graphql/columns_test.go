package graphql

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetcache/fleetcache/pkg/index"
)

// TestColumnsExecuted checks that Resource.columns of realistic Pods (a
// restarted container, whose Restarts cell holds a relative time) answers
// as graphql-go's executor does.
func TestColumnsExecuted(t *testing.T) {
	ix := index.New(index.Options{})
	for _, o := range newBenchPods(t, 3) {
		ix.Upsert(o)
	}
	s := newServer(t, ix, newFixture(t).tracker, Options{})
	q := `{ resources(first: 3) { edges { node { name columns { name value } ... on Resource { columns { value } } } } } }`
	got := s.Execute(t.Context(), Request{Query: q})
	if len(got.Errors) > 0 {
		t.Fatalf("errors: %s", mustJSON(t, got))
	}
	want := executeWithGraphQLGo(t, s, q, nil, "")
	if diff := cmp.Diff(jsonTokens(t, mustJSON(t, want)), jsonTokens(t, mustJSON(t, got))); diff != "" {
		t.Fatalf("the executor differs from graphql-go (-graphql-go +executor):\n%s", diff)
	}
	for _, cell := range []string{`{"name":"Ready","value":"2/2"}`, `{"name":"Status","value":"Running"}`, `"value":"1 (`, `ago)"`} {
		if !strings.Contains(string(mustJSON(t, got)), cell) {
			t.Errorf("the answer lacks %s: %s", cell, mustJSON(t, got))
		}
	}
}
