package transport

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetcache/fleetcache/internal/nodetest"
	"github.com/google/go-cmp/cmp"
)

// nodePackages are the npm packages of the real-client tests, pinned.
var nodePackages = []string{"graphql-http@1.23.1", "graphql@16.15.0"}

// TestGraphQLOverHTTPAudits runs graphql-http's server audits, a real
// third-party client's check of GraphQL-over-HTTP conformance, against the
// server: every MUST passes; SHOULDs and MAYs that fail are logged. The
// schema graphql-js reads through introspection is compared with
// pkg/graphql/testdata/schema.graphql.
func TestGraphQLOverHTTPAudits(t *testing.T) {
	dir := nodetest.Install(t, nodePackages...)
	f := newFixture(t)
	endpoint := serve(t, newServer(t, f.ix, f.tracker, Options{}))

	out := nodetest.Run(t, dir, filepath.Join("testdata", "audit.js"), endpoint)
	var got struct {
		Audits []struct {
			ID, Name, Status string
			Reason           *string
		}
		SDL         *string
		SchemaError *string
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("decode audit output %s: %v", out, err)
	}
	if len(got.Audits) < 40 {
		t.Fatalf("only %d audits ran", len(got.Audits))
	}
	counts := map[string]int{}
	for _, a := range got.Audits {
		counts[a.Status]++
		reason := ""
		if a.Reason != nil {
			reason = *a.Reason
		}
		switch {
		case strings.HasPrefix(a.Name, "MUST") && a.Status != "ok":
			t.Errorf("audit %s failed: %s: %s", a.ID, a.Name, reason)
		case a.Status != "ok":
			t.Logf("audit %s (%s): %s: %s", a.ID, a.Status, a.Name, reason)
		}
	}
	t.Logf("graphql-http audits: %d ok, %d warn, %d notice, %d error", counts["ok"], counts["warn"], counts["notice"], counts["error"])

	if got.SchemaError != nil {
		t.Fatalf("graphql-js cannot build the schema from introspection: %s", *got.SchemaError)
	}
	// The engine's golden schema, rewritten with UPDATE_GOLDEN=1.
	golden := filepath.Join("..", "graphql", "testdata", "schema.graphql")
	if os.Getenv("UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(golden, []byte(*got.SDL+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), *got.SDL+"\n"); diff != "" {
		t.Errorf("schema through introspection (-golden +got):\n%s", diff)
	}
}
