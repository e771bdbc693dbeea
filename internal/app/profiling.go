package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"

	"github.com/go-chi/chi/v5"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/fleetcache/fleetcache/pkg/authn"
)

// routeProfiling serves Go's profiles at /debug/pprof/ as Kubernetes
// components do (k8s.io/apiserver/pkg/server/routes.Profiling: the index
// and named profiles, profile, symbol, trace; not cmdline). guard, when not
// nil, admits operators only.
func routeProfiling(r chi.Router, guard func(http.Handler) http.Handler) {
	r.Group(func(r chi.Router) {
		if guard != nil {
			r.Use(guard)
		}
		r.Get("/debug/pprof", http.RedirectHandler("/debug/pprof/", http.StatusMovedPermanently).ServeHTTP)
		r.HandleFunc("/debug/pprof/*", pprof.Index)
		r.HandleFunc("/debug/pprof/profile", pprof.Profile)
		r.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		r.HandleFunc("/debug/pprof/trace", pprof.Trace)
	})
}

// isLoopback reports whether a listen address accepts connections from
// this host only: a loopback IP or "localhost". An empty host listens on
// every interface.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// tokenAuthenticator authenticates a bearer token; authn.TokenReview
// implements it.
type tokenAuthenticator interface {
	Authenticate(ctx context.Context, token string) (*authn.User, error)
}

// operatorsOnly admits the requests of operators: callers whose bearer
// token an authenticates and whom the cluster that reviews tokens allows
// the request's verb on its path as a non-resource URL, as Kubernetes
// components authorize /debug/pprof (delegated authorization: a
// SubjectAccessReview with nonResourceAttributes, the verb the method in
// lower case). Others get 401 or 403.
func operatorsOnly(an tokenAuthenticator, home kubernetes.Interface, logger klog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			token, ok := authn.BearerToken(r.Header.Get("Authorization"))
			if !ok {
				w.Header().Set("WWW-Authenticate", `Bearer realm="fleetcache"`)
				http.Error(w, "unauthenticated: send Authorization: Bearer <token>", http.StatusUnauthorized)
				return
			}
			u, err := an.Authenticate(r.Context(), token)
			switch {
			case errors.Is(err, authn.ErrUnauthenticated):
				w.Header().Set("WWW-Authenticate", `Bearer realm="fleetcache"`)
				http.Error(w, "unauthenticated: the token was rejected", http.StatusUnauthorized)
				return
			case err != nil:
				logger.Error(err, "Token review failed", "path", r.URL.Path)
				http.Error(w, "authentication is unavailable, try again later", http.StatusServiceUnavailable)
				return
			}
			verb := strings.ToLower(r.Method)
			allowed, err := allowedNonResource(r.Context(), home, u, verb, r.URL.Path)
			switch {
			case err != nil:
				logger.Error(err, "Access review failed", "path", r.URL.Path, "user", u.Name)
				http.Error(w, "authorization is unavailable, try again later", http.StatusServiceUnavailable)
				return
			case !allowed:
				http.Error(w, fmt.Sprintf("forbidden: user %q may not %s %s (RBAC of the cluster that reviews tokens: nonResourceURLs)", u.Name, verb, r.URL.Path),
					http.StatusForbidden)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// allowedNonResource asks home whether u may use verb on the non-resource
// URL path.
func allowedNonResource(ctx context.Context, home kubernetes.Interface, u *authn.User, verb, path string) (bool, error) {
	extra := make(map[string]authorizationv1.ExtraValue, len(u.Extra))
	for k, v := range u.Extra {
		extra[k] = v
	}
	review, err := home.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: verb},
			User:                  u.Name, UID: u.UID, Groups: u.Groups, Extra: extra,
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("subject access review of %s %s for %q: %w", verb, path, u.Name, err)
	}
	return review.Status.Allowed, nil
}
