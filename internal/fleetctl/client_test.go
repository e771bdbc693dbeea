package fleetctl

import (
	"bytes"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// recorder is a TLS server that answers every GraphQL request with answer
// and records the bearer tokens it got.
type recorder struct {
	srv    *httptest.Server
	ca     string
	mu     sync.Mutex
	tokens []string
}

func newRecorder(t *testing.T, answer string) *recorder {
	t.Helper()
	r := &recorder{}
	r.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.tokens = append(r.tokens, strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer "))
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, answer)
	}))
	t.Cleanup(r.srv.Close)
	r.ca = filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(r.ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *recorder) lastToken() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.tokens) == 0 {
		return "(no request)"
	}
	return r.tokens[len(r.tokens)-1]
}

// TestConnect checks which server and token kubectl fleet uses: the
// context named fleetcache before the current one, --context over both,
// and --server alone without the kubeconfig's credentials.
func TestConnect(t *testing.T) {
	fleet := newRecorder(t, `{"data":{"clusters":[]}}`)
	other := newRecorder(t, `{"data":{"clusters":[]}}`)
	kubeconfig := filepath.Join(t.TempDir(), "config")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
current-context: other
clusters:
- {name: fleet, cluster: {server: %q, certificate-authority: %q}}
- {name: other, cluster: {server: %q, certificate-authority: %q}}
users:
- {name: fleet-user, user: {token: fleet-token}}
- {name: other-user, user: {token: other-token}}
contexts:
- {name: fleetcache, context: {cluster: fleet, user: fleet-user, namespace: team-a}}
- {name: other, context: {cluster: other, user: other-user}}
`, fleet.srv.URL, fleet.ca, other.srv.URL, other.ca)
	if err := os.WriteFile(kubeconfig, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		opts      connectOptions
		server    *recorder
		token     string
		namespace string
	}{
		{"the context named fleetcache", connectOptions{kubeconfig: kubeconfig}, fleet, "fleet-token", "team-a"},
		{"--context", connectOptions{kubeconfig: kubeconfig, context: "other"}, other, "other-token", "default"},
		{"--context and --token", connectOptions{kubeconfig: kubeconfig, context: "other", token: "given"}, other, "given", "default"},
		{"--server alone", connectOptions{kubeconfig: kubeconfig, server: other.srv.URL, certificateAuthority: other.ca}, other, "", "default"},
		{"--server and --token", connectOptions{kubeconfig: kubeconfig, server: fleet.srv.URL, token: "t", insecure: true}, fleet, "t", "default"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Connect(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Query(t.Context(), `{ clusters { name } }`, nil, nil); err != nil {
				t.Fatal(err)
			}
			if got := tc.server.lastToken(); got != tc.token {
				t.Errorf("token %q, want %q", got, tc.token)
			}
			if c.namespace != tc.namespace {
				t.Errorf("namespace %q, want %q", c.namespace, tc.namespace)
			}
		})
	}
	t.Run("no kubeconfig", func(t *testing.T) {
		t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
		_, err := Connect(connectOptions{})
		if err == nil || !strings.Contains(err.Error(), "--server") {
			t.Errorf("got %v, want an error that says how to name a server", err)
		}
	})
}

// TestResolveKind checks kubectl's names for kinds against the types the
// server caches: plurals, kinds, groups, short names, and the core group
// first where two groups share a name.
func TestResolveKind(t *testing.T) {
	srv := newRecorder(t, `{"data":{"clusters":[{"resources":[
		{"kind":"Pod","resource":"pods"},{"kind":"Deployment.apps","resource":"deployments.apps"},
		{"kind":"Event","resource":"events"},{"kind":"Event.events.k8s.io","resource":"events.events.k8s.io"},
		{"kind":"Widget.a.example.com","resource":"widgets.a.example.com"},{"kind":"Widget.b.example.com","resource":"widgets.b.example.com"}]}]}}`)
	c, err := Connect(connectOptions{server: srv.srv.URL, certificateAuthority: srv.ca})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]kindRef{
		"pods": {"Pod", "pods", false}, "Pod": {"Pod", "pods", false}, "po": {"Pod", "pods", false}, "pod": {"Pod", "pods", false},
		"deploy": {"Deployment.apps", "deployments.apps", false}, "deployment.apps": {"Deployment.apps", "deployments.apps", false},
		"events": {"Event", "events", true}, "ev": {"Event", "events", true},
		"events.events.k8s.io":  {"Event.events.k8s.io", "events.events.k8s.io", true},
		"widgets.b.example.com": {"Widget.b.example.com", "widgets.b.example.com", true},
	} {
		got, err := resolveKind(t.Context(), c, name)
		if err != nil || got != want {
			t.Errorf("%s: %+v, %v; want %+v", name, got, err, want)
		}
	}
	for name, wantErr := range map[string]string{
		"widgets": `"widgets" is ambiguous: name the group, one of widgets.a.example.com, widgets.b.example.com`,
		"gadgets": `the server doesn't have a resource type "gadgets"`,
	} {
		if _, err := resolveKind(t.Context(), c, name); err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("%s: %v, want %q", name, err, wantErr)
		}
	}
}

// TestMainUsage checks the usage errors, which need no server.
func TestMainUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "Usage:"},
		{[]string{"--help"}, 0, "kubectl fleet get KIND"},
		{[]string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{[]string{"get", "pods", "-A", "-n", "x"}, 2, "-A and -n exclude each other"},
		{[]string{"get", "pods", "--by", "namespace"}, 2, "--by is a flag of count"},
		{[]string{"get", "pods", "-o", "table"}, 2, `unknown output format "table"`},
		{[]string{"count", "pods", "--by", "label"}, 2, "needs a value"},
		{[]string{"count", "pods", "--by", "owner"}, 2, `--by "owner"`},
		{[]string{"get", "pods", "--output-watch-events"}, 2, "goes with --watch"},
	} {
		var out, errOut bytes.Buffer
		code := Main(t.Context(), tc.args, &out, &errOut)
		if code != tc.code || !strings.Contains(out.String()+errOut.String(), tc.want) {
			t.Errorf("%q: exit %d, output %q; want %d and %q", tc.args, code, out.String()+errOut.String(), tc.code, tc.want)
		}
	}
}

// fakeFleet is a TLS server that answers each GraphQL request with the
// answer of the longest key its query contains.
func fakeFleet(t *testing.T, answers map[string]string) *recorder {
	t.Helper()
	r := newRecorder(t, "")
	r.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var body struct{ Query string }
		if err := json.NewDecoder(req.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		keys := slices.SortedFunc(maps.Keys(answers), func(a, b string) int { return len(b) - len(a) })
		for _, key := range keys {
			if strings.Contains(body.Query, key) {
				fmt.Fprint(w, answers[key])
				return
			}
		}
		http.Error(w, "no answer for "+body.Query, http.StatusBadRequest)
	})
	return r
}

// TestGetStaleAndWatchEvents checks that get warns on stderr about each
// cluster that is not current, with its status and freshness, exits 0
// (warnings are not errors, as in kubectl), and that with
// --output-watch-events the listed rows are ADDED events, as kubectl
// prints them.
func TestGetStaleAndWatchEvents(t *testing.T) {
	fresh := time.Now().Add(-9 * time.Second).UTC().Format(time.RFC3339)
	srv := fakeFleet(t, map[string]string{
		"resources { kind resource }": `{"data":{"clusters":[{"resources":[{"kind":"Pod","resource":"pods"}]}]}}`,
		"resources(":                  `{"data":{"resources":{"revision":"R1","staleClusters":["prod-us"],"edges":[{"node":` + podJSON + `}],"pageInfo":{"hasNextPage":false}}}}`,
		"currentAsOf":                 `{"data":{"clusters":[{"name":"prod-eu","status":"SYNCED"},{"name":"prod-us","status":"DISCONNECTED","currentAsOf":"` + fresh + `"}]}}`,
	})
	c, err := Connect(connectOptions{server: srv.srv.URL, certificateAuthority: srv.ca})
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	o := &options{watch: true, watchEvents: true, chunkSize: 10}
	p, fields, err := newPrinter(o, &out)
	if err != nil {
		t.Fatal(err)
	}
	g := &getter{o: o, c: c, kind: kindRef{"Pod", "pods", false}, filter: o.filter(c, "Pod"), fields: fields, p: p, stderr: &errOut}
	if _, n, err := g.list(t.Context(), true); err != nil || n != 1 {
		t.Fatalf("list: %d rows, %v", n, err)
	}
	if err := p.flush(); err != nil {
		t.Fatal(err)
	}
	want := "EVENT   CLUSTER   NAME    READY   STATUS    AGE\nADDED   prod-us   web-1   1/1     Running   5m\n"
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("listed rows (-want +got):\n%s", diff)
	}
	wantErr := `Warning: cluster "prod-us" is DISCONNECTED (data stale 9s): its rows may be missing or out of date` + "\n"
	if diff := cmp.Diff(wantErr, errOut.String()); diff != "" {
		t.Errorf("stderr (-want +got):\n%s", diff)
	}

	// Through Main: the warning, the rows, exit 0.
	out.Reset()
	errOut.Reset()
	code := Main(t.Context(), []string{"get", "pods", "--server", srv.srv.URL, "--certificate-authority", srv.ca}, &out, &errOut)
	if code != 0 || !strings.Contains(out.String(), "web-1") || !strings.Contains(errOut.String(), `Warning: cluster "prod-us" is DISCONNECTED`) {
		t.Errorf("exit %d, stdout %q, stderr %q; want 0, the row and the warning", code, out.String(), errOut.String())
	}
}

// podJSON is a Pod row as the server answers it.
const podJSON = `{"cluster":"prod-us","namespace":"web","name":"web-1","kind":"Pod","resource":"pods","apiVersion":"v1",
  "columns":[{"name":"Name","value":"web-1","priority":0},{"name":"Ready","value":"1/1","priority":0},
  {"name":"Status","value":"Running","priority":0},{"name":"Age","value":"5m","priority":0}]}`

// TestSortByThroughList checks that --sort-by through a list, kubectl's
// idiom for restarts, is refused before anything is asked, saying why and
// what to write instead; quoted keys with brackets are not lists.
func TestSortByThroughList(t *testing.T) {
	var out, errOut bytes.Buffer
	code := Main(t.Context(), []string{"get", "pods", "--server", "https://127.0.0.1:1", "--sort-by", ".status.containerStatuses[0].restartCount"}, &out, &errOut)
	want := `error: --sort-by ".status.containerStatuses[0].restartCount": fleetcache sorts by one value per object, so it refuses a path through a list ([0]); ` +
		`sort by a single value (.metadata.creationTimestamp, .status.phase), or select by the list's values with --field-selector 'status.containerStatuses[].restartCount>3' (holds where some element does)` +
		"\nSee 'kubectl fleet --help'.\n"
	if code != 2 || errOut.String() != want {
		t.Errorf("exit %d, stderr:\n%s\nwant 2 and:\n%s", code, errOut.String(), want)
	}
	for in, want := range map[string]string{
		".metadata.creationTimestamp":             "metadata.creationTimestamp",
		"{.status.phase}":                         "status.phase",
		`.metadata.labels["app.kubernetes.io/x"]`: `metadata.labels["app.kubernetes.io/x"]`,
	} {
		if got, err := sortPath(in); err != nil || got != want {
			t.Errorf("sortPath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"{.spec.containers[*].image}", ".items[].x", ".a[1:2]"} {
		if _, err := sortPath(in); err == nil {
			t.Errorf("sortPath(%q) accepted", in)
		}
	}
}
