package clusters

import (
	"strings"
	"testing"
)

// FuzzFromArgoCDSecret checks FromArgoCDSecret on the data anyone allowed
// to write Secrets in Argo CD's namespace controls: it never panics, a
// usable cluster is valid, and without allowExec it never runs a plugin.
func FuzzFromArgoCDSecret(f *testing.F) {
	f.Add("east", "https://east:6443", `{"bearerToken":"abc","tlsClientConfig":{"insecure":true}}`)
	f.Add("", "https://x", `{"username":"u","password":"p"}`)
	f.Add("e", "https://x", `{"execProviderConfig":{"command":"sh","apiVersion":"client.authentication.k8s.io/v1"}}`)
	f.Add("e", "::", `{"bearerToken":`)
	f.Add("a b", "https://x", `{"awsAuthConfig":{"clusterName":"c"}}`)
	f.Fuzz(func(t *testing.T, name, server, config string) {
		s := secret("s", map[string]string{"name": name, "server": server, "config": config})
		c, err := FromArgoCDSecret(s, false)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "argo cd cluster secret fleet/s: ") {
				t.Fatalf("error %q does not name the Secret", err)
			}
			return
		}
		if err := validate(c); err != nil {
			t.Fatalf("usable cluster is invalid: %v", err)
		}
		if c.Config.ExecProvider != nil {
			t.Fatal("an exec plugin without allowExec")
		}
		if c.Name != argoCDName(s) {
			t.Fatalf("argoCDName = %q, FromArgoCDSecret named the cluster %q", argoCDName(s), c.Name)
		}
	})
}
