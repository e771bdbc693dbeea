package app_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetcache/fleetcache/internal/app"
	"github.com/fleetcache/fleetcache/internal/graphiql"
)

// TestGraphiQLPage checks the page a browser gets at /graphql: GraphiQL
// when the binary holds it (make test builds it first), else a page that
// says how to build it. Only the unit layer (-short, no make ui) may run
// without the bundle.
func TestGraphiQLPage(t *testing.T) {
	want := "<title>fleetcache GraphiQL</title>"
	if !graphiql.Built() {
		if !testing.Short() {
			t.Fatal("GraphiQL is not built into this test binary: run make ui (make test does) before go test")
		}
		want = "<title>fleetcache: GraphiQL is not built in</title>"
	}
	agg, err := app.New(app.Options{})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodGet, "/graphql", nil)
	req.Header.Set("Accept", "text/html")
	rec := httptest.NewRecorder()
	agg.Handler.ServeHTTP(rec, req)
	body, _ := io.ReadAll(rec.Body)
	if rec.Code != http.StatusOK || !strings.Contains(string(body), want) {
		t.Errorf("status %d, want 200 and a page with %s:\n%.400s", rec.Code, want, body)
	}
}

// TestPlaygroundDeprecated checks that serving.playground, which chose the
// basic playground now gone, is accepted from a file or a flag, ignored,
// and named by a deprecation warning.
func TestPlaygroundDeprecated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte("serving:\n  playground: basic\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		args []string
		want int
	}{
		{name: "file", args: []string{"--config", path}, want: 1},
		{name: "flag", args: []string{"--playground", "graphiql"}, want: 1},
		{name: "neither", want: 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := app.ParseArgs(tt.args, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if err := cfg.Validate(); err != nil {
				t.Errorf("Validate: %v, want nil", err)
			}
			warnings := cfg.Deprecated()
			if len(warnings) != tt.want {
				t.Fatalf("warnings %q, want %d", warnings, tt.want)
			}
			for _, w := range warnings {
				if !strings.Contains(w, "serving.playground") || !strings.Contains(w, "ignored") {
					t.Errorf("warning %q does not say that serving.playground is ignored", w)
				}
			}
		})
	}
}

// TestFaviconRoute checks that /favicon.ico, which browsers ask of every
// page of the origin (the status page, GraphiQL), is served, not a 404.
func TestFaviconRoute(t *testing.T) {
	agg, err := app.New(app.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	agg.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/favicon.ico", nil))
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "image/x-icon" || rec.Body.Len() < 22 {
		t.Errorf("status %d, Content-Type %q, %d bytes; want 200 and an icon", rec.Code, rec.Header().Get("Content-Type"), rec.Body.Len())
	}
}

// TestRetentionSettings checks that the retention settings of changes and
// status histories reach the index and the health tracker's options.
func TestRetentionSettings(t *testing.T) {
	cfg, err := app.ParseArgs([]string{"--event-retention-age", "2h", "--status-history", "3h"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	opts := cfg.Options()
	if opts.Index.RetentionAge != 2*time.Hour || opts.Health.HistoryWindow != 3*time.Hour {
		t.Errorf("index retention age %s, status history %s; want 2h and 3h", opts.Index.RetentionAge, opts.Health.HistoryWindow)
	}
	cfg, err = app.ParseArgs([]string{"--status-history", "-1h"}, io.Discard)
	if err == nil && cfg.Validate() == nil {
		t.Error("a negative status history is accepted")
	}
}
