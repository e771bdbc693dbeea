package api_test

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/fleetcache/fleetcache/internal/nodetest"
	"github.com/fleetcache/fleetcache/internal/testcluster"
)

// typedClientPackages is the npm project of the typed schema's real
// clients: graphql-js, GraphQL Code Generator and TypeScript, every
// dependency pinned by its committed package-lock.json.
var typedClientPackages = filepath.Join("testdata", "typedclient")

// TestTypedSchemaWithRealClients shows the typed schema of a fleetcache on
// real API servers to the tools a portal uses, as docs/graphql.md ("Types
// for a portal") tells it to: graphql-js builds a client schema from the
// introspection and validates the documented typed queries (a typed Pod
// inside resources included) and rejects a misspelt field; GraphQL Code
// Generator, with the documented codegen.yml, generates their types from
// the server's URL; tsc --noEmit compiles a client that reads
// pod.spec.containers[0].image as a string, and rejects the same client
// with a typo in that field.
func TestTypedSchemaWithRealClients(t *testing.T) {
	testcluster.SkipShort(t, "real clusters")
	dir := nodetest.InstallLocked(t, typedClientPackages)
	_, _, f := startFieldFleetTyped(t, "clients")
	f.waitType(t, "Pod", "spec", true)
	f.waitType(t, "Container", "image", true)

	work := t.TempDir()
	queries := documentedTypedQueries(t)
	if err := os.WriteFile(filepath.Join(work, "queries.graphql"), []byte(queries), 0o644); err != nil {
		t.Fatal(err)
	}

	t.Run("graphql-js", func(t *testing.T) {
		docs := map[string]string{
			"documented": queries,
			"fragment":   `{ resources(first: 5) { edges { node { name ... on Pod { spec { containers { image } } } } } } }`,
			"typo":       `{ pods { edges { node { spec { containers { imag } } } } } }`,
		}
		b, _ := json.Marshal(docs)
		if err := os.WriteFile(filepath.Join(work, "documents.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		var got struct {
			Types  int
			Errors map[string][]string
		}
		out := nodetest.Run(t, dir, filepath.Join(typedClientPackages, "schema.js"), f.url, work)
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("schema.js printed %s: %v", out, err)
		}
		want := map[string][]string{
			"documented": {},
			"fragment":   {},
			"typo":       {`Cannot query field "imag" on type "Container". Did you mean "image"?`},
		}
		if diff := gocmp.Diff(want, got.Errors); diff != "" {
			t.Errorf("graphql-js's validation (-want +got):\n%s", diff)
		}
		if got.Types < 100 {
			t.Errorf("the client schema has %d types: not the typed schema", got.Types)
		}
	})

	t.Run("codegen and tsc", func(t *testing.T) {
		writeCodegenConfig(t, f.url, work)
		t.Setenv("FLEETCACHE_TOKEN", "unused") // the documented header; this server does not authenticate
		codegen := filepath.Join(dir, "node_modules", "@graphql-codegen", "cli", "cjs", "bin.js")
		nodetest.Run(t, dir, codegen, "--config", filepath.Join(work, "codegen.yml"))
		generated, err := os.ReadFile(filepath.Join(work, "generated.ts"))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"export type TypedPodsQuery", "export type PodsAmongResourcesQuery", "export type Container = {"} {
			if !strings.Contains(string(generated), want) {
				t.Errorf("generated.ts has no %q", want)
			}
		}
		tsc := filepath.Join(dir, "node_modules", "typescript", "bin", "tsc")
		for _, tc := range []struct {
			name, file string
			// errors are the compiler's messages expected, none for a
			// correct client.
			errors []string
		}{
			{name: "correct client", file: "client.ts"},
			{name: "typo", file: "typo.ts", errors: []string{"typo.ts(8,", "error TS2551: Property 'imag' does not exist", "Did you mean 'image'?"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				src, err := os.ReadFile(filepath.Join(typedClientPackages, tc.file))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(work, tc.file), src, 0o644); err != nil {
					t.Fatal(err)
				}
				config := map[string]any{
					"compilerOptions": map[string]any{"strict": true, "noEmit": true, "target": "es2022",
						"module": "esnext", "moduleResolution": "bundler", "skipLibCheck": false, "types": []string{}},
					"files": []string{"generated.ts", tc.file},
				}
				b, _ := json.Marshal(config)
				project := filepath.Join(work, "tsconfig."+strings.TrimSuffix(tc.file, ".ts")+".json")
				if err := os.WriteFile(project, b, 0o644); err != nil {
					t.Fatal(err)
				}
				stdout, stderr, err := nodetest.Output(t, dir, tsc, "--pretty", "false", "-p", project)
				output := string(stdout) + string(stderr)
				if len(tc.errors) == 0 {
					if err != nil {
						t.Fatalf("tsc rejected %s: %v\n%s", tc.file, err, output)
					}
					return
				}
				var exit *exec.ExitError
				if !errors.As(err, &exit) {
					t.Fatalf("tsc accepted %s (%v), want errors %q:\n%s", tc.file, err, tc.errors, output)
				}
				for _, want := range tc.errors {
					if !strings.Contains(output, want) {
						t.Errorf("tsc's output has no %q:\n%s", want, output)
					}
				}
			})
		}
	})
}

// typedBlock is the first GraphQL block of docs/graphql.md's "Typed kinds".
var typedBlock = regexp.MustCompile("(?ms)^## Typed kinds\n.*?^```graphql\n(.*?)^```")

// documentedTypedQueries returns the typed queries docs/graphql.md shows
// first: what a portal copies.
func documentedTypedQueries(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile("../../../docs/graphql.md")
	if err != nil {
		t.Fatal(err)
	}
	m := typedBlock.FindSubmatch(doc)
	if m == nil || !strings.Contains(string(m[1]), "query TypedPods") || !strings.Contains(string(m[1]), "query PodsAmongResources") {
		t.Fatal("docs/graphql.md: no block with the queries TypedPods and PodsAmongResources under ## Typed kinds")
	}
	return string(m[1])
}

// codegenBlock is docs/graphql.md's codegen.yml.
var codegenBlock = regexp.MustCompile("(?ms)^```yaml\n(# codegen.yml.*?)^```")

// writeCodegenConfig writes work/codegen.yml: docs/graphql.md's, with the
// server at url, the queries of work and work/generated.ts in place of
// the portal's.
func writeCodegenConfig(t *testing.T, url, work string) {
	t.Helper()
	doc, err := os.ReadFile("../../../docs/graphql.md")
	if err != nil {
		t.Fatal(err)
	}
	m := codegenBlock.FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/graphql.md: no yaml block starting with # codegen.yml")
	}
	var config struct {
		Schema    []map[string]any          `json:"schema"`
		Documents string                    `json:"documents"`
		Generates map[string]map[string]any `json:"generates"`
	}
	if err := yaml.UnmarshalStrict(m[1], &config); err != nil {
		t.Fatalf("docs/graphql.md's codegen.yml: %v", err)
	}
	if len(config.Schema) != 1 || len(config.Schema[0]) != 1 || len(config.Generates) != 1 {
		t.Fatalf("docs/graphql.md's codegen.yml: want one schema URL and one output, got %+v", config)
	}
	for documented, settings := range config.Schema[0] {
		config.Schema[0] = map[string]any{url: settings}
		if !strings.HasSuffix(documented, "/graphql") {
			t.Errorf("the documented schema URL %s is not fleetcache's /graphql", documented)
		}
	}
	config.Documents = filepath.Join(work, "*.graphql")
	for _, out := range config.Generates {
		config.Generates = map[string]map[string]any{filepath.Join(work, "generated.ts"): out}
	}
	b, err := yaml.Marshal(config)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "codegen.yml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}
