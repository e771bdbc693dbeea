package authz

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/fleetcache/fleetcache/pkg/authn"
)

// Attributes are one question: may the user list (or Verb) Resource (a
// kubectl name, "deployments.apps") in Namespace ("" for cluster-wide) of
// Cluster?
type Attributes struct {
	Cluster, Namespace, Resource string
	// Verb is the verb asked: "get", "list" or "watch" (the Kubernetes API,
	// package kubeapi, asks for the verb of each request), or "impersonate"
	// (Impersonator). Default "list", what seeing objects in the index
	// means.
	Verb string
	// Subresource and Name narrow the question to a subresource and an
	// object's name, as impersonation asks (userextras/<key>, a user's
	// name). Default "": none.
	Subresource, Name string
}

// verb returns a.Verb, "list" when empty.
func (a Attributes) verb() string {
	if a.Verb == "" {
		return "list"
	}
	return a.Verb
}

// Decider answers one question. An error means no answer: the caller treats
// it as a denial.
type Decider interface {
	Decide(ctx context.Context, u *authn.User, a Attributes) (bool, error)
}

// ConfigSource gives the rest.Config that reaches a member cluster; the
// cluster registry implements it.
type ConfigSource interface {
	ClusterConfig(name string) (*rest.Config, bool)
}

// Client-side rate limit of the reviews sent to one member cluster.
const (
	reviewQPS   = 100
	reviewBurst = 200
)

// SubjectAccessReview decides by asking the member cluster with a
// SubjectAccessReview for the verb asked (Attributes.Verb: list by default).
type SubjectAccessReview struct {
	configs ConfigSource
	timeout time.Duration

	mu      sync.Mutex
	clients map[string]reviewClient // by cluster
}

type reviewClient struct {
	fingerprint [sha256.Size]byte
	client      kubernetes.Interface
}

// NewSubjectAccessReview returns a Decider that reaches each member cluster
// through configs, bounding each review by timeout (default 5s).
func NewSubjectAccessReview(configs ConfigSource, timeout time.Duration) *SubjectAccessReview {
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	return &SubjectAccessReview{configs: configs, timeout: timeout, clients: map[string]reviewClient{}}
}

// Decide asks a's cluster whether u may list (or a.Verb) a.Resource in
// a.Namespace.
func (s *SubjectAccessReview) Decide(ctx context.Context, u *authn.User, a Attributes) (bool, error) {
	client, err := s.client(a.Cluster)
	if err != nil {
		return false, err
	}
	resource, group, _ := strings.Cut(a.Resource, ".")
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   u.Name,
		UID:    u.UID,
		Groups: u.Groups,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: a.verb(), Group: group, Resource: resource, Subresource: a.Subresource, Namespace: a.Namespace, Name: a.Name,
		},
	}}
	if len(u.Extra) > 0 {
		sar.Spec.Extra = make(map[string]authorizationv1.ExtraValue, len(u.Extra))
		for k, v := range u.Extra {
			sar.Spec.Extra[k] = v
		}
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	res, err := client.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("access review in cluster %q: %w", a.Cluster, err)
	}
	return res.Status.Allowed, nil
}

// client returns a client of the cluster's current configuration.
func (s *SubjectAccessReview) client(cluster string) (kubernetes.Interface, error) {
	cfg, ok := s.configs.ClusterConfig(cluster)
	if !ok {
		return nil, fmt.Errorf("access review in cluster %q: cluster not registered", cluster)
	}
	fp := fingerprint(cfg)
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.clients[cluster]; ok && c.fingerprint == fp {
		return c.client, nil
	}
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = s.timeout
	// Reviews come in bursts (a cold scope asks one per type, then per
	// namespace where denied): client-go's default of 5 per second would
	// queue a first page for seconds.
	cfg.QPS, cfg.Burst = reviewQPS, reviewBurst
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("access review in cluster %q: %w", cluster, err)
	}
	s.clients[cluster] = reviewClient{fingerprint: fp, client: client}
	return client, nil
}

// fingerprint identifies what a config connects to and as whom, so that a
// changed registration gets a new client.
func fingerprint(cfg *rest.Config) [sha256.Size]byte {
	h := sha256.New()
	for _, part := range []string{cfg.Host, cfg.APIPath, cfg.BearerToken, cfg.BearerTokenFile, cfg.Username, cfg.Password,
		string(cfg.CAData), cfg.CAFile, string(cfg.CertData), cfg.CertFile, string(cfg.KeyData), cfg.KeyFile,
		cfg.ServerName, fmt.Sprint(cfg.Insecure), fmt.Sprint(cfg.ExecProvider), fmt.Sprint(cfg.Impersonate)} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}

// Rule grants read access (get, list and watch) to the users and groups it
// names (at least one) over the clusters, namespaces and resources it names;
// an empty list or "*" means all. A rule that names namespaces never grants
// cluster-wide access.
type Rule struct {
	Users      []string `json:"users,omitempty"`
	Groups     []string `json:"groups,omitempty"`
	Clusters   []string `json:"clusters,omitempty"`
	Namespaces []string `json:"namespaces,omitempty"`
	Resources  []string `json:"resources,omitempty"`
}

// Validate checks that the rule names who it applies to.
func (r Rule) Validate() error {
	if len(r.Users) == 0 && len(r.Groups) == 0 {
		return fmt.Errorf("names no users and no groups")
	}
	return nil
}

// Policy decides from rules, for fleets whose members do not share
// identities with the cluster that authenticates callers.
type Policy struct {
	rules []Rule
}

// NewPolicy returns a Decider of rules.
func NewPolicy(rules []Rule) (*Policy, error) {
	for i, r := range rules {
		if err := r.Validate(); err != nil {
			return nil, fmt.Errorf("rule %d: %w", i, err)
		}
	}
	return &Policy{rules: rules}, nil
}

// Decide reports whether any rule grants a to u. Rules grant the read verbs
// only.
func (p *Policy) Decide(_ context.Context, u *authn.User, a Attributes) (bool, error) {
	if !slices.Contains([]string{"get", "list", "watch"}, a.verb()) {
		return false, nil
	}
	for _, r := range p.rules {
		who := slices.Contains(r.Users, u.Name) || slices.ContainsFunc(r.Groups, func(g string) bool {
			return g == "*" || slices.Contains(u.Groups, g)
		})
		if !who || !matches(r.Clusters, a.Cluster) || !matches(r.Resources, a.Resource) {
			continue
		}
		if a.Namespace == "" && !all(r.Namespaces) {
			continue
		}
		if a.Namespace != "" && !matches(r.Namespaces, a.Namespace) {
			continue
		}
		return true, nil
	}
	return false, nil
}

func all(values []string) bool { return len(values) == 0 || slices.Contains(values, "*") }

func matches(values []string, v string) bool { return all(values) || slices.Contains(values, v) }
