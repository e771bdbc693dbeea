package graphql

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/fleetcache/fleetcache/pkg/authn"
	"github.com/fleetcache/fleetcache/pkg/authz"
	"github.com/fleetcache/fleetcache/pkg/graphql/filter"
	"github.com/fleetcache/fleetcache/pkg/graphql/relations"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
	"github.com/fleetcache/fleetcache/pkg/index/views"
)

// Authorizer decides what a caller may see; authz.Authorizer implements it.
type Authorizer interface {
	// Scope decides what u may see of contents.
	Scope(ctx context.Context, u *authn.User, contents []views.Contents, namespaces authz.NamespaceLister) authz.Scope
	// Visible reports whether u may see an object of resource in
	// namespace ("" for cluster-scoped) of cluster, and how long that
	// answer holds (a subscription reuses it that long).
	Visible(ctx context.Context, u *authn.User, cluster, namespace, resource string) (bool, time.Duration, error)
}

// CodeAccessReviewFailed: a member cluster could not answer whether the
// caller may see its objects; they are hidden.
const CodeAccessReviewFailed = "ACCESS_REVIEW_FAILED"

// restricted returns the caller of ctx when what it sees must be
// authorized.
func (s *Server) restricted(ctx context.Context) (*authn.User, bool) {
	if s.opts.Authorizer == nil {
		return nil, false
	}
	u, ok := authn.UserFrom(ctx)
	if !ok {
		// No transport authenticated the caller: show nothing.
		u = &authn.User{Name: "system:anonymous"}
	}
	return u, true
}

// scopeFilters returns the filters that select what the caller of ctx may
// see of f, and the clusters hidden because their reviews failed.
func (s *Server) scopeFilters(ctx context.Context, f planner.Filter) ([]planner.Filter, []string) {
	u, ok := s.restricted(ctx)
	if !ok {
		s.auditAll(ctx, f)
		return []planner.Filter{f}, nil
	}
	scope := s.opts.Authorizer.Scope(ctx, u, s.ix.Contents(f), s.ix)
	auditScope(ctx, scope)
	if len(scope.Denied) > 0 {
		s.opts.Logger.V(2).Info("Access reviews failed: clusters hidden", "user", u.Name, "err", scope.Err())
	}
	return scope.Filters(f), scope.DeniedClusters()
}

// scopeThrough is scopeFilters of f narrowed to the objects whose related
// objects match through (relations.Narrow), with the clusters hidden
// either way; a filter through too many related objects is BAD_USER_INPUT.
func (s *Server) scopeThrough(ctx context.Context, f planner.Filter, through []filter.Through) ([]planner.Filter, []string, error) {
	visible, denied := s.scopeFilters(ctx, f)
	visible, hidden, err := relations.Narrow(ctx, relationEngine{s}, visible, through)
	if err != nil {
		return nil, nil, badInput("%w", err)
	}
	return visible, slices.Compact(slices.Sorted(slices.Values(append(denied, hidden...)))), nil
}

// visible reports whether the caller of ctx may see o.
func (s *Server) visible(ctx context.Context, o *object.Object) (bool, error) {
	u, ok := s.restricted(ctx)
	if !ok {
		return true, nil
	}
	ok, _, err := s.opts.Authorizer.Visible(ctx, u, o.Cluster, o.Namespace, o.Type.Resource)
	if err != nil {
		return false, newCodedError(CodeAccessReviewFailed, fmt.Errorf("cluster %q: access review failed: its objects are hidden", o.Cluster))
	}
	return ok, nil
}

// mayReadDetails reports whether the caller of ctx may read the details of
// a cluster's health (messages, errors, its server): whether it may list
// namespaces across the cluster.
func (s *Server) mayReadDetails(ctx context.Context, cluster string) bool {
	u, ok := s.restricted(ctx)
	if !ok {
		return true
	}
	ok, _, err := s.opts.Authorizer.Visible(ctx, u, cluster, "", "namespaces")
	return ok && err == nil
}

// userKey identifies the caller of ctx in the key of a shared subscription
// execution, so that only subscriptions of one caller share results that
// nested fields (owners, children) may have filtered for that caller.
func (s *Server) userKey(ctx context.Context) string {
	u, ok := s.restricted(ctx)
	if !ok {
		return ""
	}
	return "\x00user\x00" + u.Key()
}

// userOf returns the caller of ctx when what it sees must be authorized, or
// nil.
func (s *Server) userOf(ctx context.Context) *authn.User {
	u, ok := s.restricted(ctx)
	if !ok {
		return nil
	}
	return u
}
