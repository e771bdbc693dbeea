package clusters

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"unicode"
	"unicode/utf8"

	"k8s.io/client-go/rest"

	"github.com/fleetcache/fleetcache/pkg/inventory"
)

// Cluster is one registered cluster.
type Cluster struct {
	// Name identifies the cluster in the registry, in logs and in metrics; see
	// [Registry.Add] for what a valid name is.
	Name string
	// Config reaches the cluster's kube-apiserver.
	Config *rest.Config
	// Info is what the cluster's source says about it beside how to reach
	// it: the source object's labels, the source, the control plane's
	// health. The Registry ignores it (a relabel restarts nothing);
	// Sources publishes it, with the configured labels, to its Inventory.
	Info inventory.Info
}

// maxNameLen bounds a cluster name. Context names such as EKS ARNs
// ("arn:aws:eks:<region>:<account>:cluster/<name>") stay well below it.
const maxNameLen = 253

// validateName accepts any non-empty, printable UTF-8 string of at most
// maxNameLen bytes without white space, so that kubeconfig context names of every
// major provider pass ("kind-dev", "gke_proj_zone_name", "user@cluster",
// "arn:aws:eks:…:cluster/name") while names that break log lines, label values
// or URLs do not.
func validateName(name string) error {
	switch {
	case name == "":
		return errors.New("empty name")
	case len(name) > maxNameLen:
		return fmt.Errorf("name longer than %d bytes", maxNameLen)
	case !utf8.ValidString(name):
		return errors.New("name is not valid UTF-8")
	}
	for _, r := range name {
		if !unicode.IsPrint(r) || unicode.IsSpace(r) {
			return fmt.Errorf("name contains %q", r)
		}
	}
	return nil
}

// validate checks c as Add, Update and Set accept it. Errors do not repeat the
// name: callers wrap them with it.
func validate(c Cluster) error {
	if err := validateName(c.Name); err != nil {
		return err
	}
	if c.Config == nil {
		return errors.New("nil config")
	}
	if c.Config.Host == "" {
		return errors.New("empty host")
	}
	if _, _, err := rest.DefaultServerUrlFor(c.Config); err != nil {
		return fmt.Errorf("invalid host %q: %w", c.Config.Host, err)
	}
	return nil
}

// copyConfig returns a copy of cfg that shares no mutable data with it, so that
// neither the caller nor a Runner can change a config the registry holds.
// Function-valued fields (Proxy, Dial, WrapTransport, …) are shared.
func copyConfig(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.CertData = slices.Clone(c.CertData)
	c.KeyData = slices.Clone(c.KeyData)
	c.CAData = slices.Clone(c.CAData)
	c.NextProtos = slices.Clone(c.NextProtos)
	c.Impersonate.Groups = slices.Clone(c.Impersonate.Groups)
	if c.Impersonate.Extra != nil {
		extra := make(map[string][]string, len(c.Impersonate.Extra))
		for k, v := range c.Impersonate.Extra {
			extra[k] = slices.Clone(v)
		}
		c.Impersonate.Extra = extra
	}
	if c.ExecProvider != nil {
		exec := *c.ExecProvider
		exec.Args = slices.Clone(exec.Args)
		exec.Env = slices.Clone(exec.Env)
		c.ExecProvider = &exec
	}
	if c.AuthProvider != nil {
		ap := *c.AuthProvider
		ap.Config = maps.Clone(ap.Config)
		c.AuthProvider = &ap
	}
	return c
}

// equivalent reports whether a and b reach the same server with the same
// identity, which is when a running cluster need not restart. It compares the
// server (Host, APIPath, proxy), the TLS settings (CA, client certificate and key
// as data and as file names, Insecure, ServerName, NextProtos), the credentials
// (bearer token and token file, basic auth), impersonation, the exec plugin
// config and the auth provider's name.
//
// It does not compare: the bearer token itself when both configs read it from the
// same file (client-go re-reads that file, so a rotated token needs no restart);
// the auth provider's Config map (providers persist refreshed tokens there); the
// contents behind file names; and client-side tuning such as QPS, Burst,
// UserAgent, Timeout or ContentConfig.
func equivalent(a, b *rest.Config) bool {
	if a.Host != b.Host || a.APIPath != b.APIPath ||
		a.Username != b.Username || a.Password != b.Password ||
		a.BearerTokenFile != b.BearerTokenFile {
		return false
	}
	if a.BearerTokenFile == "" && a.BearerToken != b.BearerToken {
		return false
	}
	ta, tb := a.TLSClientConfig, b.TLSClientConfig
	if ta.Insecure != tb.Insecure || ta.ServerName != tb.ServerName ||
		ta.CertFile != tb.CertFile || ta.KeyFile != tb.KeyFile || ta.CAFile != tb.CAFile ||
		!slices.Equal(ta.CertData, tb.CertData) || !slices.Equal(ta.KeyData, tb.KeyData) ||
		!slices.Equal(ta.CAData, tb.CAData) || !slices.Equal(ta.NextProtos, tb.NextProtos) {
		return false
	}
	ia, ib := a.Impersonate, b.Impersonate
	if ia.UserName != ib.UserName || ia.UID != ib.UID || !slices.Equal(ia.Groups, ib.Groups) ||
		!maps.EqualFunc(ia.Extra, ib.Extra, slices.Equal) {
		return false
	}
	if (a.ExecProvider == nil) != (b.ExecProvider == nil) ||
		(a.ExecProvider != nil && !reflect.DeepEqual(a.ExecProvider, b.ExecProvider)) {
		return false
	}
	if (a.AuthProvider == nil) != (b.AuthProvider == nil) ||
		(a.AuthProvider != nil && a.AuthProvider.Name != b.AuthProvider.Name) {
		return false
	}
	return sameProxy(a, b)
}

// sameProxy compares the Proxy funcs of a and b, which cannot be compared
// directly, by the proxy each picks for a request to a's server. Two nil funcs
// are the same; a nil and a non-nil one are not, even if the non-nil one picks no
// proxy, because a nil Proxy means client-go's default (the environment).
func sameProxy(a, b *rest.Config) bool {
	if a.Proxy == nil || b.Proxy == nil {
		return a.Proxy == nil && b.Proxy == nil
	}
	u, _, err := rest.DefaultServerUrlFor(a)
	if err != nil {
		return false
	}
	req := &http.Request{Method: http.MethodGet, URL: u, Header: http.Header{}, Host: u.Host}
	pa, errA := a.Proxy(req)
	pb, errB := b.Proxy(req)
	if errA != nil || errB != nil {
		return false
	}
	return urlString(pa) == urlString(pb)
}

func urlString(u *url.URL) string {
	if u == nil {
		return ""
	}
	return u.String()
}
