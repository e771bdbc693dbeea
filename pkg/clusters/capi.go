package clusters

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/kubernetes"

	"github.com/fleetcache/fleetcache/pkg/inventory"
)

// Cluster API's kubeconfig Secrets: Cluster API writes one per workload
// cluster, named <cluster>-kubeconfig, labelled with the cluster's name,
// holding an admin kubeconfig in data key "value".
const (
	// CAPIClusterNameLabel names the Cluster API cluster a Secret belongs to.
	CAPIClusterNameLabel = "cluster.x-k8s.io/cluster-name"
	// CAPIKubeconfigKey is the data key of the kubeconfig.
	CAPIKubeconfigKey = "value"
	// capiSecretSuffix ends the name of the kubeconfig Secret.
	capiSecretSuffix = "-kubeconfig"
)

// CAPIOptions configures a CAPISource.
type CAPIOptions struct {
	// Namespace is where the Secrets are; "" (the default) watches every
	// namespace.
	Namespace string
	// AllowExecPlugins accepts kubeconfigs with exec credential plugins
	// (Cluster API's EKS provider writes such a "-user-kubeconfig"). Off by
	// default: whoever may write Secrets there could run commands in
	// fleetcache's container.
	AllowExecPlugins bool
}

// CAPISource registers the workload clusters of Cluster API from their
// <cluster>-kubeconfig Secrets and follows them: a new Secret adds a
// cluster, a changed one (rotated certificates) updates it, a deleted one
// removes it. The cluster name is the Secret's CAPIClusterNameLabel; the
// labels are the Secret's without that one. Two namespaces holding a
// cluster of the same name: the first namespace in alphabetical order
// registers it, the other is an error.
type CAPISource struct {
	client kubernetes.Interface
	opts   CAPIOptions
	sink   SetSink
}

// NewCAPISource returns a CAPISource that reads Secrets through client and
// sets its list in sink.
func NewCAPISource(client kubernetes.Interface, opts CAPIOptions, sink SetSink) *CAPISource {
	return &CAPISource{client: client, opts: opts, sink: sink}
}

// Name is the source name under which its clusters are set.
func (s *CAPISource) Name() string { return "Cluster API secrets" + inNamespace(s.opts.Namespace) }

// Start follows the Secrets until ctx ends.
func (s *CAPISource) Start(ctx context.Context) error {
	req, err := labels.NewRequirement(CAPIClusterNameLabel, selection.Exists, nil)
	if err != nil {
		return fmt.Errorf("cluster api secrets: %w", err)
	}
	factory := secretInformers(s.client, s.opts.Namespace, labels.NewSelector().Add(*req))
	defer factory.Shutdown()
	return follow(ctx, s.Name(), "cluster api secret", factory.Core().V1().Secrets().Informer(), factory.Start,
		secretsRead(s.register), s.sink)
}

// register reads one labelled Secret. Secrets with the label but another
// name (CA and certificate Secrets of the cluster) register nothing.
func (s *CAPISource) register(sec *corev1.Secret) registration {
	name := sec.Labels[CAPIClusterNameLabel]
	if sec.Name != name+capiSecretSuffix {
		return registration{}
	}
	c, err := s.cluster(name, sec)
	if err != nil {
		err = fmt.Errorf("cluster api secret %s/%s: %w", sec.Namespace, sec.Name, err)
	}
	return registration{name: name, cluster: c, err: err, info: capiInfo(sec)}
}

// capiInfo is what a Cluster API kubeconfig Secret says of its cluster,
// usable or not.
func capiInfo(sec *corev1.Secret) inventory.Info {
	return inventory.Info{Labels: withoutKeys(sec.Labels, CAPIClusterNameLabel), Source: "Cluster API secret " + sec.Namespace + "/" + sec.Name}
}

func (s *CAPISource) cluster(name string, sec *corev1.Secret) (Cluster, error) {
	if err := validateName(name); err != nil {
		return Cluster{}, fmt.Errorf("cluster name: %w", err)
	}
	kc, ok := sec.Data[CAPIKubeconfigKey]
	if !ok || len(kc) == 0 {
		return Cluster{}, fmt.Errorf("no kubeconfig: data key %q is missing or empty", CAPIKubeconfigKey)
	}
	cfg, err := secretKubeconfig(kc, s.opts.AllowExecPlugins)
	if err != nil {
		return Cluster{}, fmt.Errorf("%s: %w", CAPIKubeconfigKey, err)
	}
	c := Cluster{Name: name, Config: cfg}
	if err := validate(c); err != nil {
		return Cluster{}, err
	}
	c.Info = capiInfo(sec)
	return c, nil
}

// inNamespace says where a source looks, for its name.
func inNamespace(ns string) string {
	if ns == "" {
		return " in every namespace"
	}
	return " in namespace " + strings.TrimSpace(ns)
}
