package app_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/fleetcache/fleetcache/internal/app"
	"github.com/fleetcache/fleetcache/internal/graphiql"
)

// TestPlaygroundChoice checks which page a browser gets at /graphql for
// each serving.playground: GraphiQL by default when the binary holds it
// (make test builds it first), the basic playground when asked for.
func TestPlaygroundChoice(t *testing.T) {
	if !graphiql.Built() {
		t.Fatal("GraphiQL is not built into this test binary: run make ui (make test does) before go test")
	}
	for _, tt := range []struct {
		name, playground, wantTitle string
	}{
		{name: "default", playground: "", wantTitle: "<title>fleetcache GraphiQL</title>"},
		{name: "graphiql", playground: app.PlaygroundGraphiQL, wantTitle: "<title>fleetcache GraphiQL</title>"},
		{name: "basic", playground: app.PlaygroundBasic, wantTitle: "<title>fleetcache GraphQL playground</title>"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			agg, err := app.New(app.Options{Playground: tt.playground})
			if err != nil {
				t.Fatal(err)
			}
			req := httptest.NewRequest(http.MethodGet, "/graphql", nil)
			req.Header.Set("Accept", "text/html")
			rec := httptest.NewRecorder()
			agg.Handler.ServeHTTP(rec, req)
			body, _ := io.ReadAll(rec.Body)
			if rec.Code != http.StatusOK || !strings.Contains(string(body), tt.wantTitle) {
				t.Errorf("status %d, want 200 and a page with %s:\n%.400s", rec.Code, tt.wantTitle, body)
			}
		})
	}
}
