package changes

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/graphql-go/graphql"

	"github.com/fleetcache/fleetcache/pkg/fanout"
	"github.com/fleetcache/fleetcache/pkg/graphql/cursor"
	"github.com/fleetcache/fleetcache/pkg/index/feed"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
)

// Index is the part of the index the changes query reads: its change
// feed; views.View implements it.
type Index interface {
	Epoch() string
	Revision() uint64
	Events(after uint64, limit int) ([]feed.Event[*object.Object], error)
	// OldestRevision and RevisionBefore bound the retained changes.
	OldestRevision() uint64
	RevisionBefore(t time.Time) uint64
}

// Engine is what the changes query needs of the engine that serves it;
// the GraphQL server (package graphql) implements it.
type Engine interface {
	// Filter reads a ResourceFilter argument.
	Filter(arg any) (planner.Filter, error)
	// PageSize reads a connection's first argument.
	PageSize(args map[string]any) (int, error)
	// Sees returns what the caller of ctx may see, nil when it may see
	// everything. The function keeps its decisions for as long as they
	// hold.
	Sees(ctx context.Context) func(context.Context, *object.Object) bool
	// RevisionCursor returns the revision cursor of rev for the followers
	// of f (ResourceConnection.revision).
	RevisionCursor(rev uint64, f planner.Filter) string
	// CheckContext returns the coded error of ctx when it is done.
	CheckContext(ctx context.Context) error
	// BadInput and CursorExpired give err the code BAD_USER_INPUT or
	// CURSOR_EXPIRED.
	BadInput(err error) error
	CursorExpired(err error) error
}

// Query answers Query.changes from an Index, for an Engine.
type Query struct {
	ix Index
	e  Engine
}

// New returns the changes query of ix for e.
func New(ix Index, e Engine) *Query { return &Query{ix: ix, e: e} }

// Inputs are the engine's types and limits the field's arguments use.
type Inputs struct {
	// Filter is ResourceFilter, Order SortOrder.
	Filter *graphql.InputObject
	Order  *graphql.Enum
	// DefaultPageSize and MaxPageSize bound first.
	DefaultPageSize, MaxPageSize int
}

// Field returns Query.changes, whose edges are resourceEvent
// (ResourceEvent, whose values are *fanout.Change), with its
// ChangeConnection and ChangePageInfo types.
func (s *Query) Field(resourceEvent *graphql.Object, in Inputs) *graphql.Field {
	return &graphql.Field{Type: graphql.NewNonNull(s.connectionType(resourceEvent)), Description: "What was added, modified and deleted among the objects matching " +
		"the filter, as resourceEvents delivers it, from the changes fleetcache retains, a page at a time: oldest first, or " +
		`newest first with order: DESC. See "What changed" in docs/graphql.md.`,
		Args: graphql.FieldConfigArgument{
			"filter": {Type: in.Filter, Description: "Which objects; null selects all."},
			"since": {Type: graphql.String, Description: `The changes after it: a duration before now ("1h", "15m"), an RFC 3339 ` +
				"time, or a revision cursor (ResourceEvent.cursor, ResourceConnection.revision). Null: the oldest retained."},
			"until": {Type: graphql.String, Description: "The changes up to it, in the same forms (a time: before it; a cursor: " +
				"that change included). Null: the latest."},
			"first": {Type: graphql.Int, DefaultValue: in.DefaultPageSize,
				Description: "The page size, from 0 to " + strconv.Itoa(in.MaxPageSize) + "."},
			"after": {Type: graphql.String, Description: "A page's endCursor: the page continues after that change (before it, with DESC)."},
			"order": {Type: in.Order, DefaultValue: "ASC", Description: "ASC: oldest first; DESC: newest first."},
		},
		Resolve: s.resolve}
}

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
func (s *Query) decodeRevision(arg, v string) (uint64, error) {
	c, err := cursor.DecodeRevision(v)
	if err != nil {
		return 0, s.e.BadInput(fmt.Errorf("invalid %s cursor: %w", arg, err))
	}
	return s.checkRevision(arg, c)
}

// checkRevision returns the revision of c, a decoded revision cursor of
// the argument arg, or what decodeRevision says is wrong with it.
func (s *Query) checkRevision(arg string, c cursor.Revision) (uint64, error) {
	if err := c.Check(s.ix.Epoch()); err != nil {
		return 0, &revisionExpiredError{fmt.Errorf("%s: %w (ask with a time instead)", arg, err)}
	}
	if current := s.ix.Revision(); c.Revision > current {
		return 0, s.e.BadInput(fmt.Errorf("invalid %s cursor: revision %d is ahead of the index (revision %d)", arg, c.Revision, current))
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
func (s *Query) parseBound(arg, v string, now time.Time) (bound, error) {
	v = strings.TrimSpace(v)
	if d, err := time.ParseDuration(v); err == nil {
		if d < 0 {
			return bound{}, s.e.BadInput(fmt.Errorf("invalid %s %q: a duration before now must not be negative", arg, v))
		}
		return bound{time: now.Add(-d), isTime: true}, nil
	}
	t, terr := time.Parse(time.RFC3339Nano, v)
	if terr == nil {
		return bound{time: t, isTime: true}, nil
	}
	if strings.Contains(v, ":") { // a time: a cursor is base64url
		return bound{}, s.e.BadInput(fmt.Errorf("invalid %s %q: want a duration (1h, 30m), an RFC 3339 time (2026-01-02T15:04:05Z) or a revision cursor: %w", arg, v, terr))
	}
	c, err := cursor.DecodeRevision(v)
	if err != nil {
		return bound{}, s.e.BadInput(fmt.Errorf("invalid %s %q: want a duration (1h, 30m), an RFC 3339 time (2026-01-02T15:04:05Z) or a revision cursor (ResourceEvent.cursor, ResourceConnection.revision)", arg, v))
	}
	// A revision cursor: what is wrong with it (ahead of the index, of
	// another index) says more than the forms of the argument.
	rev, err := s.checkRevision(arg, c)
	if err != nil {
		return bound{}, err
	}
	return bound{revision: rev}, nil
}

// resolve resolves the changes query: the retained changes of the
// objects matching the filter, after since and up to until, that the
// caller may see, a page at a time.
func (s *Query) resolve(p graphql.ResolveParams) (any, error) {
	if err := s.e.CheckContext(p.Context); err != nil {
		return nil, err
	}
	f, err := s.e.Filter(p.Args["filter"])
	if err != nil {
		return nil, err
	}
	first, err := s.e.PageSize(p.Args)
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
			return nil, s.cursorError(err)
		}
		if b.isTime {
			lo = s.ix.RevisionBefore(b.time)
			// The oldest retained change is not known to be the first
			// after since unless it was recorded after since.
			c.truncated = lo < oldest && oldest > 1
		} else {
			if b.revision+1 < oldest {
				return nil, s.cursorError(&revisionExpiredError{fmt.Errorf("since: revision %d is older than the retained changes (from %d)", b.revision, oldest)})
			}
			lo = b.revision
		}
	} else {
		c.truncated = oldest > 1
	}
	if v, ok := p.Args["until"].(string); ok {
		b, err := s.parseBound("until", v, now)
		if err != nil {
			return nil, s.cursorError(err)
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
			return nil, s.cursorError(err)
		}
		if !desc && rev+1 < oldest {
			// The changes right after it are gone: a page would skip them.
			return nil, s.cursorError(&revisionExpiredError{fmt.Errorf("after: revision %d is older than the retained changes (from %d)", rev, oldest)})
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
	sees := s.e.Sees(p.Context)
	take := func(ev *feed.Event[*object.Object]) bool {
		typ, obj := fanout.Classify(m, ev)
		if typ == 0 || (sees != nil && !sees(p.Context, obj)) {
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
				return nil, s.cursorError(&revisionExpiredError{fmt.Errorf("the changes were dropped while being read, ask again: %w", err)})
			}
			for i := len(evs) - 1; i >= 0; i-- {
				if !take(&evs[i]) {
					return c, nil
				}
			}
			pos = from
			if err := s.e.CheckContext(p.Context); err != nil {
				return nil, err
			}
		}
		return c, nil
	}
	for pos := lo; pos < hi; {
		evs, err := s.ix.Events(pos, int(min(hi-pos, changesBatch)))
		if err != nil {
			return nil, s.cursorError(&revisionExpiredError{fmt.Errorf("the changes were dropped while being read, ask again: %w", err)})
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
		if err := s.e.CheckContext(p.Context); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// changesCursorError turns a *revisionExpiredError into CURSOR_EXPIRED.
func (s *Query) cursorError(err error) error {
	var expired *revisionExpiredError
	if errors.As(err, &expired) {
		return s.e.CursorExpired(fmt.Errorf("%w; ask for a later since", expired.err))
	}
	return err
}

// connectionType returns ChangeConnection, a page of the changes
// query, with ChangePageInfo.
func (s *Query) connectionType(resourceEvent *graphql.Object) *graphql.Object {
	pageInfo := graphql.NewObject(graphql.ObjectConfig{
		Name:        "ChangePageInfo",
		Description: "Where a page of changes ends.",
		Fields: graphql.Fields{
			"hasNextPage": {Type: graphql.NewNonNull(graphql.Boolean), Description: "Whether more changes of the range follow this page.",
				Resolve: func(p graphql.ResolveParams) (any, error) { return p.Source.(*changeConnection).more, nil }},
			"endCursor": {Type: graphql.String, Description: "The cursor of the last change of the page (pass it as after); null when there is none.",
				Resolve: func(p graphql.ResolveParams) (any, error) {
					c := p.Source.(*changeConnection)
					if len(c.changes) == 0 {
						return nil, nil
					}
					return cursor.EncodeRevision(cursor.Revision{Epoch: s.ix.Epoch(), Revision: c.changes[len(c.changes)-1].Revision}), nil
				}},
		},
	})
	return graphql.NewObject(graphql.ObjectConfig{
		Name:        "ChangeConnection",
		Description: "A page of the retained changes: what was added, modified and deleted, when, in which cluster.",
		Fields: graphql.Fields{
			"edges": {Type: nonNullList(resourceEvent), Description: "The changes of the page, in the order asked for.",
				Resolve: func(p graphql.ResolveParams) (any, error) { return p.Source.(*changeConnection).changes, nil }},
			"pageInfo": {Type: graphql.NewNonNull(pageInfo), Description: "Where the page ends.",
				Resolve: func(p graphql.ResolveParams) (any, error) { return p.Source, nil }},
			"revision": {Type: graphql.NewNonNull(graphql.String), Description: "The revision the changes were read up to: " +
				"subscribe to resourceEvents with it as since to follow what comes next.",
				Resolve: func(p graphql.ResolveParams) (any, error) {
					c := p.Source.(*changeConnection)
					return s.e.RevisionCursor(c.until, c.filter), nil
				}},
			"truncated": {Type: graphql.NewNonNull(graphql.Boolean), Description: "True when the range starts before the oldest " +
				"retained change (limits.eventRetention, limits.eventRetentionAge): changes before that are not known.",
				Resolve: func(p graphql.ResolveParams) (any, error) { return p.Source.(*changeConnection).truncated, nil }},
		},
	})
}

func nonNullList(t graphql.Type) *graphql.NonNull {
	return graphql.NewNonNull(graphql.NewList(graphql.NewNonNull(t)))
}
