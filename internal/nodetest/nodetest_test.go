package nodetest

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func TestPinned(t *testing.T) {
	for _, tc := range []struct {
		name string
		pkg  string
		want bool
	}{
		{name: "exact", pkg: "graphql@16.15.0", want: true},
		{name: "scoped exact", pkg: "@scope/pkg@1.2.3", want: true},
		{name: "pre-release", pkg: "pkg@1.0.0-rc.1", want: true},
		{name: "no version", pkg: "graphql", want: false},
		{name: "major only", pkg: "graphql@16", want: false},
		{name: "range", pkg: "graphql@^16.0.0", want: false},
		{name: "scoped without version", pkg: "@scope/pkg", want: false},
		{name: "tag", pkg: "graphql@latest", want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := pinned(tc.pkg); got != tc.want {
				t.Errorf("pinned(%q) = %v, want %v", tc.pkg, got, tc.want)
			}
		})
	}
}

// TestInstallAndRun installs a small package and requires it from a script
// outside the installation directory.
func TestInstallAndRun(t *testing.T) {
	dir := Install(t, "graphql@16.15.0")
	if again := Install(t, "graphql@16.15.0"); again != dir {
		t.Errorf("second Install = %s, want the cached %s", again, dir)
	}
	script := filepath.Join(t.TempDir(), "version.js")
	src := `const { version } = require('graphql'); console.log(JSON.stringify({ version, args: process.argv.slice(2) }));`
	if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Version string
		Args    []string
	}
	if err := json.Unmarshal(Run(t, dir, script, "a", "b"), &got); err != nil {
		t.Fatal(err)
	}
	if got.Version != "16.15.0" || len(got.Args) != 2 || got.Args[0] != "a" {
		t.Errorf("script output = %+v, want graphql 16.15.0 and args [a b]", got)
	}
}

// TestInstallLockedAndOutput installs from a lock file with npm ci, and
// runs a script that fails.
func TestInstallLockedAndOutput(t *testing.T) {
	src := t.TempDir()
	files := map[string]string{
		"package.json": `{"private": true, "dependencies": {"graphql": "16.15.0"}}` + "\n",
		"package-lock.json": `{"name": "x", "lockfileVersion": 3, "requires": true, "packages": {
  "": {"dependencies": {"graphql": "16.15.0"}},
  "node_modules/graphql": {"version": "16.15.0", "resolved": "https://registry.npmjs.org/graphql/-/graphql-16.15.0.tgz", "license": "MIT"}}}` + "\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(src, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir := InstallLocked(t, src)
	if again := InstallLocked(t, src); again != dir {
		t.Errorf("second InstallLocked = %s, want the cached %s", again, dir)
	}
	script := filepath.Join(t.TempDir(), "fail.js")
	src2 := `const { version } = require('graphql'); console.log(version); console.error('bad'); process.exit(3);`
	if err := os.WriteFile(script, []byte(src2), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err := Output(t, dir, script)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 || string(stdout) != "16.15.0\n" || string(stderr) != "bad\n" {
		t.Errorf("Output = %q, %q, %v; want 16.15.0, bad and exit status 3", stdout, stderr, err)
	}
}
