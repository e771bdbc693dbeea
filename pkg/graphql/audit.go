package graphql

import (
	"context"

	"github.com/fleetcache/fleetcache/pkg/audit"
	"github.com/fleetcache/fleetcache/pkg/authz"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
)

// auditScope records in the request's audit event the clusters and types
// the caller's scope lets it read, and the clusters whose reviews failed.
func auditScope(ctx context.Context, scope authz.Scope) {
	ev := audit.From(ctx)
	if ev == nil {
		return
	}
	for _, g := range scope.Grants {
		ev.Touch(g.Cluster, g.Resource)
	}
	for c := range scope.Denied {
		ev.Deny(c)
	}
}

// auditAll records in the request's audit event the clusters and types
// that f selects, when nothing is authorized.
func (s *Server) auditAll(ctx context.Context, f planner.Filter) {
	ev := audit.From(ctx)
	if ev == nil {
		return
	}
	for _, c := range s.ix.Contents(f) {
		for _, r := range c.Resources {
			ev.Touch(c.Cluster, r.Resource)
		}
	}
}
