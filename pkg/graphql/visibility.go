package graphql

import (
	"context"
	"time"

	"github.com/fleetcache/fleetcache/pkg/authn"
	"github.com/fleetcache/fleetcache/pkg/authz"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
)

// visibility decides, for one caller, whether it may see objects, as a
// resourceEvents subscription and the changes query check each change:
// per object's place (cluster, namespace, type), with the decisions kept
// as long as the Authorizer says they hold, so that a revoked right stops
// showing within its cache TTL.
type visibility struct {
	authorizer Authorizer
	// user is the caller; nil when nothing is restricted.
	user *authn.User
	// decisions are the user's recent decisions, by where an object is.
	decisions map[authz.Attributes]decision
}

// sees reports whether the caller may see o. A failed review hides it,
// and is asked again for the next object of its place.
func (v *visibility) sees(ctx context.Context, o *object.Object) bool {
	if v.user == nil {
		return true
	}
	p := authz.Attributes{Cluster: o.Cluster, Namespace: o.Namespace, Resource: o.Type.Resource}
	now := time.Now()
	if dec, ok := v.decisions[p]; ok && now.Before(dec.until) {
		return dec.ok
	}
	ok, left, err := v.authorizer.Visible(ctx, v.user, p.Cluster, p.Namespace, p.Resource)
	if err != nil {
		return false
	}
	if v.decisions == nil || len(v.decisions) >= maxDecisions {
		v.decisions = map[authz.Attributes]decision{}
	}
	v.decisions[p] = decision{ok: ok, until: now.Add(left)}
	return ok
}

// changesEngine is the Server as package changes reads it.
type changesEngine struct{ s *Server }

func (e changesEngine) Filter(arg any) (planner.Filter, error) {
	f, _, _, err := e.s.resolveFilter(arg)
	return f, err
}

func (e changesEngine) PageSize(args map[string]any) (int, error) { return e.s.pageSize(args) }

func (e changesEngine) Sees(ctx context.Context) func(context.Context, *object.Object) bool {
	v := &visibility{user: e.s.userOf(ctx), authorizer: e.s.opts.Authorizer}
	if v.user == nil {
		return nil
	}
	return v.sees
}

func (e changesEngine) RevisionCursor(rev uint64, f planner.Filter) string {
	return e.s.revisionCursor(rev, f)
}

func (e changesEngine) CheckContext(ctx context.Context) error { return e.s.checkContext(ctx) }

func (e changesEngine) BadInput(err error) error { return newCodedError(CodeBadUserInput, err) }

func (e changesEngine) CursorExpired(err error) error { return newCodedError(CodeCursorExpired, err) }
