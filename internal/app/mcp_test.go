package app_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetcache/fleetcache/internal/app"
)

// TestMCPSetting: /mcp is served by default, with the budget the
// configuration sets, and left out by one setting, a flag or the file's.
func TestMCPSetting(t *testing.T) {
	file := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(file, []byte("mcp:\n  enabled: false\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		args   []string
		status int
	}{
		{"default", nil, http.StatusOK},
		{"flag on", []string{"--mcp", "--mcp-result-bytes", "4096"}, http.StatusOK},
		{"flag off", []string{"--mcp=false"}, http.StatusNotFound},
		{"file off", []string{"--config", file}, http.StatusNotFound},
		{"flag over file", []string{"--config", file, "--mcp=true"}, http.StatusOK},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := app.ParseArgs(append(tt.args, "--authn=none"), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			opts := cfg.Options()
			agg, err := app.New(opts)
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(agg.Handler)
			defer srv.Close()
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/mcp", strings.NewReader(
				`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != tt.status {
				t.Fatalf("POST /mcp: %s %s, want %d", res.Status, body, tt.status)
			}
			if tt.status == http.StatusOK && !strings.Contains(string(body), `"serverInfo":{"name":"fleetcache"`) {
				t.Errorf("initialize: %s", body)
			}
			if (agg.MCP == nil) != (tt.status == http.StatusNotFound) {
				t.Errorf("Aggregator.MCP %v with /mcp answering %d", agg.MCP, tt.status)
			}
			if tt.name == "flag on" && opts.MCP.ResultBytes != 4096 {
				t.Errorf("MCP.ResultBytes %d, want 4096", opts.MCP.ResultBytes)
			}
		})
	}
}
