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
	list := strings.Join(sorted, "\n")
	// A package.json of its own keeps npm from looking for one in a parent.
	files := map[string][]byte{"package.json": []byte(`{"private": true}` + "\n")}
	args := append([]string{"install", "--no-audit", "--no-fund", "--no-package-lock", "--ignore-scripts", "--save-exact"}, sorted...)
	return install(t, npm, root, []byte(list), files, args, strings.Join(sorted, " "))
}

// InstallLocked installs the packages of the package.json and
// package-lock.json in src (a test's testdata directory) with npm ci,
// unless an earlier test already did, and returns the directory holding
// their node_modules: every dependency, direct or not, at the version the
// committed lock file names. It is Install for tools with many
// dependencies (GraphQL Code Generator), whose pinned direct versions
// alone would let the others drift. The installation lives in
// <module root>/.cache/node/<hash of the two files>, shared like
// Install's; src is not written to.
func InstallLocked(t testing.TB, src string) string {
	t.Helper()
	skipShort(t)
	npm := lookPath(t, "npm")
	lookPath(t, "node")
	root, err := moduleRoot()
	if err != nil {
		t.Fatalf("nodetest.InstallLocked: %v", err)
	}
	files := map[string][]byte{}
	var key []byte
	for _, name := range []string{"package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatalf("nodetest.InstallLocked: %v (npm ci needs both package.json and package-lock.json)", err)
		}
		files[name] = b
		key = append(append(key, name+"\n"...), b...)
	}
	args := []string{"ci", "--no-audit", "--no-fund", "--ignore-scripts"}
	return install(t, npm, root, key, files, args, "the packages of "+filepath.Join(src, "package-lock.json"))
}

// install runs npm with args in a fresh directory holding files, renamed
// into <root>/.cache/node/<hash of key> when npm succeeded, so that
// concurrent test binaries never see half an installation; it returns
// that directory at once when it is there already.
func install(t testing.TB, npm, root string, key []byte, files map[string][]byte, args []string, what string) string {
	t.Helper()
	sum := sha256.Sum256(key)
	cache := filepath.Join(root, ".cache", "node")
	dir := filepath.Join(cache, hex.EncodeToString(sum[:8]))
	if _, err := os.Stat(filepath.Join(dir, done)); err == nil {
		return dir
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		t.Fatalf("nodetest: %v", err)
	}
	tmp, err := os.MkdirTemp(cache, "install-")
	if err != nil {
		t.Fatalf("nodetest: %v", err)
	}
	defer os.RemoveAll(tmp) // nothing left once renamed
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(tmp, name), b, 0o644); err != nil {
			t.Fatalf("nodetest: %v", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), installTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, args...)
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "npm_config_update_notifier=false", "npm_config_loglevel=error")
	begin := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nodetest: npm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	if err := os.WriteFile(filepath.Join(tmp, done), append(key, '\n'), 0o644); err != nil {
		t.Fatalf("nodetest: %v", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Another test binary may have installed the same packages meanwhile.
		if _, statErr := os.Stat(filepath.Join(dir, done)); statErr != nil {
			t.Fatalf("nodetest: move installation into place: %v", err)
		}
	}
	t.Logf("nodetest: installed %s in %s", what, time.Since(begin).Round(time.Millisecond))
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
	stdout, stderr, err := Output(t, dir, script, args...)
	if err != nil {
		t.Fatalf("nodetest.Run: node %s %s: %v\nstderr:\n%s\nstdout:\n%s", script, strings.Join(args, " "), err, stderr, stdout)
	}
	if len(stderr) > 0 {
		t.Logf("node %s stderr:\n%s", filepath.Base(script), stderr)
	}
	return stdout
}

// Output is Run for a script that is expected to fail at times (a
// compiler given a wrong program): it returns the script's standard
// output and error and how node exited, instead of failing the test. A
// missing node still fails it.
func Output(t testing.TB, dir string, script string, args ...string) (stdout, stderr []byte, err error) {
	t.Helper()
	skipShort(t)
	node := lookPath(t, "node")
	abs, err := filepath.Abs(script)
	if err != nil {
		t.Fatalf("nodetest.Output: %v", err)
	}
	cmd := exec.CommandContext(t.Context(), node, append([]string{abs}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NODE_PATH="+filepath.Join(dir, "node_modules"))
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.Bytes(), errOut.Bytes(), err
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
