package deploy_test

import (
	"bytes"
	"debug/buildinfo"
	"debug/elf"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fleetcache/fleetcache/internal/testcluster"
)

// dockerfile is what the tests read from the Dockerfile: the go build
// command of the build stage and the final stage's base image and user.
type dockerfile struct {
	buildEnv   []string // NAME=value words before "go build"
	buildFlags []string // flags of go build, without -o and its argument
	finalFrom  string
	finalUser  string
}

// parseDockerfile reads the instructions that matter here. It joins
// continuation lines and splits shell words with double quotes; the
// Dockerfile uses nothing fancier.
func parseDockerfile(t *testing.T, data []byte) dockerfile {
	t.Helper()
	var df dockerfile
	var instructions []string
	var cur strings.Builder
	for line := range strings.Lines(string(data)) {
		line = strings.TrimRight(line, "\r\n")
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		if l, ok := strings.CutSuffix(line, `\`); ok {
			cur.WriteString(l + " ")
			continue
		}
		cur.WriteString(line)
		if s := strings.TrimSpace(cur.String()); s != "" {
			instructions = append(instructions, s)
		}
		cur.Reset()
	}
	for _, ins := range instructions {
		keyword, rest, _ := strings.Cut(ins, " ")
		switch strings.ToUpper(keyword) {
		case "FROM":
			df.finalFrom, _, _ = strings.Cut(strings.TrimSpace(rest), " ")
			df.finalUser = ""
		case "USER":
			df.finalUser = strings.TrimSpace(rest)
		case "RUN":
			words := shellWords(t, rest)
			i := slices.Index(words, "go")
			if i < 0 || i+1 >= len(words) || words[i+1] != "build" {
				continue
			}
			for _, w := range words[:i] {
				if name, _, ok := strings.Cut(w, "="); ok && name == strings.ToUpper(name) && !strings.HasPrefix(w, "-") {
					df.buildEnv = append(df.buildEnv, w)
				}
			}
			args := words[i+2:]
			for j := 0; j < len(args); j++ {
				switch {
				case args[j] == "-o":
					j++
				case strings.HasPrefix(args[j], "-"):
					df.buildFlags = append(df.buildFlags, args[j])
				}
			}
		}
	}
	return df
}

func shellWords(t *testing.T, s string) []string {
	t.Helper()
	var words []string
	var w strings.Builder
	inWord, quoted := false, false
	for _, r := range s {
		switch {
		case r == '"':
			quoted = !quoted
			inWord = true
		case !quoted && (r == ' ' || r == '\t'):
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if quoted {
		t.Fatalf("unbalanced quote in %q", s)
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}

// TestDockerfileStaticBinary builds cmd/aggregator with the environment and
// flags of the Dockerfile's go build and checks that the result is what a
// distroless static image needs: no dynamic loader, no dynamic section, cgo
// off, paths trimmed. No Docker engine is needed (nor available in CI).
func TestDockerfileStaticBinary(t *testing.T) {
	data, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	df := parseDockerfile(t, data)
	if !slices.Contains(df.buildEnv, "CGO_ENABLED=0") || !slices.Contains(df.buildFlags, "-trimpath") {
		t.Errorf("go build env %v flags %v, want CGO_ENABLED=0 and -trimpath", df.buildEnv, df.buildFlags)
	}
	if !strings.HasPrefix(df.finalFrom, "gcr.io/distroless/static") && df.finalFrom != "scratch" {
		t.Errorf("final image %q, want distroless static or scratch", df.finalFrom)
	}
	if df.finalUser != "65532:65532" && df.finalUser != "65532" {
		t.Errorf("final USER %q, want 65532 (non-root)", df.finalUser)
	}

	// A whole second build of the module, with the Dockerfile's flags: too
	// slow for the unit layer.
	testcluster.SkipShort(t, "the aggregator built as the Dockerfile builds it")
	bin := filepath.Join(t.TempDir(), "aggregator")
	args := append(append([]string{"build"}, df.buildFlags...), "-o", bin, "./cmd/aggregator")
	cmd := exec.CommandContext(t.Context(), "go", args...)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), df.buildEnv...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}

	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("binary has a %s program header: it is dynamically linked", p.Type)
		}
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
		t.Errorf("binary imports libraries %v (%v)", libs, err)
	}
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	if settings["CGO_ENABLED"] != "0" || settings["-trimpath"] != "true" {
		t.Errorf("build settings CGO_ENABLED=%q -trimpath=%q, want 0 and true", settings["CGO_ENABLED"], settings["-trimpath"])
	}
}

// TestDockerignoreKeepsSources checks that .dockerignore leaves in the build
// context every file the go build of the Dockerfile reads: go.mod, go.sum and
// the Go and embedded files of every package of this module that
// cmd/aggregator imports.
func TestDockerignoreKeepsSources(t *testing.T) {
	data, err := os.ReadFile("../.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	for line := range strings.Lines(string(data)) {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			if strings.HasPrefix(line, "!") {
				t.Fatalf("exception pattern %q: this check does not handle them", line)
			}
			patterns = append(patterns, strings.TrimSuffix(line, "/"))
		}
	}

	cmd := exec.CommandContext(t.Context(), "go", "list", "-deps", "-json=Dir,Module,GoFiles,EmbedFiles", "./cmd/aggregator")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	files := []string{"go.mod", "go.sum"}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			Dir                 string
			Module              *struct{ Main bool }
			GoFiles, EmbedFiles []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if p.Module == nil || !p.Module.Main {
			continue
		}
		rel, err := filepath.Rel(root, p.Dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range slices.Concat(p.GoFiles, p.EmbedFiles) {
			files = append(files, filepath.ToSlash(filepath.Join(rel, f)))
		}
	}
	if len(files) < 3 {
		t.Fatalf("go list found no source of cmd/aggregator: %s", out)
	}
	for _, f := range files {
		for _, p := range patterns {
			if ignored(p, f) {
				t.Errorf(".dockerignore pattern %q drops %s, which the image build needs", p, f)
			}
		}
	}
}

// ignored reports whether a .dockerignore pattern excludes file: the pattern
// matches the file or one of its parent directories; "**/" matches any
// number of leading directories.
func ignored(pattern, file string) bool {
	parts := strings.Split(file, "/")
	for i := 1; i <= len(parts); i++ {
		prefix := strings.Join(parts[:i], "/")
		if ok, _ := path.Match(pattern, prefix); ok {
			return true
		}
		if rest, ok := strings.CutPrefix(pattern, "**/"); ok {
			for j := range i {
				if ok, _ := path.Match(rest, strings.Join(parts[j:i], "/")); ok {
					return true
				}
			}
		}
	}
	return false
}

// TestDockerfileBuildsGraphiQL checks that the image gets GraphiQL: a stage
// installs the pinned npm packages and bundles them as make ui does, and
// the Go build stage copies the bundle in before go build embeds it.
func TestDockerfileBuildsGraphiQL(t *testing.T) {
	data, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	df := string(data)
	steps := []string{
		"COPY internal/graphiql/ui/package.json internal/graphiql/ui/package-lock.json ./",
		"npm ci",
		"RUN node build.mjs",
		"COPY . .",
		"COPY --from=ui /src/internal/graphiql/dist/ internal/graphiql/dist/",
		"go build",
	}
	at := 0
	for _, s := range steps {
		i := strings.Index(df[at:], s)
		if i < 0 {
			t.Fatalf("the Dockerfile lacks %q after offset %d (the steps, in order: %q)", s, at, steps)
		}
		at += i + len(s)
	}
	makefile, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(makefile), "npm ci --no-audit --no-fund") || !strings.Contains(string(makefile), "node build.mjs") {
		t.Error("make ui no longer bundles as the Dockerfile does: keep them alike")
	}
}
