package graphql

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/graphql-go/graphql"

	"github.com/fleetcache/fleetcache/pkg/authn"
	"github.com/fleetcache/fleetcache/pkg/authz"
	"github.com/fleetcache/fleetcache/pkg/fanout"
	"github.com/fleetcache/fleetcache/pkg/graphql/cursor"
	"github.com/fleetcache/fleetcache/pkg/index/feed"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
)

// changesBatch is how many retained changes the changes query reads from
// the feed at a time.
const changesBatch = 1024

// changeConnection is a page of the changes query: the changes of the
// filter the caller may see, in revision order (or the reverse), as the
// subscription path classifies them (fanout.Classify).
type changeConnection struct {
	changes []*fanout.Change
	more    bool
	// until is the revision the page was read up to: follow from it.
	until uint64
	// truncated: since reaches before the oldest retained change.
	truncated bool
	// filter is the query's, for the clocks of its revision cursor.
	filter planner.Filter
}

// revisionExpiredError is a revision cursor of another index epoch, or
// older than the retained changes: CURSOR_EXPIRED.
type revisionExpiredError struct{ err error }

func (e *revisionExpiredError) Error() string { return e.err.Error() }
func (e *revisionExpiredError) Unwrap() error { return e.err }

// decodeRevision decodes the revision cursor v, the argument arg of the
// changes query, against this index, with package cursor's rules as
// subscriptions use them: BAD_USER_INPUT when it is malformed or ahead of
// the index, a *revisionExpiredError when it is another index's (another
// replica's, or this one's before a restart: its clocks resume a
// subscription, but this index's history has no place for them).
func (s *Server) decodeRevision(arg, v string) (uint64, error) {
	c, err := cursor.DecodeRevision(v)
	if err != nil {
		return 0, badInput("invalid %s cursor: %w", arg, err)
	}
	if err := c.Check(s.ix.Epoch()); err != nil {
		return 0, &revisionExpiredError{fmt.Errorf("%s: %w (ask with a time instead)", arg, err)}
	}
	if current := s.ix.Revision(); c.Revision > current {
		return 0, badInput("invalid %s cursor: revision %d is ahead of the index (revision %d)", arg, c.Revision, current)
	}
	return c.Revision, nil
}

// bound is a since or until argument: a time, or a revision.
type bound struct {
	time     time.Time
	revision uint64
	isTime   bool
}

// parseBound reads a since or until argument: a duration before now
// ("1h", "90m"), an RFC 3339 instant, or a revision cursor.
func (s *Server) parseBound(arg, v string, now time.Time) (bound, error) {
	v = strings.TrimSpace(v)
	if d, err := time.ParseDuration(v); err == nil {
		if d < 0 {
			return bound{}, badInput("invalid %s %q: a duration before now must not be negative", arg, v)
		}
		return bound{time: now.Add(-d), isTime: true}, nil
	}
	t, terr := time.Parse(time.RFC3339Nano, v)
	if terr == nil {
		return bound{time: t, isTime: true}, nil
	}
	if strings.Contains(v, ":") { // a time: a cursor is base64url
		return bound{}, badInput("invalid %s %q: want a duration (1h, 30m), an RFC 3339 time (2026-01-02T15:04:05Z) or a revision cursor: %w", arg, v, terr)
	}
	rev, err := s.decodeRevision(arg, v)
	if err != nil {
		var expired *revisionExpiredError
		if errors.As(err, &expired) {
			return bound{}, err
		}
		return bound{}, badInput("invalid %s %q: want a duration (1h, 30m), an RFC 3339 time (2026-01-02T15:04:05Z) or a revision cursor (ResourceEvent.cursor, ResourceConnection.revision)", arg, v)
	}
	return bound{revision: rev}, nil
}

// resolveChanges resolves the changes query: the retained changes of the
// objects matching the filter, after since and up to until, that the
// caller may see, a page at a time.
func (s *Server) resolveChanges(p graphql.ResolveParams) (any, error) {
	if err := s.checkContext(p.Context); err != nil {
		return nil, err
	}
	f, _, _, err := s.resolveFilter(p.Args["filter"])
	if err != nil {
		return nil, err
	}
	first, err := s.pageSize(p.Args)
	if err != nil {
		return nil, err
	}
	desc := p.Args["order"] == "DESC"
	now := time.Now()
	current := s.ix.Revision()
	oldest := s.ix.OldestRevision()
	c := &changeConnection{until: current, filter: f}

	// The revisions (lo, hi] hold the changes asked for.
	lo, hi := oldest-1, current
	if v, ok := p.Args["since"].(string); ok {
		b, err := s.parseBound("since", v, now)
		if err != nil {
			return nil, changesCursorError(err)
		}
		if b.isTime {
			lo = s.ix.RevisionBefore(b.time)
			// The oldest retained change is not known to be the first
			// after since unless it was recorded after since.
			c.truncated = lo < oldest && oldest > 1
		} else {
			if b.revision+1 < oldest {
				return nil, changesCursorError(&revisionExpiredError{fmt.Errorf("since: revision %d is older than the retained changes (from %d)", b.revision, oldest)})
			}
			lo = b.revision
		}
	} else {
		c.truncated = oldest > 1
	}
	if v, ok := p.Args["until"].(string); ok {
		b, err := s.parseBound("until", v, now)
		if err != nil {
			return nil, changesCursorError(err)
		}
		if b.isTime {
			hi = min(hi, s.ix.RevisionBefore(b.time))
		} else {
			hi = min(hi, b.revision)
		}
		c.until = hi
	}
	if v, ok := p.Args["after"].(string); ok {
		rev, err := s.decodeRevision("after", v)
		if err != nil {
			return nil, changesCursorError(err)
		}
		if !desc && rev+1 < oldest {
			// The changes right after it are gone: a page would skip them.
			return nil, changesCursorError(&revisionExpiredError{fmt.Errorf("after: revision %d is older than the retained changes (from %d)", rev, oldest)})
		}
		if desc {
			hi = min(hi, rev-min(rev, 1))
		} else {
			lo = max(lo, rev)
		}
	}
	lo = max(lo, oldest-1)
	if hi <= lo || first == 0 {
		c.more = hi > lo && first == 0
		return c, nil
	}

	m := planner.NewMatcher(f)
	vis := visibility{user: s.userOf(p.Context), authorizer: s.opts.Authorizer}
	take := func(ev *feed.Event[*object.Object]) bool {
		typ, obj := fanout.Classify(m, ev)
		if typ == 0 || (vis.user != nil && !vis.sees(p.Context, obj)) {
			return true
		}
		if len(c.changes) == first {
			c.more = true
			return false
		}
		c.changes = append(c.changes, &fanout.Change{Type: typ, Object: obj, Revision: ev.Revision, Time: ev.Time})
		return true
	}
	if desc {
		for pos := hi; pos > lo; {
			from := max(lo, pos-min(pos, changesBatch))
			evs, err := s.ix.Events(from, int(pos-from))
			if err != nil {
				return nil, changesCursorError(&revisionExpiredError{fmt.Errorf("the changes were dropped while being read, ask again: %w", err)})
			}
			for i := len(evs) - 1; i >= 0; i-- {
				if !take(&evs[i]) {
					return c, nil
				}
			}
			pos = from
			if err := s.checkContext(p.Context); err != nil {
				return nil, err
			}
		}
		return c, nil
	}
	for pos := lo; pos < hi; {
		evs, err := s.ix.Events(pos, int(min(hi-pos, changesBatch)))
		if err != nil {
			return nil, changesCursorError(&revisionExpiredError{fmt.Errorf("the changes were dropped while being read, ask again: %w", err)})
		}
		if len(evs) == 0 {
			break
		}
		for i := range evs {
			if !take(&evs[i]) {
				return c, nil
			}
		}
		pos = evs[len(evs)-1].Revision
		if err := s.checkContext(p.Context); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// changesCursorError turns a *revisionExpiredError into CURSOR_EXPIRED.
func changesCursorError(err error) error {
	var expired *revisionExpiredError
	if errors.As(err, &expired) {
		return newCodedError(CodeCursorExpired, fmt.Errorf("%w; ask for a later since", expired.err))
	}
	return err
}

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
