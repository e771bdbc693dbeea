package nodetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// installTimeout bounds one npm install.
const installTimeout = 5 * time.Minute

// done marks a complete installation directory.
const done = ".installed"

// Install installs the npm packages, each pinned to an exact version
// ("graphql-http@1.23.1"), unless an earlier test already did, and returns
// the directory holding their node_modules. Installations are shared by
// every test and package of the module: they live in
// <module root>/.cache/node/<hash of the sorted package list>, and are
// built in a temporary directory renamed into place, so concurrent test
// binaries do not see half an installation.
//
// Under -short (make test-unit) Install and Run skip the test: the unit
// layer runs no Node.js. Outside -short a missing node or npm fails it.
func Install(t testing.TB, pkgs ...string) string {
	t.Helper()
	skipShort(t)
	if len(pkgs) == 0 {
		t.Fatal("nodetest.Install: no packages")
	}
	for _, p := range pkgs {
		if !pinned(p) {
			t.Fatalf("nodetest.Install: %q is not pinned to an exact version (name@1.2.3)", p)
		}
	}
	npm := lookPath(t, "npm")
	lookPath(t, "node")
	root, err := moduleRoot()
	if err != nil {
		t.Fatalf("nodetest.Install: %v", err)
	}
	sorted := slices.Sorted(slices.Values(pkgs))
	sum := sha256.Sum256([]byte(strings.Join(sorted, "\n")))
	cache := filepath.Join(root, ".cache", "node")
	dir := filepath.Join(cache, hex.EncodeToString(sum[:8]))
	if _, err := os.Stat(filepath.Join(dir, done)); err == nil {
		return dir
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		t.Fatalf("nodetest.Install: %v", err)
	}
	tmp, err := os.MkdirTemp(cache, "install-")
	if err != nil {
		t.Fatalf("nodetest.Install: %v", err)
	}
	defer os.RemoveAll(tmp) // nothing left once renamed
	// A package.json of its own keeps npm from looking for one in a parent.
	if err := os.WriteFile(filepath.Join(tmp, "package.json"), []byte(`{"private": true}`+"\n"), 0o644); err != nil {
		t.Fatalf("nodetest.Install: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), installTimeout)
	defer cancel()
	args := append([]string{"install", "--no-audit", "--no-fund", "--no-package-lock", "--ignore-scripts", "--save-exact"}, sorted...)
	cmd := exec.CommandContext(ctx, npm, args...)
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "npm_config_update_notifier=false", "npm_config_loglevel=error")
	begin := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nodetest.Install: npm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	if err := os.WriteFile(filepath.Join(tmp, done), []byte(strings.Join(sorted, "\n")+"\n"), 0o644); err != nil {
		t.Fatalf("nodetest.Install: %v", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Another test binary may have installed the same packages meanwhile.
		if _, statErr := os.Stat(filepath.Join(dir, done)); statErr != nil {
			t.Fatalf("nodetest.Install: move installation into place: %v", err)
		}
	}
	t.Logf("nodetest: installed %s in %s", strings.Join(sorted, " "), time.Since(begin).Round(time.Millisecond))
	return dir
}

// pinned reports whether p names an exact version: name@1.2.3, or
// @scope/name@1.2.3.
func pinned(p string) bool {
	i := strings.LastIndex(p, "@")
	if i <= 0 {
		return false
	}
	v := p[i+1:]
	parts := strings.SplitN(v, "-", 2) // pre-release suffix allowed
	nums := strings.Split(parts[0], ".")
	if len(nums) != 3 {
		return false
	}
	for _, n := range nums {
		if n == "" || strings.Trim(n, "0123456789") != "" {
			return false
		}
	}
	return true
}

// Run runs node with the script and its arguments, with dir's
// node_modules on NODE_PATH (so the script's require() calls find the
// packages Install put there; NODE_PATH does not apply to ES module
// imports), and returns its standard output. It fails the test when node
// exits with an error, showing its standard error.
func Run(t testing.TB, dir string, script string, args ...string) []byte {
	t.Helper()
	skipShort(t)
	node := lookPath(t, "node")
	abs, err := filepath.Abs(script)
	if err != nil {
		t.Fatalf("nodetest.Run: %v", err)
	}
	cmd := exec.CommandContext(t.Context(), node, append([]string{abs}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NODE_PATH="+filepath.Join(dir, "node_modules"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("nodetest.Run: node %s %s: %v\nstderr:\n%s\nstdout:\n%s", script, strings.Join(args, " "), err, stderr.Bytes(), stdout.Bytes())
	}
	if stderr.Len() > 0 {
		t.Logf("node %s stderr:\n%s", filepath.Base(script), stderr.Bytes())
	}
	return stdout.Bytes()
}

func lookPath(t testing.TB, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("nodetest: %s not found (Node.js 20 or newer with npm is needed; make testdeps installs them with apt): %v", name, err)
	}
	return path
}

// moduleRoot returns the directory of the go.mod above the working
// directory (a test runs in its package's directory).
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find module root: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("find module root: %w", err)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("find module root: no go.mod above the working directory")
		}
		dir = parent
	}
}

// skipShort skips t under -short.
func skipShort(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs Node.js: not in the unit layer (-short); make test runs it")
	}
}
