package app

import (
	"fmt"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/fleetcache/fleetcache/pkg/authn"
	"github.com/fleetcache/fleetcache/pkg/authz"
	"github.com/fleetcache/fleetcache/pkg/clusters"
)

// Authentication and authorization modes.
const (
	AuthnNone                = "none"
	AuthnTokenReview         = "tokenreview"
	AuthzSubjectAccessReview = "subjectaccessreview"
	AuthzPolicy              = "policy"
)

// AuthOptions configure who may call the API and what each caller sees.
type AuthOptions struct {
	// Authn is AuthnTokenReview or AuthnNone. Default AuthnNone for this
	// Go API, which Run logs loudly; the command's default, from Config, is
	// AuthnTokenReview.
	Authn string
	// AuthnConfig reaches the cluster that reviews tokens. Default: built
	// from AuthnKubeconfig and AuthnContext, else the in-cluster configuration.
	AuthnConfig *rest.Config
	// AuthnKubeconfig and AuthnContext name that cluster in a kubeconfig.
	AuthnKubeconfig, AuthnContext string
	// AuthnCacheTTL is how long an accepted token's review is reused.
	// Default authn.DefaultTokenReviewOptions().TTL.
	AuthnCacheTTL time.Duration
	// Authz is AuthzSubjectAccessReview (default) or AuthzPolicy; it
	// applies only with authentication.
	Authz string
	// AuthzCacheTTL is how long a decision is reused. Default
	// authz.DefaultOptions().TTL.
	AuthzCacheTTL time.Duration
	// AuthzCacheSize bounds the cached decisions. Default
	// authz.DefaultOptions().CacheSize.
	AuthzCacheSize int
	// PolicyRules are the rules of AuthzPolicy.
	PolicyRules []authz.Rule
}

// auth is what AuthOptions build: all nil without authentication.
type auth struct {
	authn *authn.TokenReview
	authz *authz.Authorizer
	// impersonator decides, in the cluster that reviews tokens, whom a
	// caller may impersonate.
	impersonator *authz.Impersonator
	// home is the cluster that reviews tokens; it also decides who may use
	// the operator endpoints (/debug/pprof).
	home kubernetes.Interface
}

// build builds the authenticator and authorizer that opts ask for.
func (o AuthOptions) build(reg *clusters.Registry) (auth, error) {
	switch o.Authn {
	case "", AuthnNone:
		return auth{}, nil
	case AuthnTokenReview:
	default:
		return auth{}, fmt.Errorf("authn: unknown mode %q", o.Authn)
	}
	cfg := o.AuthnConfig
	if cfg == nil {
		var err error
		if o.AuthnKubeconfig != "" {
			cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
				&clientcmd.ClientConfigLoadingRules{ExplicitPath: o.AuthnKubeconfig},
				&clientcmd.ConfigOverrides{CurrentContext: o.AuthnContext}).ClientConfig()
		} else {
			cfg, err = rest.InClusterConfig()
		}
		if err != nil {
			return auth{}, fmt.Errorf("authn: reach the cluster that reviews tokens: %w", err)
		}
	}
	cfg = rest.CopyConfig(cfg)
	// One review per new token a second is client-go's default of 5: far
	// too few when many portals connect at once.
	cfg.QPS, cfg.Burst = 100, 200
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return auth{}, fmt.Errorf("authn: %w", err)
	}
	an := authn.NewTokenReview(client, authn.TokenReviewOptions{TTL: o.AuthnCacheTTL})

	var d authz.Decider
	switch o.Authz {
	case "", AuthzSubjectAccessReview:
		d = authz.NewSubjectAccessReview(reg, 0)
	case AuthzPolicy:
		if d, err = authz.NewPolicy(o.PolicyRules); err != nil {
			return auth{}, fmt.Errorf("authz: %w", err)
		}
	default:
		return auth{}, fmt.Errorf("authz: unknown mode %q", o.Authz)
	}
	azOpts := authz.Options{TTL: o.AuthzCacheTTL, CacheSize: o.AuthzCacheSize}
	// Impersonation is decided where tokens are reviewed, as
	// kube-apiserver decides it where it authenticates.
	im := authz.NewImpersonator(authz.NewSubjectAccessReview(homeConfig{cfg}, 0), azOpts)
	return auth{authn: an, authz: authz.New(d, azOpts), impersonator: im, home: client}, nil
}

// homeConfig is the cluster that reviews tokens, as an authz.ConfigSource
// of one cluster, whatever its name.
type homeConfig struct{ cfg *rest.Config }

func (h homeConfig) ClusterConfig(string) (*rest.Config, bool) { return h.cfg, true }
