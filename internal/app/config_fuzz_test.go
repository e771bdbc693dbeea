package app_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"sigs.k8s.io/yaml"

	"github.com/fleetcache/fleetcache/internal/app"
)

// fieldError is how Validate names a field: its path in the file, then a
// colon ("limits.maxDepth: …", "kubeconfigs[0]: …").
var fieldError = regexp.MustCompile(`^[a-zA-Z]+(\[("(\\.|[^"\\])*"|[0-9]+)\])*(\.[a-zA-Z]+(\[("(\\.|[^"\\])*"|[0-9]+)\])*)*: `)

// FuzzLoadConfig checks LoadConfig and Validate on arbitrary file content.
// Neither may panic; an unknown field is reported by a path that exists in
// the document; Validate names a field in every error; and a configuration
// that loads survives being written out and loaded again unchanged.
func FuzzLoadConfig(f *testing.F) {
	for _, seed := range []string{
		"",
		"{}",
		"null",
		"kubeconfigs: [/etc/kube/a, b]\ncontexts: [one]\naddr: 127.0.0.1:8080\n",
		"kubeconfigDir: /nonexistent\nclusterSecrets:\n  namespace: fleet\n  kubeconfig: /k\n",
		"resources: [pods, deployments.apps, Pods!]\nreadyz: {exclude: [c1], disabled: true}\n",
		"limits:\n  defaultPageSize: 10\n  maxPageSize: 5\n  requestTimeout: 2m30s\n  maxDepth: -1\n",
		"limits: {requestTimeout: forever}\n",
		"log: {level: 4, format: json}\n",
		"log: {format: xml, levle: 2}\n",
		"limits: {maxPageSize: 100, pageSize: 1}\nadress: x\n",
		"clusterSecrets: [namespace]\n",
		"addr: 1\n",
		"addr: [a]\n",
		"kubeconfigs: a\n",
		"limits: {maxBodyBytes: 1e30}\n",
		"addr: a\naddr: b\n",
		"a.b: {c: d}\n",
		"? [a]\n: b\n",
		"&a [*a]\n",
		"- a\n- b\n",
		"{\"addr\": \":80\", \"readyz\": {\"exclude\": null}}",
		"\xff\xfe",
		"authn: {mode: tokenreview, kubeconfig: /k, context: c, cacheTTL: 10s}\n",
		"authz:\n  mode: policy\n  cacheTTL: 1m\n  rules:\n  - groups: [team-a]\n    clusters: [c1, c2]\n    namespaces: [team-a]\n    resources: [configmaps]\n",
		"authz: {rules: [{users: [alice]}, {users: [bob], grups: [x]}]}\n",
		"authz: {rules: [[a]]}\n",
		"serving: {tlsCertFile: a, corsAllowedOrigins: ['https://portal.example.com', '*'], rateLimit: {}}\n",
		"indexes: {pods: [status.phase, 'metadata.annotations[\"a/b\"]'], deployments.apps: [], nodes: null}\n",
		"indexes: {pods: [status..phase, cluster, status.phase, status.phase], 'Pods!\"': [x], events.k8s.io: 3}\n",
		"indexes: [pods]\n",
		"clusterProfiles: {enabled: true, namespace: ocm, providersFile: /p}\nclusterAPI: {enabled: true, allowExecPlugins: true}\nargoCD: {namespace: argocd}\n",
		"clusters: {prod-eu: {labels: {env: prod, 'bad key': x}}, '': {labels: {a: b}}, x: {lables: {}}}\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := app.LoadConfig(path)
		if err != nil {
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("error does not name the file: %v", err)
			}
			checkUnknownFields(t, data, err)
			return
		}
		if err := c.Validate(); err != nil {
			errs := []error{err}
			if j, ok := err.(interface{ Unwrap() []error }); ok {
				errs = j.Unwrap()
			}
			for _, e := range errs {
				if !fieldError.MatchString(e.Error()) {
					t.Fatalf("Validate error names no field: %q", e)
				}
			}
		} else {
			_ = c.Options()
		}
		out, err := yaml.Marshal(c)
		if err != nil {
			t.Fatalf("marshal %+v: %v", c, err)
		}
		if err := os.WriteFile(path, out, 0o600); err != nil {
			t.Fatal(err)
		}
		again, err := app.LoadConfig(path)
		if err != nil {
			t.Fatalf("%q loads, but its YAML form\n%s\ndoes not: %v", data, out, err)
		}
		// An empty list and no list mean the same: the default.
		if diff := cmp.Diff(c, again, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("%q changes when written and loaded again (-first +second):\n%s", data, diff)
		}
	})
}

// checkUnknownFields checks that each field an "unknown field" error
// names, as a quoted Go string, is a key at that path of the document.
func checkUnknownFields(t *testing.T, data []byte, err error) {
	t.Helper()
	_, list, ok := strings.Cut(err.Error(), "unknown field ")
	if !ok {
		return
	}
	var doc any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("unknown field reported in a document that does not parse: %v", err)
	}
	for list != "" {
		q, qerr := strconv.QuotedPrefix(list)
		if qerr != nil {
			t.Fatalf("unknown fields are not a list of quoted paths: %v", err)
		}
		p, _ := strconv.Unquote(q)
		if !hasPath(doc, p) {
			t.Fatalf("unknown field %q is not in the document: %v", p, err)
		}
		list = strings.TrimPrefix(list[len(q):], ", ")
	}
}

// hasPath reports whether path, as LoadConfig writes it ("a.b",
// "a.list[2].c"), names a key of nested maps and lists in v. Keys may
// contain dots and brackets themselves, so every split is tried.
func hasPath(v any, path string) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	for k, sub := range m {
		rest, ok := strings.CutPrefix(path, k)
		switch {
		case !ok:
		case rest == "":
			return true
		case strings.HasPrefix(rest, ".") && hasPath(sub, rest[1:]):
			return true
		case strings.HasPrefix(rest, "["):
			list, _ := sub.([]any)
			i, after, ok := strings.Cut(rest[1:], "].")
			n, err := strconv.Atoi(i)
			if ok && err == nil && n >= 0 && n < len(list) && hasPath(list[n], after) {
				return true
			}
		}
	}
	return false
}
