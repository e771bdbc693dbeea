package fleetctl

import (
	"bytes"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
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
