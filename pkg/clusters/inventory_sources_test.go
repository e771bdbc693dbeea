package clusters

import (
	"encoding/base64"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/fleetcache/fleetcache/pkg/inventory"
)

func argoSecret(name string, labels map[string]string, data map[string]string) *corev1.Secret {
	s := secret(name, data)
	s.Labels = labels
	return s
}

func TestFromArgoCDSecret(t *testing.T) {
	ca := base64.StdEncoding.EncodeToString([]byte("ca-pem"))
	tests := []struct {
		name      string
		data      map[string]string
		allowExec bool
		wantHost  string
		wantErr   string
		check     func(t *testing.T, c Cluster)
	}{
		{
			name: "bearer token and CA", data: map[string]string{"name": "east", "server": "https://east:6443",
				"config": `{"bearerToken":"abc","tlsClientConfig":{"caData":"` + ca + `","serverName":"api"}}`, "project": "p"},
			wantHost: "https://east:6443",
			check: func(t *testing.T, c Cluster) {
				if c.Name != "east" || c.Config.BearerToken != "abc" || string(c.Config.CAData) != "ca-pem" || c.Config.ServerName != "api" {
					t.Errorf("config %+v", c.Config)
				}
			},
		},
		{
			name: "name defaults to the server", data: map[string]string{"server": "https://x", "config": `{"username":"u","password":"p"}`},
			wantHost: "https://x",
			check: func(t *testing.T, c Cluster) {
				if c.Name != "https://x" || c.Config.Username != "u" {
					t.Errorf("%s %+v", c.Name, c.Config)
				}
			},
		},
		{
			name: "exec allowed", allowExec: true,
			data:     map[string]string{"name": "e", "server": "https://x", "config": `{"execProviderConfig":{"command":"get-token","args":["a"],"env":{"B":"2","A":"1"},"apiVersion":"client.authentication.k8s.io/v1"}}`},
			wantHost: "https://x",
			check: func(t *testing.T, c Cluster) {
				e := c.Config.ExecProvider
				if e == nil || e.Command != "get-token" || len(e.Env) != 2 || e.Env[0].Name != "A" || !e.StdinUnavailable ||
					e.InteractiveMode != clientcmdapi.NeverExecInteractiveMode {
					t.Errorf("exec %+v", e)
				}
			},
		},
		{name: "exec refused", data: map[string]string{"name": "e", "server": "https://x", "config": `{"execProviderConfig":{"command":"x","apiVersion":"v"}}`}, wantErr: "execProviderConfig is not allowed"},
		{name: "malformed config", data: map[string]string{"name": "e", "server": "https://x", "config": `{"bearerToken": `}, wantErr: "argo cd cluster secret fleet/s: config:"},
		{name: "unknown field", data: map[string]string{"name": "e", "server": "https://x", "config": `{"bearerToken":"a","oidc":{}}`}, wantErr: `unknown field "oidc"`},
		{name: "aws", data: map[string]string{"name": "e", "server": "https://x", "config": `{"awsAuthConfig":{"clusterName":"c"}}`}, wantErr: "awsAuthConfig is not supported"},
		{name: "proxy", data: map[string]string{"name": "e", "server": "https://x", "config": `{"bearerToken":"a","proxyUrl":"http://p"}`}, wantErr: "proxyUrl is not supported"},
		{name: "no credentials", data: map[string]string{"name": "e", "server": "https://x", "config": `{"tlsClientConfig":{"insecure":true}}`}, wantErr: "no credentials"},
		{name: "cert without key", data: map[string]string{"name": "e", "server": "https://x", "config": `{"tlsClientConfig":{"certData":"` + ca + `"}}`}, wantErr: "both certData and keyData"},
		{name: "no config", data: map[string]string{"name": "e", "server": "https://x"}, wantErr: `no "config"`},
		{name: "no server", data: map[string]string{"name": "e", "config": `{"bearerToken":"a"}`}, wantErr: `no "server"`},
		{name: "namespaces", data: map[string]string{"name": "e", "server": "https://x", "namespaces": "a,b", "config": `{"bearerToken":"a"}`}, wantErr: `"namespaces" is not supported`},
		{name: "bad name", data: map[string]string{"name": "a b", "server": "https://x", "config": `{"bearerToken":"a"}`}, wantErr: "cluster name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sec := argoSecret("s", map[string]string{ArgoCDSecretTypeLabel: "cluster", "env": "prod"}, tt.data)
			c, err := FromArgoCDSecret(sec, tt.allowExec)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Config.Host != tt.wantHost {
				t.Errorf("host %q, want %q", c.Config.Host, tt.wantHost)
			}
			if diff := cmp.Diff(map[string]string{"env": "prod"}, c.Info.Labels); diff != "" {
				t.Errorf("labels (-want +got):\n%s", diff)
			}
			tt.check(t, c)
		})
	}
}

func TestCAPIRegister(t *testing.T) {
	kc := kubeconfigYAML(t, nil)
	withExec := kubeconfigYAML(t, func(c *clientcmdapi.Config) { c.CurrentContext = "three" })
	capi := func(name, cluster string, data map[string]string) *corev1.Secret {
		return argoSecret(name, map[string]string{CAPIClusterNameLabel: cluster, "team": "a"}, data)
	}
	tests := []struct {
		name      string
		secret    *corev1.Secret
		allowExec bool
		wantName  string
		wantErr   string
	}{
		{name: "kubeconfig", secret: capi("prod-kubeconfig", "prod", map[string]string{"value": kc}), wantName: "prod"},
		{name: "another secret of the cluster", secret: capi("prod-ca", "prod", map[string]string{"tls.crt": "x"})},
		{name: "no value", secret: capi("prod-kubeconfig", "prod", map[string]string{"other": "x"}), wantName: "prod",
			wantErr: `cluster api secret fleet/prod-kubeconfig: no kubeconfig: data key "value" is missing or empty`},
		{name: "exec refused", secret: capi("prod-kubeconfig", "prod", map[string]string{"value": withExec}), wantName: "prod", wantErr: "exec credential plugins are not allowed"},
		{name: "exec allowed", secret: capi("prod-kubeconfig", "prod", map[string]string{"value": withExec}), allowExec: true, wantName: "prod"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &CAPISource{opts: CAPIOptions{AllowExecPlugins: tt.allowExec}}
			r := s.register(tt.secret)
			if r.name != tt.wantName {
				t.Errorf("name %q, want %q", r.name, tt.wantName)
			}
			switch {
			case tt.wantErr == "" && r.err != nil:
				t.Fatal(r.err)
			case tt.wantErr != "" && (r.err == nil || !strings.Contains(r.err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want one containing %q", r.err, tt.wantErr)
			case tt.wantErr == "" && tt.wantName != "":
				if r.cluster.Config == nil || !maps.Equal(r.cluster.Info.Labels, map[string]string{"team": "a"}) {
					t.Errorf("cluster %+v", r.cluster)
				}
			}
		})
	}
}

func TestCollectClash(t *testing.T) {
	regs := []registration{
		{key: "ns-b/prod", name: "prod", cluster: cluster("prod", "https://b")},
		{key: "ns-a/prod", name: "prod", cluster: cluster("prod", "https://a")},
		{key: "ns-a/skip"},
	}
	cs, invalid, dups := collect("clusterprofile", regs)
	if len(cs) != 1 || cs[0].Config.Host != "https://a" || len(invalid) != 0 {
		t.Errorf("clusters %v invalid %v: want prod from ns-a", cs, invalid)
	}
	if len(dups) != 1 || dups[0].Error() != `clusterprofile ns-b/prod: cluster "prod" already defined by clusterprofile ns-a/prod` {
		t.Errorf("dups %v", dups)
	}
}

func TestParseProviders(t *testing.T) {
	tests := []struct {
		name, data, wantErr string
	}{
		{name: "ok", data: `{"providers":[{"name":"a","execConfig":{"command":"c","apiVersion":"client.authentication.k8s.io/v1"}}]}`},
		{name: "empty", data: `{"providers":[]}`, wantErr: "no providers"},
		{name: "unknown field", data: `{"providers":[{"name":"a","exec":{}}]}`, wantErr: `unknown field "exec"`},
		{name: "no name", data: `{"providers":[{"execConfig":{"command":"c","apiVersion":"v"}}]}`, wantErr: "providers[0]: no name"},
		{name: "twice", data: `{"providers":[{"name":"a","execConfig":{"command":"c","apiVersion":"v"}},{"name":"a","execConfig":{"command":"c","apiVersion":"v"}}]}`, wantErr: `"a" given twice`},
		{name: "no command", data: `{"providers":[{"name":"a","execConfig":{"apiVersion":"v"}}]}`, wantErr: "needs command and apiVersion"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ParseProviders([]byte(tt.data))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if e, _ := p.get("a"); e.InteractiveMode != "Never" {
				t.Errorf("interactiveMode %q, want Never by default", e.InteractiveMode)
			}
		})
	}
}

func profile(labels map[string]string, status map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ClusterProfile",
		"metadata": map[string]any{"name": "prod", "namespace": "fleet"},
		"status":   status,
	}}
	u.SetLabels(labels)
	return u
}

func TestFromClusterProfile(t *testing.T) {
	providers, err := ParseProviders([]byte(`{"providers":[
		{"name":"token","execConfig":{"command":"get-token","apiVersion":"client.authentication.k8s.io/v1","provideClusterInfo":true}},
		{"name":"other","execConfig":{"command":"other","apiVersion":"client.authentication.k8s.io/v1"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	ap := func(name, server string) map[string]any {
		return map[string]any{"name": name, "cluster": map[string]any{
			"server": server, "certificate-authority-data": base64.StdEncoding.EncodeToString([]byte("ca")),
			"extensions": []any{map[string]any{"name": "client.authentication.k8s.io/exec", "extension": map[string]any{"audience": "x"}}},
		}}
	}
	healthy := []any{map[string]any{"type": "ControlPlaneHealthy", "status": "False", "reason": "Down", "message": "no answer",
		"lastTransitionTime": "2026-01-01T00:00:00Z"}}
	tests := []struct {
		name     string
		u        *unstructured.Unstructured
		wantHost string
		wantExec string
		wantErr  string
		wantInfo inventory.Info
	}{
		{
			name:     "first known provider",
			u:        profile(map[string]string{"env": "prod"}, map[string]any{"accessProviders": []any{ap("unknown", "https://u"), ap("other", "https://o"), ap("token", "https://t")}, "conditions": healthy}),
			wantHost: "https://o", wantExec: "other",
			wantInfo: inventory.Info{Labels: map[string]string{"env": "prod"}, Source: "ClusterProfile fleet/prod", ControlPlaneHealthy: new(bool), ControlPlaneMessage: "Down: no answer"},
		},
		{
			name:     "deprecated credentialProviders",
			u:        profile(nil, map[string]any{"credentialProviders": []any{ap("token", "https://t")}}),
			wantHost: "https://t", wantExec: "get-token",
			wantInfo: inventory.Info{Source: "ClusterProfile fleet/prod"},
		},
		{
			name:    "no known provider",
			u:       profile(nil, map[string]any{"accessProviders": []any{ap("unknown", "https://u")}}),
			wantErr: "clusterprofile fleet/prod: no access provider of the profile (unknown) is in the providers file (token, other)",
		},
		{name: "no status", u: profile(nil, nil), wantErr: "no access provider of the profile (none)"},
		{
			name: "CA file", wantErr: "certificate-authority names a file",
			u: profile(nil, map[string]any{"accessProviders": []any{map[string]any{"name": "token", "cluster": map[string]any{"server": "https://t", "certificate-authority": "/etc/ca"}}}}),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := FromClusterProfile(tt.u, providers)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Name != "prod" || c.Config.Host != tt.wantHost || string(c.Config.CAData) != "ca" ||
				c.Config.ExecProvider == nil || c.Config.ExecProvider.Command != tt.wantExec {
				t.Errorf("cluster %s %+v", c.Name, c.Config)
			}
			if diff := cmp.Diff(tt.wantInfo, c.Info); diff != "" {
				t.Errorf("info (-want +got):\n%s", diff)
			}
		})
	}
	// provideClusterInfo hands the cluster's exec extension to the plugin.
	c, err := FromClusterProfile(profile(nil, map[string]any{"accessProviders": []any{ap("token", "https://t")}}), providers)
	if err != nil {
		t.Fatal(err)
	}
	if e := c.Config.ExecProvider; !e.ProvideClusterInfo || e.Config == nil {
		t.Errorf("exec %+v: want provideClusterInfo with the extension", e)
	}
}

func TestSourcesInventory(t *testing.T) {
	reg := NewRegistry(newFakeRunner(), testOptions)
	store := inventory.NewStore()
	src := NewSources(reg, nil, SourcesOptions{Inventory: store, Labels: map[string]map[string]string{"a": {"env": "prod"}, "gone": {"x": "y"}}})
	a := cluster("a", "https://a")
	a.Info = inventory.Info{Labels: map[string]string{"env": "dev", "team": "t"}, Source: "ClusterProfile ns/a"}
	if err := src.Set("profiles", []Cluster{a, cluster("b", "https://b")}, nil); err != nil {
		t.Fatal(err)
	}
	got := map[string]inventory.Info{}
	for _, name := range []string{"a", "b", "gone"} {
		if i, ok := store.Get(name); ok {
			got[name] = i
		}
	}
	want := map[string]inventory.Info{
		"a": {Labels: map[string]string{"env": "prod", "team": "t"}, Source: "ClusterProfile ns/a"},
		"b": {Labels: map[string]string{}, Source: "profiles"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("inventory (-want +got):\n%s", diff)
	}
	if a.Info.Labels["env"] != "dev" {
		t.Errorf("the source's labels were modified: %v", a.Info.Labels)
	}
	v, changed := store.Watch()
	// A relabel changes the inventory, not the registry.
	a.Info.Labels = map[string]string{"team": "u"}
	if err := src.Set("profiles", []Cluster{a, cluster("b", "https://b")}, nil); err != nil {
		t.Fatal(err)
	}
	if changed.Err() == nil {
		t.Error("the watch did not end with the relabel")
	}
	if v2, _ := store.Watch(); v2 != v+1 {
		t.Errorf("version %d after %d", v2, v)
	}
	if names := slices.Collect(maps.Keys(hosts(reg))); len(names) != 2 {
		t.Errorf("registered %v", names)
	}
}
