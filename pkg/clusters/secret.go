package clusters

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// SecretLabel marks a Secret as a cluster registration: Secrets with the
// label set to "true" in the watched namespace each register one cluster.
const SecretLabel = "fleetcache.io/cluster"

// Keys of a cluster Secret's data.
const (
	// SecretKeyName holds the cluster name; default: the Secret's name.
	SecretKeyName = "name"
	// SecretKeyKubeconfig holds a kubeconfig; its current context (or its
	// only context) is the cluster.
	SecretKeyKubeconfig = "kubeconfig"
	// SecretKeyServer, SecretKeyCA and SecretKeyToken are the alternative to
	// a kubeconfig: the API server URL, an optional PEM CA bundle, and a
	// bearer token.
	SecretKeyServer = "server"
	SecretKeyCA     = "ca.crt"
	SecretKeyToken  = "token"
)

// FromSecret returns the cluster that a cluster Secret registers, or an error
// naming the Secret and what is wrong with it.
//
// A kubeconfig in a Secret must be self-contained: credentials that name
// files, exec credential plugins and auth-provider plugins are refused, since
// whoever may write Secrets in the namespace would otherwise make fleetcache
// read its own files or run commands.
func FromSecret(s *corev1.Secret) (Cluster, error) {
	name := s.Name
	if v, ok := s.Data[SecretKeyName]; ok {
		name = strings.TrimSpace(string(v))
	}
	c, err := secretCluster(name, s.Data)
	if err != nil {
		return Cluster{}, fmt.Errorf("cluster secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	return c, nil
}

// secretName is the name of the cluster that s registers, even when s is not
// usable, so that the error can be shown on that cluster.
func secretName(s *corev1.Secret) string {
	if v, ok := s.Data[SecretKeyName]; ok {
		if name := strings.TrimSpace(string(v)); validateName(name) == nil {
			return name
		}
	}
	return s.Name
}

func secretCluster(name string, data map[string][]byte) (Cluster, error) {
	if err := validateName(name); err != nil {
		return Cluster{}, fmt.Errorf("cluster name: %w", err)
	}
	var cfg *rest.Config
	switch kc, hasKubeconfig := data[SecretKeyKubeconfig]; {
	case hasKubeconfig && len(data[SecretKeyServer]) > 0:
		return Cluster{}, fmt.Errorf("both %q and %q are set: use one", SecretKeyKubeconfig, SecretKeyServer)
	case hasKubeconfig:
		var err error
		if cfg, err = secretKubeconfig(kc, false); err != nil {
			return Cluster{}, fmt.Errorf("%s: %w", SecretKeyKubeconfig, err)
		}
	case len(data[SecretKeyServer]) > 0:
		token := strings.TrimSpace(string(data[SecretKeyToken]))
		if token == "" {
			return Cluster{}, fmt.Errorf("%q is set but %q is empty", SecretKeyServer, SecretKeyToken)
		}
		cfg = &rest.Config{
			Host:            strings.TrimSpace(string(data[SecretKeyServer])),
			BearerToken:     token,
			TLSClientConfig: rest.TLSClientConfig{CAData: data[SecretKeyCA]},
		}
	default:
		return Cluster{}, fmt.Errorf("neither %q nor %q is set", SecretKeyKubeconfig, SecretKeyServer)
	}
	c := Cluster{Name: name, Config: cfg}
	if err := validate(c); err != nil {
		return Cluster{}, err
	}
	return c, nil
}

// secretKubeconfig returns the cluster of the current (or only) context of
// a kubeconfig held in a Secret, which must be self-contained: no file
// names, no auth-provider plugins, and exec credential plugins only when
// allowExec.
func secretKubeconfig(data []byte, allowExec bool) (*rest.Config, error) {
	kc, err := clientcmd.Load(data)
	if err != nil {
		return nil, err
	}
	ctxName := kc.CurrentContext
	if ctxName == "" {
		if len(kc.Contexts) != 1 {
			return nil, fmt.Errorf("no current-context and %d contexts: set current-context", len(kc.Contexts))
		}
		ctxName = slices.Collect(maps.Keys(kc.Contexts))[0]
	}
	kctx, ok := kc.Contexts[ctxName]
	if !ok {
		return nil, fmt.Errorf("current-context %q not found", ctxName)
	}
	if cl, ok := kc.Clusters[kctx.Cluster]; ok && cl.CertificateAuthority != "" {
		return nil, errors.New("certificate-authority names a file: use certificate-authority-data")
	}
	if u, ok := kc.AuthInfos[kctx.AuthInfo]; ok {
		switch {
		case u.Exec != nil && !allowExec:
			return nil, errors.New("exec credential plugins are not allowed in cluster secrets (see allowExecPlugins)")
		case u.AuthProvider != nil:
			return nil, errors.New("auth-provider plugins are not allowed in cluster secrets")
		case u.ClientCertificate != "" || u.ClientKey != "" || u.TokenFile != "":
			return nil, errors.New("credentials name files: use client-certificate-data, client-key-data or token")
		}
	}
	return contextConfig(kc, ctxName)
}

// SetSink takes the whole current list of a source; Sources implements it.
type SetSink interface {
	Set(source string, cs []Cluster, invalid map[string]error) error
}

// SecretSource registers one cluster per Secret labelled SecretLabel=true in
// a namespace, and follows those Secrets as they are added, changed and
// deleted. A Secret that cannot be used is reported as invalid under the name
// of the cluster it names; nothing else changes. The cluster's labels are the
// Secret's, without SecretLabel.
type SecretSource struct {
	client    kubernetes.Interface
	namespace string
	sink      SetSink
}

// NewSecretSource returns a SecretSource that reads the Secrets of namespace
// through client and sets its list in sink.
func NewSecretSource(client kubernetes.Interface, namespace string, sink SetSink) (*SecretSource, error) {
	if namespace == "" {
		return nil, errors.New("cluster secrets: no namespace")
	}
	return &SecretSource{client: client, namespace: namespace, sink: sink}, nil
}

// Name is the source name under which the Secrets' clusters are set.
func (s *SecretSource) Name() string { return "secrets in namespace " + s.namespace }

// Start watches the Secrets until ctx ends. Each change sets the whole list
// again, so a burst of changes costs one update once it has been read.
func (s *SecretSource) Start(ctx context.Context) error {
	factory := secretInformers(s.client, s.namespace, labels.Set{SecretLabel: "true"}.AsSelector())
	defer factory.Shutdown()
	return follow(ctx, s.Name(), "cluster secret", factory.Core().V1().Secrets().Informer(), factory.Start,
		secretsRead(func(sec *corev1.Secret) registration {
			c, err := FromSecret(sec)
			c.Info.Labels = withoutKeys(sec.Labels, SecretLabel)
			return registration{name: secretName(sec), cluster: c, err: err, info: c.Info}
		}), s.sink)
}

// secretInformers returns an informer factory for the Secrets of namespace
// (every namespace when "") that sel selects.
func secretInformers(client kubernetes.Interface, namespace string, sel labels.Selector) kubeinformers.SharedInformerFactory {
	return kubeinformers.NewSharedInformerFactoryWithOptions(client, 0,
		kubeinformers.WithNamespace(namespace),
		kubeinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = sel.String() }))
}

// secretsRead returns a read function for follow that turns each Secret of
// the store into a registration with fn.
func secretsRead(fn func(*corev1.Secret) registration) func([]any) []registration {
	return func(objs []any) []registration {
		out := make([]registration, 0, len(objs))
		for _, o := range objs {
			sec, ok := o.(*corev1.Secret)
			if !ok {
				continue
			}
			r := fn(sec)
			r.key = sec.Namespace + "/" + sec.Name
			out = append(out, r)
		}
		return out
	}
}

// secretClusters turns Secrets into clusters, and those that cannot be used
// into errors by cluster name. When two Secrets name the same cluster, the
// first by Secret name registers it and the other is an error in dups.
func secretClusters(secrets []*corev1.Secret) (cs []Cluster, invalid map[string]error, dups []error) {
	objs := make([]any, len(secrets))
	for i, s := range secrets {
		objs[i] = s
	}
	return collect("cluster secret", secretsRead(func(sec *corev1.Secret) registration {
		c, err := FromSecret(sec)
		return registration{name: secretName(sec), cluster: c, err: err}
	})(objs))
}
