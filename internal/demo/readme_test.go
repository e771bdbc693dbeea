package demo

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetcache/fleetcache/internal/fleetctl"
	"github.com/fleetcache/fleetcache/internal/testcluster"
)

// moduleRoot is where the README is, from this package's directory.
const moduleRoot = "../.."

// readmeCommands returns the lines of the README's "From the command line"
// block that start with prefix, without their comments.
func readmeCommands(t *testing.T, prefix string) [][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(moduleRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "## From the command line")
	if !ok {
		t.Fatal(`README.md has no "From the command line" section`)
	}
	_, block, _ := strings.Cut(section, "```sh\n")
	block, _, _ = strings.Cut(block, "```")
	var out [][]string
	for _, line := range strings.Split(block, "\n") {
		line, _, _ = strings.Cut(line, "#")
		if strings.HasPrefix(line, prefix) {
			out = append(out, strings.Fields(line))
		}
	}
	if len(out) == 0 {
		t.Fatalf("no %q line in the README's block:\n%s", prefix, block)
	}
	return out
}

// TestReadmeInstallLine checks that the README's go install line names a
// command of this module that a checkout builds: the module is not
// published, so a module path with @latest cannot be fetched.
func TestReadmeInstallLine(t *testing.T) {
	for _, args := range readmeCommands(t, "go install") {
		pkg := args[len(args)-1]
		if !strings.HasPrefix(pkg, "./") || strings.Contains(pkg, "@") {
			t.Errorf("go install %s: want a path in the checkout (./cmd/...), the module is not published", pkg)
			continue
		}
		cmd := exec.CommandContext(t.Context(), "go", "list", "-f", "{{.Name}} {{.ImportPath}}", pkg)
		cmd.Dir = moduleRoot
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), "main ") || !strings.HasSuffix(strings.TrimSpace(string(out)), "/kubectl-fleet") {
			t.Errorf("go list %s: %s %v; want the main package kubectl-fleet", pkg, out, err)
		}
	}
}

// testReadmeKubectlFleet runs each `kubectl fleet` line of the README, as
// written (no --server: the "fleetcache" context the demo wrote in the
// kubeconfig of $KUBECONFIG finds it), and checks that each prints rows;
// a line with -w prints the list, then is stopped.
func testReadmeKubectlFleet(t *testing.T, kubeconfig string) {
	t.Setenv("KUBECONFIG", kubeconfig)
	for _, args := range readmeCommands(t, "kubectl fleet") {
		args = args[2:]
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			out, errOut := &syncBuffer{}, &syncBuffer{}
			done := make(chan int, 1)
			go func() { done <- fleetctl.Main(ctx, args, out, errOut) }()
			watch := strings.Contains(" "+strings.Join(args, " ")+" ", " -w ")
			if watch {
				testcluster.Eventually(t, 30*time.Second, "the listed rows", func() (bool, string) {
					return strings.Count(out.String(), "\n") >= 2, out.String() + errOut.String()
				})
				cancel()
			}
			var code int
			select {
			case code = <-done:
			case <-time.After(time.Minute):
				t.Fatal("kubectl fleet did not return within a minute")
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			if code != 0 || len(lines) < 2 || errOut.String() != "" {
				t.Fatalf("exit %d, stdout:\n%s\nstderr:\n%s\nwant 0, a header and rows, and nothing on stderr", code, out, errOut)
			}
			t.Logf("%d lines, the first:\n%s", len(lines), strings.Join(lines[:min(3, len(lines))], "\n"))
		})
	}
}

// testNodes checks that the demo's Nodes print as a kubelet's would: STATUS
// Ready and the kubelet's VERSION.
func testNodes(t *testing.T, kubeconfig string) {
	var out, errOut bytes.Buffer
	if code := fleetctl.Main(t.Context(), []string{"--kubeconfig", kubeconfig, "get", "nodes"}, &out, &errOut); code != 0 {
		t.Fatalf("get nodes: exit %d: %s", code, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) < 7 || strings.Join(strings.Fields(lines[0]), " ") != "CLUSTER NAME STATUS ROLES AGE VERSION" {
		t.Fatalf("get nodes:\n%s\nwant a header and the Nodes of three clusters", out.String())
	}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) != 6 || f[2] != "Ready" || f[3] != "worker" || f[5] != NodeVersion {
			t.Errorf("node row %q: want STATUS Ready, ROLES worker, VERSION %s", l, NodeVersion)
		}
	}
}
