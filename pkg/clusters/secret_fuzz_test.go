package clusters

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// FuzzFromSecret checks FromSecret on Secrets whose data anyone allowed to
// write Secrets in the watched namespace chooses. It must never panic; an
// error names the Secret; and an accepted Secret yields a named cluster
// whose Config reaches a server by URL and holds no credential that names
// a file or runs a plugin, which is the rule that keeps such a writer from
// making fleetcache read its files or run commands.
func FuzzFromSecret(f *testing.F) {
	kubeconfig := func(mutate func(*clientcmdapi.Config)) []byte {
		kc := testKubeconfig()
		if mutate != nil {
			mutate(kc)
		}
		b, err := clientcmd.Write(*kc)
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	exec := kubeconfig(func(kc *clientcmdapi.Config) {
		for _, u := range kc.AuthInfos {
			u.Token = ""
			u.Exec = &clientcmdapi.ExecConfig{Command: "/bin/sh", APIVersion: "client.authentication.k8s.io/v1", InteractiveMode: clientcmdapi.NeverExecInteractiveMode}
		}
	})
	files := kubeconfig(func(kc *clientcmdapi.Config) {
		for _, c := range kc.Clusters {
			c.CertificateAuthority = "/etc/passwd"
		}
		for _, u := range kc.AuthInfos {
			u.TokenFile = "/etc/shadow"
		}
	})
	for _, seed := range []struct{ name, kubeconfig, server, ca, token string }{
		{kubeconfig: string(kubeconfig(nil))},
		{name: " prod-1 ", kubeconfig: string(kubeconfig(func(kc *clientcmdapi.Config) { kc.CurrentContext = "" }))},
		{kubeconfig: string(exec)},
		{kubeconfig: string(files)},
		{kubeconfig: "apiVersion: v1\nkind: Config\nusers:\n- name: u\n  user:\n    auth-provider:\n      name: gcp\n"},
		{kubeconfig: "clusters: [{name: c, cluster: {server: 'https://x'}}]\ncontexts: [{name: a, context: {cluster: c, user: ''}}]\nusers: [{name: '', user: {tokenFile: /x}}]\n"},
		{server: "https://10.0.0.1:6443", token: "t0k3n", ca: "-----BEGIN CERTIFICATE-----\nMII=\n-----END CERTIFICATE-----\n"},
		{name: "c", server: " https://example.com ", token: " "},
		{name: "Not_A_Name", server: "http://[::1]:80", token: "x"},
		{server: "://", token: "x"},
		{server: "unix:///var/run/x.sock", token: "x", kubeconfig: ""},
		{},
	} {
		f.Add(seed.name, seed.kubeconfig, seed.server, seed.ca, seed.token)
	}
	f.Fuzz(func(t *testing.T, name, kubeconfig, server, ca, token string) {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "secret-1"}, Data: map[string][]byte{}}
		// An empty input stands for a key that is not set, so that both
		// ways to register, and neither, are reached.
		for key, v := range map[string]string{SecretKeyName: name, SecretKeyKubeconfig: kubeconfig, SecretKeyServer: server, SecretKeyCA: ca, SecretKeyToken: token} {
			if v != "" {
				s.Data[key] = []byte(v)
			}
		}
		c, err := FromSecret(s)
		if err != nil {
			if !strings.Contains(err.Error(), "fleet/secret-1") {
				t.Fatalf("error does not name the secret: %v", err)
			}
			return
		}
		if c.Name == "" || validateName(c.Name) != nil {
			t.Fatalf("accepted cluster name %q", c.Name)
		}
		if got := secretName(s); got != c.Name {
			t.Fatalf("secretName = %q, FromSecret named the cluster %q", got, c.Name)
		}
		cfg := c.Config
		if cfg == nil || cfg.Host == "" {
			t.Fatalf("cluster %q without a host: %+v", c.Name, cfg)
		}
		if _, _, err := rest.DefaultServerUrlFor(cfg); err != nil {
			t.Fatalf("cluster %q: bad host %q: %v", c.Name, cfg.Host, err)
		}
		switch {
		case cfg.ExecProvider != nil:
			t.Fatalf("cluster %q runs exec plugin %q", c.Name, cfg.ExecProvider.Command)
		case cfg.AuthProvider != nil:
			t.Fatalf("cluster %q uses auth provider %q", c.Name, cfg.AuthProvider.Name)
		case cfg.BearerTokenFile != "" || cfg.CAFile != "" || cfg.CertFile != "" || cfg.KeyFile != "":
			t.Fatalf("cluster %q reads files: token %q, CA %q, cert %q, key %q",
				c.Name, cfg.BearerTokenFile, cfg.CAFile, cfg.CertFile, cfg.KeyFile)
		case cfg.Timeout != 0:
			t.Fatalf("cluster %q: Timeout %v", c.Name, cfg.Timeout)
		}
	})
}
