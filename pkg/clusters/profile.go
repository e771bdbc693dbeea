package clusters

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapiv1 "k8s.io/client-go/tools/clientcmd/api/v1"

	"github.com/fleetcache/fleetcache/pkg/inventory"
)

// ClusterProfileResource is the resource of the sig-multicluster
// ClusterProfile API (KEP-4322) that ProfileSource reads: v1alpha1, the
// storage version, served by every release of the CRD.
var ClusterProfileResource = schema.GroupVersionResource{Group: "multicluster.x-k8s.io", Version: "v1alpha1", Resource: "clusterprofiles"}

// ControlPlaneHealthy is the ClusterProfile condition that ProfileSource
// shows beside fleetcache's own health.
const ControlPlaneHealthy = "ControlPlaneHealthy"

// Providers maps the name of an access provider to the exec credential
// plugin that gets credentials from it: the providers file of KEP-5339.
type Providers struct {
	list []Provider
}

// Provider is one entry of a providers file.
type Provider struct {
	Name       string                    `json:"name"`
	ExecConfig clientcmdapiv1.ExecConfig `json:"execConfig"`
}

// LoadProviders reads a KEP-5339 providers file,
// {"providers":[{"name":"…","execConfig":{…}}]}, with execConfig as in a
// kubeconfig's user.exec (command, args, env, apiVersion,
// provideClusterInfo, interactiveMode). Unknown fields, an entry without
// name, command or apiVersion, and a name given twice are errors.
func LoadProviders(path string) (*Providers, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("providers file: %w", err)
	}
	p, err := ParseProviders(data)
	if err != nil {
		return nil, fmt.Errorf("providers file %s: %w", path, err)
	}
	return p, nil
}

// ParseProviders parses the content of a providers file (see LoadProviders).
func ParseProviders(data []byte) (*Providers, error) {
	var file struct {
		Providers []Provider `json:"providers"`
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&file); err != nil {
		return nil, err
	}
	if len(file.Providers) == 0 {
		return nil, errors.New("no providers")
	}
	seen := map[string]bool{}
	for i, p := range file.Providers {
		switch {
		case p.Name == "":
			return nil, fmt.Errorf("providers[%d]: no name", i)
		case seen[p.Name]:
			return nil, fmt.Errorf("providers[%d]: %q given twice", i, p.Name)
		case p.ExecConfig.Command == "" || p.ExecConfig.APIVersion == "":
			return nil, fmt.Errorf("providers[%d] (%s): execConfig needs command and apiVersion", i, p.Name)
		}
		seen[p.Name] = true
		if p.ExecConfig.InteractiveMode == "" {
			file.Providers[i].ExecConfig.InteractiveMode = clientcmdapiv1.NeverExecInteractiveMode
		}
	}
	return &Providers{list: file.Providers}, nil
}

// Names returns the providers' names, in file order.
func (p *Providers) Names() []string {
	out := make([]string, len(p.list))
	for i, e := range p.list {
		out[i] = e.Name
	}
	return out
}

func (p *Providers) get(name string) (clientcmdapiv1.ExecConfig, bool) {
	for _, e := range p.list {
		if e.Name == name {
			return e.ExecConfig, true
		}
	}
	return clientcmdapiv1.ExecConfig{}, false
}

// clusterProfile is what ProfileSource reads of a ClusterProfile.
type clusterProfile struct {
	Metadata metav1.ObjectMeta `json:"metadata"`
	Status   struct {
		Conditions      []metav1.Condition `json:"conditions"`
		AccessProviders []accessProvider   `json:"accessProviders"`
		// CredentialProviders is the deprecated name of AccessProviders.
		CredentialProviders []accessProvider `json:"credentialProviders"`
	} `json:"status"`
}

// accessProvider is one way to reach a profile's cluster: the provider's
// name and the kubeconfig cluster (server, CA, extensions).
type accessProvider struct {
	Name    string                 `json:"name"`
	Cluster clientcmdapiv1.Cluster `json:"cluster"`
}

// FromClusterProfile returns the cluster of a ClusterProfile (as the
// dynamic client returns it): named after the profile, with its labels
// and its ControlPlaneHealthy condition, reached through the first access
// provider (status.accessProviders, then status.credentialProviders) that
// providers names, with that provider's exec plugin. With the plugin's
// provideClusterInfo, client-go hands it the cluster, and the cluster's
// "client.authentication.k8s.io/exec" extension, in KUBERNETES_EXEC_INFO.
func FromClusterProfile(u *unstructured.Unstructured, providers *Providers) (Cluster, error) {
	c, err := profileCluster(u, providers)
	if err != nil {
		return Cluster{}, fmt.Errorf("clusterprofile %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	return c, nil
}

func profileCluster(u *unstructured.Unstructured, providers *Providers) (Cluster, error) {
	raw, err := json.Marshal(u.Object)
	if err != nil {
		return Cluster{}, err
	}
	var p clusterProfile
	if err := json.Unmarshal(raw, &p); err != nil {
		return Cluster{}, fmt.Errorf("read status: %w", err)
	}
	name := p.Metadata.Name
	if err := validateName(name); err != nil {
		return Cluster{}, fmt.Errorf("cluster name: %w", err)
	}
	offered := append(slices.Clone(p.Status.AccessProviders), p.Status.CredentialProviders...)
	var (
		ap   *accessProvider
		exec clientcmdapiv1.ExecConfig
	)
	for i := range offered {
		if e, ok := providers.get(offered[i].Name); ok {
			ap, exec = &offered[i], e
			break
		}
	}
	if ap == nil {
		names := make([]string, len(offered))
		for i, o := range offered {
			names[i] = o.Name
		}
		return Cluster{}, fmt.Errorf("no access provider of the profile (%s) is in the providers file (%s)",
			listOrNone(names), listOrNone(providers.Names()))
	}
	if ap.Cluster.CertificateAuthority != "" {
		return Cluster{}, fmt.Errorf("access provider %q: certificate-authority names a file: use certificate-authority-data", ap.Name)
	}
	kc := clientcmdapiv1.Config{
		Clusters:       []clientcmdapiv1.NamedCluster{{Name: name, Cluster: ap.Cluster}},
		AuthInfos:      []clientcmdapiv1.NamedAuthInfo{{Name: name, AuthInfo: clientcmdapiv1.AuthInfo{Exec: &exec}}},
		Contexts:       []clientcmdapiv1.NamedContext{{Name: name, Context: clientcmdapiv1.Context{Cluster: name, AuthInfo: name}}},
		CurrentContext: name,
	}
	data, err := json.Marshal(kc)
	if err != nil {
		return Cluster{}, err
	}
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return Cluster{}, fmt.Errorf("access provider %q: %w", ap.Name, err)
	}
	rc, err := contextConfig(cfg, name)
	if err != nil {
		return Cluster{}, fmt.Errorf("access provider %q: %w", ap.Name, err)
	}
	return Cluster{Name: name, Config: rc, Info: p.info()}, nil
}

// info is what the profile says of its cluster: its labels, itself as the
// source, its ControlPlaneHealthy condition.
func (p *clusterProfile) info() inventory.Info {
	info := inventory.Info{Labels: p.Metadata.Labels, Source: "ClusterProfile " + p.Metadata.Namespace + "/" + p.Metadata.Name}
	if cond := findCondition(p.Status.Conditions, ControlPlaneHealthy); cond != nil && cond.Status != metav1.ConditionUnknown {
		healthy := cond.Status == metav1.ConditionTrue
		info.ControlPlaneHealthy = &healthy
		info.ControlPlaneMessage = strings.TrimSpace(strings.Join([]string{cond.Reason, cond.Message}, ": "))
		info.ControlPlaneMessage = strings.Trim(info.ControlPlaneMessage, ": ")
	}
	return info
}

// profileRegistration is what a ClusterProfile registers: its cluster, or
// the error that keeps it from doing so, with its labels and source either
// way.
func profileRegistration(u *unstructured.Unstructured, providers *Providers) registration {
	c, err := FromClusterProfile(u, providers)
	info := c.Info
	if err != nil {
		info = profileInfo(u)
	}
	return registration{key: u.GetNamespace() + "/" + u.GetName(), name: u.GetName(), cluster: c, err: err, info: info}
}

// profileInfo is what a ClusterProfile that cannot be used says of its
// cluster, as far as it can be read.
func profileInfo(u *unstructured.Unstructured) inventory.Info {
	var p clusterProfile
	if raw, err := json.Marshal(u.Object); err == nil && json.Unmarshal(raw, &p) == nil {
		return p.info()
	}
	return inventory.Info{Labels: u.GetLabels(), Source: "ClusterProfile " + u.GetNamespace() + "/" + u.GetName()}
}

func findCondition(conds []metav1.Condition, t string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// ProfileOptions configures a ProfileSource.
type ProfileOptions struct {
	// Namespace is where the ClusterProfiles are; "" (the default) watches
	// every namespace.
	Namespace string
	// Providers are the access providers fleetcache can use. Required.
	Providers *Providers
}

// ProfileSource registers one cluster per ClusterProfile and follows the
// profiles: a new profile adds a cluster, a change (another server or CA,
// new labels, a new condition) updates it, a deleted profile removes it.
// A profile that fleetcache cannot reach (no known access provider) is an
// error on its cluster. Two profiles of the same name in different
// namespaces (two cluster managers naming a cluster alike): the first
// namespace in alphabetical order registers it, the other is an error.
type ProfileSource struct {
	client dynamic.Interface
	opts   ProfileOptions
	sink   SetSink
}

// NewProfileSource returns a ProfileSource that reads ClusterProfiles
// through client and sets its list in sink.
func NewProfileSource(client dynamic.Interface, opts ProfileOptions, sink SetSink) (*ProfileSource, error) {
	if opts.Providers == nil {
		return nil, errors.New("clusterprofiles: no providers")
	}
	return &ProfileSource{client: client, opts: opts, sink: sink}, nil
}

// Name is the source name under which its clusters are set.
func (s *ProfileSource) Name() string { return "ClusterProfiles" + inNamespace(s.opts.Namespace) }

// Start follows the ClusterProfiles until ctx ends. While the API is not
// served (the CRD is not installed), the informer retries and nothing is
// registered.
func (s *ProfileSource) Start(ctx context.Context) error {
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(s.client, 0, s.opts.Namespace, nil)
	defer factory.Shutdown()
	informer := factory.ForResource(ClusterProfileResource).Informer()
	return follow(ctx, s.Name(), "clusterprofile", informer, factory.Start, func(objs []any) []registration {
		out := make([]registration, 0, len(objs))
		for _, o := range objs {
			u, ok := o.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			out = append(out, profileRegistration(u, s.opts.Providers))
		}
		return out
	}, s.sink)
}
