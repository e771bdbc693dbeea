package clusters

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// fakeReporter records the configuration errors reported per cluster.
type fakeReporter struct {
	mu   sync.Mutex
	errs map[string]string
}

func (f *fakeReporter) ConfigError(cluster string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.errs == nil {
		f.errs = map[string]string{}
	}
	if err == nil {
		delete(f.errs, cluster)
		return
	}
	f.errs[cluster] = err.Error()
}

func (f *fakeReporter) snapshot() map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.errs)
}

// hosts returns the registered clusters as name -> host.
func hosts(reg *Registry) map[string]string {
	out := map[string]string{}
	for _, name := range reg.Names() {
		c, _ := reg.Get(name)
		out[name] = c.Config.Host
	}
	return out
}

func TestSources(t *testing.T) {
	reg := NewRegistry(newFakeRunner(), testOptions)
	rep := &fakeReporter{}
	src := NewSources(reg, rep, SourcesOptions{})
	bad := errors.New("bad kubeconfig")

	type step struct {
		name       string
		source     string
		cs         []Cluster
		invalid    map[string]error
		wantErr    string
		wantHosts  map[string]string
		wantErrors map[string]string
	}
	steps := []step{
		{
			name: "first source", source: "dir",
			cs:        []Cluster{cluster("a", "https://a1"), cluster("b", "https://b1")},
			wantHosts: map[string]string{"a": "https://a1", "b": "https://b1"},
		},
		{
			name: "second source adds its own and cannot take a name", source: "secrets",
			cs:        []Cluster{cluster("b", "https://b2"), cluster("c", "https://c1")},
			wantErr:   `cluster "b" of secrets: already defined by dir`,
			wantHosts: map[string]string{"a": "https://a1", "b": "https://b1", "c": "https://c1"},
		},
		{
			name: "a broken entry keeps its last good config", source: "secrets",
			cs: []Cluster{cluster("b", "https://b2")}, invalid: map[string]error{"c": bad},
			wantErr:    `already defined by dir`,
			wantHosts:  map[string]string{"a": "https://a1", "b": "https://b1", "c": "https://c1"},
			wantErrors: map[string]string{"c": "bad kubeconfig"},
		},
		{
			name: "a new broken entry is reported, not registered", source: "secrets",
			cs: []Cluster{cluster("b", "https://b2")}, invalid: map[string]error{"c": bad, "d": bad},
			wantErr:    `already defined by dir`,
			wantHosts:  map[string]string{"a": "https://a1", "b": "https://b1", "c": "https://c1"},
			wantErrors: map[string]string{"c": "bad kubeconfig", "d": "bad kubeconfig"},
		},
		{
			name: "a released name goes to the source that still names it", source: "dir",
			cs:         []Cluster{cluster("a", "https://a2")},
			wantHosts:  map[string]string{"a": "https://a2", "b": "https://b2", "c": "https://c1"},
			wantErrors: map[string]string{"c": "bad kubeconfig", "d": "bad kubeconfig"},
		},
		{
			name: "fixed and removed entries clear their errors", source: "secrets",
			cs:        []Cluster{cluster("c", "https://c3")},
			wantHosts: map[string]string{"a": "https://a2", "c": "https://c3"},
		},
		{
			name: "an empty list removes a source's clusters", source: "dir",
			wantHosts: map[string]string{"c": "https://c3"},
		},
	}
	for _, st := range steps {
		err := src.Set(st.source, st.cs, st.invalid)
		switch {
		case st.wantErr == "" && err != nil:
			t.Errorf("%s: Set: %v", st.name, err)
		case st.wantErr != "" && (err == nil || !strings.Contains(err.Error(), st.wantErr)):
			t.Errorf("%s: Set returned %v, want an error containing %q", st.name, err, st.wantErr)
		}
		if diff := cmp.Diff(st.wantHosts, hosts(reg)); diff != "" {
			t.Errorf("%s: registered (-want +got):\n%s", st.name, diff)
		}
		if diff := cmp.Diff(st.wantErrors, rep.snapshot(), cmpEmpty); diff != "" {
			t.Errorf("%s: reported errors (-want +got):\n%s", st.name, diff)
		}
	}
}

// cmpEmpty treats nil and empty maps alike.
var cmpEmpty = cmp.FilterValues(func(a, b map[string]string) bool { return len(a) == 0 && len(b) == 0 }, cmp.Ignore())

func secret(name string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: name}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

func kubeconfigYAML(t *testing.T, edit func(*clientcmdapi.Config)) string {
	t.Helper()
	cfg := testKubeconfig()
	cfg.CurrentContext = "one"
	if edit != nil {
		edit(cfg)
	}
	path := writeKubeconfig(t, filepath.Join(t.TempDir(), "config"), cfg)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestFromSecret(t *testing.T) {
	tests := []struct {
		name     string
		secret   *corev1.Secret
		wantName string
		wantHost string
		wantErr  string
	}{
		{
			name:     "server and token",
			secret:   secret("prod", map[string]string{"server": "https://prod.example:6443", "token": "abc", "ca.crt": ""}),
			wantName: "prod", wantHost: "https://prod.example:6443",
		},
		{
			name:     "name key",
			secret:   secret("s1", map[string]string{"name": " eu-west \n", "server": "https://eu", "token": "abc"}),
			wantName: "eu-west", wantHost: "https://eu",
		},
		{
			name:     "kubeconfig current context",
			secret:   secret("s2", map[string]string{"kubeconfig": kubeconfigYAML(t, nil)}),
			wantName: "s2", wantHost: "https://one.example:6443",
		},
		{name: "empty", secret: secret("s", nil), wantErr: `cluster secret fleet/s: neither "kubeconfig" nor "server" is set`},
		{name: "no token", secret: secret("s", map[string]string{"server": "https://x"}), wantErr: `"token" is empty`},
		{name: "both", secret: secret("s", map[string]string{"server": "https://x", "token": "t", "kubeconfig": "x"}), wantErr: "use one"},
		{name: "bad server", secret: secret("s", map[string]string{"server": "::", "token": "t"}), wantErr: "cluster secret fleet/s"},
		{name: "bad name", secret: secret("s", map[string]string{"name": "a b", "server": "https://x", "token": "t"}), wantErr: "cluster name"},
		{name: "garbage kubeconfig", secret: secret("s", map[string]string{"kubeconfig": "{{{"}), wantErr: "kubeconfig:"},
		{
			name: "exec plugin",
			secret: secret("s", map[string]string{"kubeconfig": kubeconfigYAML(t, func(c *clientcmdapi.Config) {
				c.CurrentContext = "three"
			})}),
			wantErr: "exec credential plugins are not allowed",
		},
		{
			name: "token file",
			secret: secret("s", map[string]string{"kubeconfig": kubeconfigYAML(t, func(c *clientcmdapi.Config) {
				c.AuthInfos["u1"].TokenFile = "/etc/passwd"
			})}),
			wantErr: "credentials name files",
		},
		{
			name: "no current context and several contexts",
			secret: secret("s", map[string]string{"kubeconfig": kubeconfigYAML(t, func(c *clientcmdapi.Config) {
				c.CurrentContext = ""
			})}),
			wantErr: "set current-context",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := FromSecret(tt.secret)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("FromSecret error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Name != tt.wantName || c.Config.Host != tt.wantHost {
				t.Errorf("FromSecret = %s at %s, want %s at %s", c.Name, c.Config.Host, tt.wantName, tt.wantHost)
			}
		})
	}
}

func TestSecretClustersDuplicates(t *testing.T) {
	cs, invalid, dups := secretClusters([]*corev1.Secret{
		secret("b", map[string]string{"name": "x", "server": "https://b", "token": "t"}),
		secret("a", map[string]string{"name": "x", "server": "https://a", "token": "t"}),
		secret("c", map[string]string{"server": "https://c"}),
	})
	if len(cs) != 1 || cs[0].Config.Host != "https://a" {
		t.Errorf("clusters %v, want x from secret a", cs)
	}
	if got := slices.Sorted(maps.Keys(invalid)); !slices.Equal(got, []string{"c"}) {
		t.Errorf("invalid %v, want c", got)
	}
	if len(dups) != 1 || !strings.Contains(dups[0].Error(), "already defined by cluster secret fleet/a") {
		t.Errorf("dups %v", dups)
	}
}

// recordingSink keeps the last list set.
type recordingSink struct {
	calls   int
	cs      []Cluster
	invalid map[string]error
}

func (r *recordingSink) Set(_ string, cs []Cluster, invalid map[string]error) error {
	r.calls++
	r.cs, r.invalid = cs, invalid
	return nil
}

func TestDirSource(t *testing.T) {
	dir := t.TempDir()
	sink := &recordingSink{}
	d := NewDirSource(dir, 0, sink)
	write := func(name string, cfg *clientcmdapi.Config) { writeKubeconfig(t, filepath.Join(dir, name), cfg) }
	check := func(what string, wantCalls int, wantNames, wantInvalid []string) {
		t.Helper()
		if err := d.sync(); err != nil && wantInvalid == nil {
			t.Errorf("%s: sync: %v", what, err)
		}
		var names []string
		for _, c := range sink.cs {
			names = append(names, c.Name)
		}
		if sink.calls != wantCalls || !slices.Equal(names, wantNames) || !slices.Equal(slices.Sorted(maps.Keys(sink.invalid)), wantInvalid) {
			t.Errorf("%s: %d calls, clusters %v, invalid %v; want %d, %v, %v",
				what, sink.calls, names, slices.Sorted(maps.Keys(sink.invalid)), wantCalls, wantNames, wantInvalid)
		}
	}
	check("empty dir", 1, nil, nil)
	check("no change, no call", 1, nil, nil)

	write("one", testKubeconfig())
	all := slices.Sorted(maps.Keys(testKubeconfig().Contexts))
	check("file added", 2, all, nil)
	check("unchanged", 2, all, nil)

	writeFile(t, filepath.Join(dir, "one"), "{{{ not yaml")
	check("file broken", 3, nil, all)

	write("one", testKubeconfig())
	check("file fixed", 4, all, nil)

	if err := os.Remove(filepath.Join(dir, "one")); err != nil {
		t.Fatal(err)
	}
	check("file removed", 5, nil, nil)

	writeFile(t, filepath.Join(dir, "new"), "{{{ not yaml")
	check("new broken file names nothing", 6, nil, []string{})
}
