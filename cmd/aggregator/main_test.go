package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/fleetcache/fleetcache/internal/testcluster"
)

// testbed is three real clusters shared by the tests of this package,
// started for the first test that asks for it (testbed.Env).
var testbed = testcluster.NewShared(testcluster.Options{Clusters: 3})

func TestMain(m *testing.M) { testcluster.Main(m, testbed) }

// buildAggregator builds the command into a temporary directory.
func buildAggregator(t *testing.T) string {
	t.Helper()
	// A whole second build of the module, without -race: too slow for the
	// unit layer.
	testcluster.SkipShort(t, "the aggregator built as a binary")
	bin := filepath.Join(t.TempDir(), "aggregator")
	out, err := exec.CommandContext(t.Context(), "go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestCommand runs the built binary: bad configuration stops it at start
// with the field named; SIGTERM ends a serving one within 10s, closing its
// subscriptions with 1001.
func TestCommand(t *testing.T) {
	bin := buildAggregator(t)

	t.Run("bad configuration", func(t *testing.T) {
		config := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(config, []byte("limits:\n  maxPageSize: -5\nlog:\n  format: xml\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, tt := range []struct {
			args []string
			want []string
		}{
			{[]string{"--config", config}, []string{"limits.maxPageSize: must not be negative", `log.format: must be text or json, not "xml"`}},
			{[]string{"--config", config, "--max-page-size", "200", "--log-format", "json"}, nil}, // flags win: valid, but no cluster
			{[]string{"--addr", "nowhere"}, []string{"addr:"}},
			{[]string{"--max-page-size", "10"}, []string{"limits.defaultPageSize: 100 is above limits.maxPageSize 10"}},
			{[]string{"--max-depth", "x"}, []string{"-max-depth"}},
		} {
			var stderr bytes.Buffer
			cmd := exec.CommandContext(t.Context(), bin, append(tt.args, "--kubeconfig", "/nonexistent/kubeconfig", "--authn=none")...)
			cmd.Stderr = &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("%v: %v, want a failed exit", tt.args, err)
			}
			if tt.want == nil {
				// Past validation, it fails on the missing kubeconfig.
				if !strings.Contains(stderr.String(), "/nonexistent/kubeconfig") {
					t.Errorf("%v: stderr %q does not name the missing kubeconfig", tt.args, stderr.String())
				}
				continue
			}
			if exit.ExitCode() != 2 {
				t.Errorf("%v: exit code %d, want 2", tt.args, exit.ExitCode())
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("%v: stderr %q does not contain %q", tt.args, stderr.String(), w)
				}
			}
		}
	})

	t.Run("SIGTERM", func(t *testing.T) {
		env := testbed.Env(t)
		kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
		if err := env.WriteKubeconfig(kubeconfig, "admin"); err != nil {
			t.Fatal(err)
		}
		addr := testcluster.FreeAddr(t)
		var stderr bytes.Buffer
		cmd := exec.Command(bin, "--kubeconfig", kubeconfig, "--addr", addr, "--resources", "namespaces,configmaps", "--authn=none", "--log-format=json")
		cmd.Stderr = &stderr
		// A memory limit of one's own wins over the container's: Run logs it.
		cmd.Env = append(os.Environ(), "GOMEMLIMIT=300MiB")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			<-exited
		})
		testcluster.Eventually(t, 60*time.Second, "the command to be ready", func() (bool, string) {
			resp, err := http.Get("http://" + addr + "/readyz")
			if err != nil {
				return false, err.Error()
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK, resp.Status
		})

		// A live subscription, to see how it ends.
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		ws, _, err := websocket.Dial(ctx, "ws://"+addr+"/graphql", &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
		if err != nil {
			t.Fatal(err)
		}
		defer ws.CloseNow()
		for _, msg := range []string{
			`{"type":"connection_init"}`,
			`{"type":"subscribe","id":"1","payload":{"query":"subscription { resourceEvents { type cursor } }"}}`,
		} {
			if err := ws.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
				t.Fatal(err)
			}
		}
		if _, data, err := ws.Read(ctx); err != nil || !strings.Contains(string(data), "connection_ack") {
			t.Fatalf("connection_ack: %s %v", data, err)
		}
		closed := make(chan error, 1)
		go func() {
			for {
				if _, _, err := ws.Read(ctx); err != nil {
					closed <- err
					return
				}
			}
		}()

		start := time.Now()
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-exited:
			took := time.Since(start)
			if err != nil {
				t.Errorf("exit after SIGTERM: %v\n%s", err, stderr.String())
			}
			if took > 10*time.Second {
				t.Errorf("exit took %s after SIGTERM, want under 10s", took)
			}
			exited <- err // for the cleanup
		case <-time.After(15 * time.Second):
			t.Fatalf("still running 15s after SIGTERM\n%s", stderr.String())
		}
		if code := websocket.CloseStatus(<-closed); code != websocket.StatusGoingAway {
			t.Errorf("subscription ended with close code %d, want 1001 (going away)", code)
		}
		for _, want := range []string{`"msg":"Go memory limit"`, `"bytes":314572800`, `"source":"GOMEMLIMIT"`} {
			if !strings.Contains(stderr.String(), want) {
				t.Errorf("the log lacks %s:\n%s", want, stderr.String())
			}
		}
		if _, err := http.Get("http://" + addr + "/healthz"); err == nil {
			t.Error("still accepting connections after exit")
		}
		// --log-format=json: every line is a JSON object; the loud warning is there.
		sawWarning := false
		for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
			var entry map[string]any
			if err := json.Unmarshal([]byte(line), &entry); err != nil {
				t.Errorf("log line is not JSON: %q", line)
				break
			}
			if msg, _ := entry["msg"].(string); strings.Contains(msg, "AUTHENTICATION IS OFF") {
				sawWarning = true
			}
		}
		if !sawWarning {
			t.Errorf("no warning that authentication is off in the log:\n%s", stderr.String())
		}
	})
}
