package graphql

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/graphql-go/graphql"
	"github.com/graphql-go/graphql/language/ast"
	"github.com/graphql-go/graphql/language/visitor"

	"github.com/fleetcache/fleetcache/pkg/authn"
	"github.com/fleetcache/fleetcache/pkg/fanout"
	"github.com/fleetcache/fleetcache/pkg/graphql/cursor"
	"github.com/fleetcache/fleetcache/pkg/graphql/document"
	"github.com/fleetcache/fleetcache/pkg/graphql/execute"
	"github.com/fleetcache/fleetcache/pkg/graphql/filter"
	"github.com/fleetcache/fleetcache/pkg/graphql/fleet"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/feed"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
)

// The errors Subscription.Next ends a subscription with, besides io.EOF
// (completed) and the context's error.
var (
	// ErrEnded means the subscription ended with a GraphQL error, in the
	// Result Next returns with it: CURSOR_EXPIRED when the changes to
	// replay are no longer retained or since comes from another index
	// epoch. The client lists again and follows from the new revision.
	ErrEnded = errors.New("subscription ended with an error")
	// ErrSlowConsumer means more than Options.Fanout.Buffer events
	// waited for the subscription: it was ended so that it holds up
	// nobody. The client resumes from its last cursor.
	ErrSlowConsumer = fanout.ErrSlowConsumer
	// ErrServerStopped ends the subscriptions of a Server whose Start
	// returned: the server is shutting down. Clients should reconnect (to
	// another replica) and resume from their last cursor.
	ErrServerStopped = fanout.ErrStopped
)

// errNotStreaming answers a subscription sent where a single response is
// expected.
var errNotStreaming = errors.New("subscriptions are served over WebSocket (graphql-transport-ws) or Server-Sent Events, not as a single response")

// operation is a subscription's parsed, validated operation, its
// variables and its plan. Subscriptions whose payloads are the same share
// one.
type operation struct {
	query string
	doc   *ast.Document
	op    *ast.OperationDefinition
	vars  map[string]any
	plan  *execute.Plan
}

// payload executes o with root (an event) as the root value. The root
// field's arguments (filter, since) are not read for an event: the root
// resolver returns the event. A payload over Options.MaxResponseBytes is
// replaced by a RESPONSE_TOO_LARGE error; the subscription goes on.
func (s *Server) payload(ctx context.Context, o *operation, root any) *Result {
	return s.run(ctx, o.op, o.plan, root, nil)
}

// resolveSubscriptionRoot resolves resourceEvents and clusterHealth to the
// root value of their execution: the event. Outside a subscription, there
// is none.
func resolveSubscriptionRoot(p graphql.ResolveParams) (any, error) {
	switch src := p.Source.(type) {
	case *fanout.Change:
		// resourceEvents, or a kind's <kind>Events.
		if strings.HasSuffix(p.Info.FieldName, "Events") {
			return src, nil
		}
	case *fleet.Update:
		if p.Info.FieldName == "clusterHealth" {
			return src, nil
		}
	}
	return nil, newCodedError(CodeBadRequest, errNotStreaming)
}

// Subscription is one running subscription: Next returns its payloads one
// at a time. Next must not be called concurrently with itself; Close may be
// called at any time.
type Subscription struct {
	src  payloads
	once sync.Once

	// res and err are what ended the subscription, returned again by
	// later calls of Next.
	res *Result
	err error
}

// payloads produces a subscription's payloads.
type payloads interface {
	next(ctx context.Context) (*Result, error)
	// ready reports whether next would return at once; false when unsure.
	ready() bool
	close()
}

// Subscribe parses and validates req once. For a subscription operation it
// returns a running *Subscription and a nil *Result. For a query it
// executes it and returns (nil, result). For an invalid request, or
// invalid arguments of the subscription (a filter or since cursor that is
// not one of ours: BAD_USER_INPUT), it returns nil and a result with the
// errors whose Executed is false.
//
// A since cursor of another index epoch, or older than the retained
// changes, gives a Subscription whose first Next returns ErrEnded with
// CURSOR_EXPIRED. resourceEvents subscriptions receive live changes while
// Start runs.
func (s *Server) Subscribe(ctx context.Context, req Request) (*Subscription, *Result) {
	o, res := s.Prepare(req)
	if res != nil {
		return nil, res
	}
	return s.SubscribeOperation(ctx, o)
}

// SubscribeOperation runs a prepared operation for a streaming transport:
// a subscription starts (see Subscribe), any other operation is executed
// and its result returned.
func (s *Server) SubscribeOperation(ctx context.Context, o *Operation) (*Subscription, *Result) {
	if err := s.checkRoot(o.op); err != nil {
		return nil, errorResult(codeOf(err), err)
	}
	if o.op.Operation != ast.OperationTypeSubscription {
		res := s.execute(ctx, o.doc, o.op, o.req.Variables)
		s.metrics.observe(o.op.Operation, o.start)
		return nil, res
	}
	sub, res := s.subscribe(ctx, o.req, o.doc, o.op)
	if sub != nil {
		s.metrics.observe(o.op.Operation, o.start)
	}
	return sub, res
}

// subscribe starts the subscription operation op of doc.
func (s *Server) subscribe(ctx context.Context, req Request, d *parsedDocument, op *ast.OperationDefinition) (*Subscription, *Result) {
	doc := d.ast
	// One field, selected once: merging two selections of it is refused
	// rather than reasoned about.
	keys, fields := document.CollectFields([]*ast.SelectionSet{op.SelectionSet}, document.Fragments(doc), document.Selector{})
	if len(keys) != 1 || len(fields[keys[0]]) != 1 || strings.HasPrefix(fields[keys[0]][0].Name.Value, "__") {
		return nil, errorResult(CodeValidationFailed, errors.New("a subscription must select exactly one field of Subscription"))
	}
	if res := s.checkCost(d, op, req.Variables); res != nil {
		return nil, res
	}
	cctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	coerced, res := s.coerceVariables(cctx, op, req.Variables)
	cancel()
	if res != nil {
		res.Executed = false
		return nil, res
	}
	p, err := s.planFor(d, op, coerced)
	if err != nil {
		return nil, s.internal(op, fmt.Errorf("plan: %w", err))
	}
	if len(p.Fields) == 0 {
		return nil, errorResult(CodeValidationFailed, errors.New("the subscription's field is skipped"))
	}
	root := p.Fields[0]
	args := execute.ArgumentValues(root.Def.Args, root.Nodes[0].Arguments, coerced)
	o := &operation{query: req.Query, doc: doc, op: op, vars: req.Variables, plan: p}
	switch root.Name {
	case "resourceEvents":
		return s.subscribeResources(ctx, o, root.Nodes[0], args, "")
	case "clusterHealth":
		name, _ := args["cluster"].(string)
		hs := &healthSub{s: s, op: o, f: s.fleet.Follow(name, args["cluster"] != nil), user: s.userOf(ctx)}
		hs.ctx, hs.cancel = context.WithCancel(s.stopped)
		return &Subscription{src: hs}, nil
	}
	if resource, ok := d.gen.kindEvents[root.Name]; ok {
		return s.subscribeResources(ctx, o, root.Nodes[0], args, resource)
	}
	return nil, errorResult(CodeInternal, fmt.Errorf("no subscription resolves %q", root.Name))
}

// subscribeResources starts a resourceEvents subscription, or a kind's
// (of the objects of resource only, when it is not "").
func (s *Server) subscribeResources(ctx context.Context, o *operation, root *ast.Field, args map[string]any, resource string) (*Subscription, *Result) {
	f, _, err := filter.Parse(args["filter"])
	if err != nil {
		return nil, errorResult(CodeBadUserInput, err)
	}
	if resource != "" {
		f.Resources = []string{resource}
	}
	sel, err := filter.ClusterSelector(args["filter"])
	if err != nil {
		return nil, errorResult(CodeBadUserInput, err)
	}
	epoch, current := s.ix.Epoch(), s.ix.Revision()
	start := current
	var since *cursor.Revision
	if v, ok := args["since"].(string); ok {
		c, err := cursor.DecodeRevision(v)
		if err != nil {
			return nil, errorResult(CodeBadUserInput, fmt.Errorf("invalid since cursor: %w", err))
		}
		switch {
		case c.Check(epoch) == nil && c.Revision > current:
			return nil, errorResult(CodeBadUserInput, fmt.Errorf("invalid since cursor: revision %d is ahead of the index (revision %d)", c.Revision, current))
		case c.Check(epoch) == nil && (c.Clocks == nil || s.retained(c.Revision)):
			// This index's own feed still holds what follows: replay it,
			// every version.
			start = c.Revision
		case c.Clocks == nil:
			res := cursorExpired(fmt.Errorf("since: %w", c.Check(epoch)))
			return &Subscription{src: endedSource{}, res: res, err: ErrEnded}, nil
		default:
			since = &c
		}
	}
	var catchUp []fanout.Change
	if since != nil {
		// A cursor of another index (another replica, or this one before
		// a restart): catch up from its clocks.
		rf := f
		if sel != nil {
			clusters, _ := s.opts.Inventory.Narrow(f.Clusters, sel)
			rf.Clusters = orNoCluster(clusters)
		}
		evs, rev, err := s.resumeFrom(ctx, since.Clocks, rf)
		if err != nil {
			res := cursorExpired(fmt.Errorf("since: %w", err))
			return &Subscription{src: endedSource{}, res: res, err: ErrEnded}, nil
		}
		start = rev
		for _, ev := range evs {
			catchUp = append(catchUp, fanout.Change{Type: ev.Type, Object: ev.Object, Revision: rev})
		}
	}
	// Subscriptions share executions only within one caller: nested fields
	// (owners, children) are filtered for the caller.
	rs := &resourceSub{s: s, visibility: visibility{user: s.userOf(ctx), authorizer: s.opts.Authorizer}, filter: f}
	if v, ok := args["since"].(string); ok {
		rs.since = v
	}
	req := fanout.Request[*operation]{Filter: f, Group: executionKey(o, root) + s.userKey(ctx), Value: o, Start: start, CatchUp: catchUp}
	if rs.user != nil {
		req.Visible = rs.visible
	}
	if sel != nil {
		return &Subscription{src: s.subscribeSelected(rs, f, sel, req)}, nil
	}
	rs.sub = s.hub.Subscribe(req)
	rs.op = rs.sub.Value() // shared by the group: o may be garbage now
	return &Subscription{src: rs}, nil
}

// cursorExpired is the result that ends a subscription whose since cursor
// is of no use.
func cursorExpired(err error) *Result {
	return errorResult(CodeCursorExpired, fmt.Errorf("%w; list again and subscribe from the new revision", err))
}

// executionKey returns a string that is the same for subscriptions whose
// payloads are the same for the same event: the query, the operation, and
// the variables its execution reads. The root field's arguments (filter,
// since) are not read when an event is executed, so variables used only
// there are left out: subscriptions resuming from different cursors share.
func executionKey(o *operation, root *ast.Field) string {
	inRoot := map[string]int{}
	for _, a := range root.Arguments {
		countVariables(a.Value, inRoot)
	}
	total := map[string]int{}
	visitor.Visit(o.doc, &visitor.VisitorOptions{Enter: func(p visitor.VisitFuncParams) (string, any) {
		if v, ok := p.Node.(*ast.Variable); ok && v.Name != nil {
			if _, def := p.Parent.(*ast.VariableDefinition); !def {
				total[v.Name.Value]++
			}
		}
		return visitor.ActionNoChange, nil
	}}, nil)
	vars := map[string]any{}
	for k, v := range o.vars {
		if n := inRoot[k]; n == 0 || total[k] > n {
			vars[k] = v
		}
	}
	b, err := json.Marshal(vars)
	if err != nil {
		// Not JSON: share with nobody.
		b = fmt.Appendf(nil, "%p", o)
	}
	name := ""
	if o.op.Name != nil {
		name = o.op.Name.Value
	}
	return o.query + "\x00" + name + "\x00" + string(b)
}

// countVariables counts the variables a value refers to.
func countVariables(v ast.Value, n map[string]int) {
	switch v := v.(type) {
	case *ast.Variable:
		if v.Name != nil {
			n[v.Name.Value]++
		}
	case *ast.ListValue:
		for _, e := range v.Values {
			countVariables(e, n)
		}
	case *ast.ObjectValue:
		for _, f := range v.Fields {
			countVariables(f.Value, n)
		}
	}
}

// Next blocks until the next payload:
//
//	(res, nil)              a "next" payload: one event's execution result,
//	                        or a heartbeat (resourceEvents: no data, and
//	                        extensions {"cursor": …, "heartbeat": true})
//	(nil, io.EOF)           the subscription completed (or was closed)
//	(res, ErrEnded)         it ended with a GraphQL error result to deliver
//	(nil, ErrSlowConsumer)  its buffer overflowed
//	(nil, ErrServerStopped) the server is shutting down
//	(nil, ctx.Err())        ctx ended; Next may be called again
//
// Once it returned another error than ctx's, it returns the same again.
// The results may be shared with other subscriptions: do not modify them.
func (sub *Subscription) Next(ctx context.Context) (*Result, error) {
	if sub.err != nil {
		return sub.res, sub.err
	}
	res, err := sub.src.next(ctx)
	if err != nil && ctx.Err() == nil {
		sub.res, sub.err = res, err
		sub.Close()
	}
	return res, err
}

// Ready reports whether Next would return at once, with a payload or the
// end: a transport writes what is ready together and flushes once. False
// means Next may wait. It must not be called concurrently with Next.
func (sub *Subscription) Ready() bool {
	return sub.err != nil || sub.src.ready()
}

// Close releases everything the subscription holds; a Next waiting returns
// io.EOF. It is safe to call twice and concurrently with Next.
func (sub *Subscription) Close() { sub.once.Do(sub.src.close) }

// endedSource is the source of a subscription that ended before it
// started.
type endedSource struct{}

func (endedSource) next(context.Context) (*Result, error) { return nil, io.EOF }
func (endedSource) ready() bool                           { return true }
func (endedSource) close()                                {}

// resourceSub is a resourceEvents subscription: a subscriber of the hub.
type resourceSub struct {
	// filter is the subscription's; since the cursor it resumed from,
	// if any.
	filter planner.Filter
	since  string
	s      *Server
	op     *operation
	sub    *fanout.Subscriber[*operation, *Result]
	// visibility checks each event against the caller's rights; its user
	// is nil when nothing is restricted.
	visibility
	// at is the revision of the last delivery next returned: the client
	// has seen every change up to it (see selectorSub).
	at uint64
}

// decision is whether a subscriber may see the objects of a place (a
// cluster, namespace and type), until
// time until: as long as the Authorizer's decision holds, so that a
// revoked right stops the events within its cache TTL. Asking the
// Authorizer costs about 0.6 µs and 9 allocations (a cache key built and
// looked up) per event and subscriber, more than a core at a million
// deliveries a second; the memo costs a map lookup.
type decision struct {
	ok    bool
	until time.Time
}

// maxDecisions bounds the memo of a subscription that sees many places.
const maxDecisions = 1024

func (r *resourceSub) next(ctx context.Context) (*Result, error) {
	d, err := r.sub.Next(ctx)
	if err != nil {
		return r.ended(err)
	}
	r.at = d.Revision
	if d.Heartbeat {
		return &Result{Extensions: map[string]any{
			"cursor":    r.s.revisionCursor(d.Revision, r.filter),
			"heartbeat": true,
		}}, nil
	}
	return d.Payload(r.payload), nil
}

// ended returns what Next returns for the error that ended the
// subscriber. Apart from next, so that next allocates nothing for the
// target of errors.As when there is no error.
func (r *resourceSub) ended(err error) (*Result, error) {
	var expired *fanout.ExpiredError
	switch {
	case errors.As(err, &expired):
		return cursorExpired(expired.Err), ErrEnded
	case errors.Is(err, ErrSlowConsumer):
		return nil, fmt.Errorf("%w: more than %d events waited", err, r.s.opts.Fanout.Buffer)
	}
	return nil, err
}

func (r *resourceSub) ready() bool { return r.sub.Ready() }

// visible reports whether the subscriber may see c's object: checked per
// event, against decisions cached for a TTL (see visibility).
func (r *resourceSub) visible(ctx context.Context, c *fanout.Change) bool {
	return r.sees(ctx, c.Object)
}

// payload executes the payload of a change. It may be shared, by
// subscriptions of one caller only: no subscriber's context applies, but
// the caller's rights do. It is encoded once, here, for all of them.
func (r *resourceSub) payload(c *fanout.Change) *Result {
	ctx := context.Background()
	if r.user != nil {
		ctx = authn.WithUser(ctx, r.user)
	}
	// The members of a group share a filter, so the cursor: the
	// catch-up of a resume keeps the cursor it resumed from.
	at := r.since
	if !c.Resumed {
		at = r.s.revisionCursor(c.Revision, r.filter)
	}
	ctx = context.WithValue(ctx, eventCursorKey{}, at)
	res := r.s.payload(ctx, r.op, c)
	res.Extensions = map[string]any{"cursor": at}
	if b, err := res.MarshalJSON(); err == nil {
		res.encoded = b
	}
	return res
}

func (r *resourceSub) close() { r.sub.Close() }

// healthSub is a clusterHealth subscription: a fleet.Follower's updates,
// each executed as a payload.
type healthSub struct {
	s  *Server
	op *operation
	f  *fleet.Follower
	// ctx ends when the subscription is closed or the server stops.
	ctx    context.Context
	cancel context.CancelFunc
	// user is the caller, nil when nothing is restricted: messages that
	// could name other tenants are hidden from it (fleet.Schema.Redact).
	user *authn.User
}

func (h *healthSub) next(ctx context.Context) (*Result, error) {
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case h.s.stopped.Err() != nil:
		return nil, ErrServerStopped
	}
	u, err := h.f.Next(ctx, h.ctx)
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case h.s.stopped.Err() != nil:
		return nil, ErrServerStopped
	case err != nil:
		return nil, err
	}
	if h.user != nil {
		ctx = authn.WithUser(ctx, h.user)
		u.Status = h.s.fleet.Redact(ctx, u.Status)
	}
	return h.s.payload(ctx, h.op, u), nil
}

func (h *healthSub) ready() bool { return h.f.Ready() }

func (h *healthSub) close() { h.cancel() }

// eventCursorKey is the context key of the cursor of the change a payload
// is executed for.
type eventCursorKey struct{}

// revisionCursor returns the revision cursor of revision rev for the
// followers of filter f: rev with the clocks of the streams f may select
// at it (index.Index.ClocksAt), which any fleetcache of the fleet resumes
// from.
func (s *Server) revisionCursor(rev uint64, f planner.Filter) string {
	return cursor.EncodeRevision(cursor.Revision{Epoch: s.ix.Epoch(), Revision: rev, Clocks: s.ix.ClocksAt(rev, streamsOf(f))})
}

// streamsOf returns what selects the streams whose changes filter f may
// select: those of its clusters (all when it names none) and of its
// resources (all when it names none; a kind is not told from a
// resource here, so kinds select every resource).
func streamsOf(f planner.Filter) func(index.Stream) bool {
	if f.Clusters == nil && f.Resources == nil {
		return nil
	}
	return func(st index.Stream) bool {
		return (f.Clusters == nil || slices.Contains(f.Clusters, st.Cluster)) &&
			(f.Resources == nil || slices.Contains(f.Resources, st.Resource))
	}
}

// retained reports whether the feed still holds every change after rev.
func (s *Server) retained(rev uint64) bool {
	_, err := s.ix.Events(rev, 1)
	return err == nil
}

// resumeWait bounds how long a resume waits for this index to catch up
// with a cursor's clocks (a replica still listing a cluster).
const resumeWait = 30 * time.Second

// resumeFrom returns the changes after clocks that f selects, and the
// revision to follow from, waiting while this index is behind them.
func (s *Server) resumeFrom(ctx context.Context, clocks []index.Clock, f planner.Filter) ([]feed.Event[*object.Object], uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, resumeWait)
	defer cancel()
	match := planner.NewMatcher(f)
	for {
		rev := s.ix.Revision()
		evs, at, err := s.ix.Since(clocks, streamsOf(f), match.Matches)
		if !errors.Is(err, index.ErrBehind) {
			return evs, at, err
		}
		if werr := s.ix.Wait(ctx, rev); werr != nil {
			return nil, 0, fmt.Errorf("%w (waited %s)", err, resumeWait)
		}
	}
}
