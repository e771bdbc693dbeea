package clusters

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/fleetcache/fleetcache/pkg/inventory"
)

// Argo CD's cluster Secrets: labelled ArgoCDSecretTypeLabel=cluster, with
// the data keys name, server and config.
const (
	// ArgoCDSecretTypeLabel marks Argo CD's Secrets by what they hold.
	ArgoCDSecretTypeLabel = "argocd.argoproj.io/secret-type"
	// ArgoCDSecretTypeCluster is the label's value on cluster Secrets.
	ArgoCDSecretTypeCluster = "cluster"
)

// ArgoCDOptions configures an ArgoCDSource.
type ArgoCDOptions struct {
	// Namespace is where the Secrets are (Argo CD's namespace, commonly
	// "argocd"); "" watches every namespace.
	Namespace string
	// AllowExecPlugins accepts config.execProviderConfig. Off by default:
	// whoever may write Secrets there could run commands in fleetcache's
	// container.
	AllowExecPlugins bool
}

// ArgoCDSource registers the clusters of Argo CD's cluster Secrets and
// follows them. The cluster name is the Secret's "name" (default: its
// "server"); the labels are the Secret's without ArgoCDSecretTypeLabel.
// FromArgoCDSecret says which fields are honoured.
type ArgoCDSource struct {
	client kubernetes.Interface
	opts   ArgoCDOptions
	sink   SetSink
}

// NewArgoCDSource returns an ArgoCDSource that reads Secrets through client
// and sets its list in sink.
func NewArgoCDSource(client kubernetes.Interface, opts ArgoCDOptions, sink SetSink) *ArgoCDSource {
	return &ArgoCDSource{client: client, opts: opts, sink: sink}
}

// Name is the source name under which its clusters are set.
func (s *ArgoCDSource) Name() string {
	return "Argo CD cluster secrets" + inNamespace(s.opts.Namespace)
}

// Start follows the Secrets until ctx ends.
func (s *ArgoCDSource) Start(ctx context.Context) error {
	factory := secretInformers(s.client, s.opts.Namespace, labels.Set{ArgoCDSecretTypeLabel: ArgoCDSecretTypeCluster}.AsSelector())
	defer factory.Shutdown()
	return follow(ctx, s.Name(), "argo cd cluster secret", factory.Core().V1().Secrets().Informer(), factory.Start,
		secretsRead(func(sec *corev1.Secret) registration { return argoCDRegistration(sec, s.opts.AllowExecPlugins) }), s.sink)
}

// argoCDConfig is the JSON of an Argo CD cluster Secret's "config" key,
// as far as fleetcache reads it. Unknown fields are errors.
type argoCDConfig struct {
	BearerToken        string              `json:"bearerToken"`
	Username           string              `json:"username"`
	Password           string              `json:"password"`
	TLSClientConfig    argoCDTLS           `json:"tlsClientConfig"`
	ExecProviderConfig *argoCDExecProvider `json:"execProviderConfig"`
	// The fields below are Argo CD's but not supported: set, each is an
	// error rather than a silently different connection.
	AWSAuthConfig   json.RawMessage `json:"awsAuthConfig"`
	ProxyURL        string          `json:"proxyUrl"`
	DisableCompress bool            `json:"disableCompression"`
}

type argoCDTLS struct {
	Insecure   bool   `json:"insecure"`
	ServerName string `json:"serverName"`
	CAData     []byte `json:"caData"`
	CertData   []byte `json:"certData"`
	KeyData    []byte `json:"keyData"`
}

type argoCDExecProvider struct {
	Command     string            `json:"command"`
	Args        []string          `json:"args"`
	Env         map[string]string `json:"env"`
	APIVersion  string            `json:"apiVersion"`
	InstallHint string            `json:"installHint"`
}

// argoCDName is the name of the cluster that s registers, even when s is
// not usable.
func argoCDName(s *corev1.Secret) string {
	if n := strings.TrimSpace(string(s.Data["name"])); n != "" {
		return n
	}
	return strings.TrimSpace(string(s.Data["server"]))
}

// FromArgoCDSecret returns the cluster of an Argo CD cluster Secret, or an
// error naming the Secret and what is wrong with it.
//
// Honoured: name, server, and in config bearerToken, username and
// password, tlsClientConfig (insecure, serverName, caData, certData,
// keyData) and, with allowExec, execProviderConfig (command, args, env,
// apiVersion, installHint). Errors: a config that is not JSON or has
// fields fleetcache does not know; awsAuthConfig (use an exec plugin
// such as "aws eks get-token" instead), proxyUrl and disableCompression;
// namespaces (fleetcache caches cluster-wide lists, and a namespace-scoped
// Argo CD cluster would only fail); a config without credentials. The keys
// project, shard and clusterResources only concern Argo CD and are ignored.
func FromArgoCDSecret(s *corev1.Secret, allowExec bool) (Cluster, error) {
	c, err := argoCDCluster(s, allowExec)
	if err != nil {
		return Cluster{}, fmt.Errorf("argo cd cluster secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	c.Info = argoCDInfo(s)
	return c, nil
}

// argoCDRegistration is what an Argo CD cluster Secret registers: its
// cluster, or the error that keeps it from doing so, with its labels and
// source either way.
func argoCDRegistration(sec *corev1.Secret, allowExec bool) registration {
	c, err := FromArgoCDSecret(sec, allowExec)
	return registration{name: argoCDName(sec), cluster: c, err: err, info: argoCDInfo(sec)}
}

// argoCDInfo is what an Argo CD cluster Secret says of its cluster, usable
// or not.
func argoCDInfo(s *corev1.Secret) inventory.Info {
	return inventory.Info{Labels: withoutKeys(s.Labels, ArgoCDSecretTypeLabel), Source: "Argo CD cluster secret " + s.Namespace + "/" + s.Name}
}

func argoCDCluster(s *corev1.Secret, allowExec bool) (Cluster, error) {
	name := argoCDName(s)
	if err := validateName(name); err != nil {
		return Cluster{}, fmt.Errorf("cluster name: %w", err)
	}
	server := strings.TrimSpace(string(s.Data["server"]))
	if server == "" {
		return Cluster{}, errors.New(`no "server"`)
	}
	if ns := strings.TrimSpace(string(s.Data["namespaces"])); ns != "" {
		return Cluster{}, errors.New(`"namespaces" is not supported: fleetcache lists cluster-wide, give it a cluster-wide identity`)
	}
	if len(bytes.TrimSpace(s.Data["config"])) == 0 {
		return Cluster{}, errors.New(`no "config"`)
	}
	var conf argoCDConfig
	dec := json.NewDecoder(bytes.NewReader(s.Data["config"]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&conf); err != nil {
		return Cluster{}, fmt.Errorf("config: %w", err)
	}
	switch {
	case len(conf.AWSAuthConfig) > 0 && string(conf.AWSAuthConfig) != "null":
		return Cluster{}, errors.New("config: awsAuthConfig is not supported: use execProviderConfig with an exec plugin such as aws eks get-token")
	case conf.ProxyURL != "":
		return Cluster{}, errors.New("config: proxyUrl is not supported")
	case conf.DisableCompress:
		return Cluster{}, errors.New("config: disableCompression is not supported")
	case conf.ExecProviderConfig != nil && !allowExec:
		return Cluster{}, errors.New("config: execProviderConfig is not allowed (see allowExecPlugins)")
	}
	tls := conf.TLSClientConfig
	cfg := &rest.Config{
		Host:        server,
		BearerToken: conf.BearerToken,
		Username:    conf.Username,
		Password:    conf.Password,
		TLSClientConfig: rest.TLSClientConfig{
			Insecure: tls.Insecure, ServerName: tls.ServerName,
			CAData: tls.CAData, CertData: tls.CertData, KeyData: tls.KeyData,
		},
	}
	if e := conf.ExecProviderConfig; e != nil {
		if e.Command == "" || e.APIVersion == "" {
			return Cluster{}, errors.New("config: execProviderConfig needs command and apiVersion")
		}
		exec := &clientcmdapi.ExecConfig{
			Command: e.Command, Args: e.Args, APIVersion: e.APIVersion, InstallHint: e.InstallHint,
			InteractiveMode: clientcmdapi.NeverExecInteractiveMode, StdinUnavailable: true,
			StdinUnavailableMessage: "fleetcache runs exec credential plugins without a terminal",
		}
		for _, k := range slices.Sorted(maps.Keys(e.Env)) {
			exec.Env = append(exec.Env, clientcmdapi.ExecEnvVar{Name: k, Value: e.Env[k]})
		}
		cfg.ExecProvider = exec
	}
	if conf.BearerToken == "" && conf.Username == "" && len(tls.CertData) == 0 && cfg.ExecProvider == nil {
		return Cluster{}, errors.New("config: no credentials: set bearerToken, username and password, tlsClientConfig.certData and keyData, or execProviderConfig")
	}
	if (len(tls.CertData) == 0) != (len(tls.KeyData) == 0) {
		return Cluster{}, errors.New("config: tlsClientConfig needs both certData and keyData")
	}
	c := Cluster{Name: name, Config: cfg}
	if err := validate(c); err != nil {
		return Cluster{}, err
	}
	return c, nil
}
