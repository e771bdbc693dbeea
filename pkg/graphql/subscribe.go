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
	"github.com/fleetcache/fleetcache/pkg/authz"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index"
)

// The errors Subscription.Next ends a subscription with, besides io.EOF
// (completed) and the context's error.
var (
	// ErrEnded means the subscription ended with a GraphQL error, in the
	// Result Next returns with it: CURSOR_EXPIRED when the changes to
	// replay are no longer retained or since comes from another index
	// epoch. The client lists again and follows from the new revision.
	ErrEnded = errors.New("subscription ended with an error")
	// ErrSlowConsumer means more than Options.SubscriptionBuffer events
	// waited for the subscription: it was ended so that it holds up
	// nobody. The client resumes from its last cursor.
	ErrSlowConsumer = errors.New("subscription ended: the client does not keep up with its events")
)

// errNotStreaming answers a subscription sent where a single response is
// expected.
var errNotStreaming = errors.New("subscriptions are served over WebSocket (graphql-transport-ws) or Server-Sent Events, not as a single response")

// replayBatch is how many changes Next reads from the feed at a time when
// it replays a since cursor.
const replayBatch = 256

// operation is a subscription's parsed, validated operation and its
// variables. Subscriptions whose payloads are the same share one.
type operation struct {
	query string
	doc   *ast.Document
	op    *ast.OperationDefinition
	vars  map[string]any
	sel   *selections
	// plan executes the operation's payloads directly; nil when graphql-go
	// does (see direct.go).
	plan *plan
}

// payload executes o with root (an event) as the root value: directly
// when it can, else with graphql-go, which reports what went wrong. A
// payload over Options.MaxResponseBytes is replaced by a RESPONSE_TOO_LARGE
// error; the subscription goes on.
func (s *Server) payload(ctx context.Context, o *operation, root any) *Result {
	if o.plan != nil {
		// The root field's arguments (filter, since) are not read for an
		// event: the root resolver returns the event.
		data, err := s.runPlan(ctx, o.plan, root, nil)
		switch {
		case err == nil:
			return &Result{Data: json.RawMessage(data), Executed: true, data: data}
		case errors.Is(err, errResponseTooLarge):
			return s.responseTooLarge(nil)
		}
	}
	return s.bounded(s.executeRoot(ctx, o.doc, o.op, o.vars, root, o.sel))
}

// probe is the root value of an execution that graphql-go runs only to
// coerce the root fields' arguments: each root field's resolver records
// them, by response key, and stops there. Subscribe probes a
// subscription's one field; direct execution probes a query's (see
// direct.go). The execution may outlive a timeout: mu guards the record.
type probe struct {
	mu     sync.Mutex
	fields map[string]probed
	// vars are the operation's variables as graphql-go coerced them.
	vars map[string]any
}

// probed is what a probe recorded of one root field.
type probed struct {
	field string
	args  map[string]any
}

func (p *probe) record(info graphql.ResolveInfo, args map[string]any) {
	key := info.FieldName
	if info.Path != nil {
		if k, ok := info.Path.Key.(string); ok {
			key = k
		}
	}
	p.mu.Lock()
	if p.fields == nil {
		p.fields = map[string]probed{}
	}
	p.fields[key] = probed{field: info.FieldName, args: args}
	p.vars = info.VariableValues
	p.mu.Unlock()
}

// recorded returns what was recorded: the root fields by response key,
// and the coerced variables (nil if no root field was resolved).
func (p *probe) recorded() (map[string]probed, map[string]any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.fields, p.vars
}

// probing lets a probe record a root field's arguments instead of
// resolving the field.
func probing(fn graphql.FieldResolveFn) graphql.FieldResolveFn {
	return func(p graphql.ResolveParams) (any, error) {
		if pr, ok := p.Source.(*probe); ok {
			pr.record(p.Info, p.Args)
			return nil, errProbed
		}
		return fn(p)
	}
}

// errProbed stops a probe execution; its code keeps it out of the logs.
var errProbed = newCodedError(codeProbed, errors.New("probed"))

// codeProbed is the code of errProbed.
const codeProbed = "PROBED"

// resolveSubscriptionRoot resolves resourceEvents and clusterHealth to the
// root value of their execution: the event. Outside a subscription, there
// is none.
func resolveSubscriptionRoot(p graphql.ResolveParams) (any, error) {
	switch src := p.Source.(type) {
	case *probe:
		src.record(p.Info, p.Args)
		return nil, errProbed
	case *resourceEvent:
		if p.Info.FieldName == "resourceEvents" {
			return src, nil
		}
	case *clusterUpdate:
		if p.Info.FieldName == "clusterHealth" {
			return src, nil
		}
	}
	return nil, newCodedError(CodeBadRequest, errNotStreaming)
}

// clusterUpdate is the root value of the execution of one clusterHealth
// event: a Cluster.
type clusterUpdate struct {
	status  health.ClusterStatus
	removed bool
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
	start := time.Now()
	doc, errs := s.prepare(req.Query)
	if errs != nil {
		return nil, &Result{Errors: errs}
	}
	op, err := s.operation(doc.ast, req.OperationName)
	if err != nil {
		return nil, errorResult(codeOf(err), err)
	}
	if op.Operation != ast.OperationTypeSubscription {
		res := s.execute(ctx, doc, op, req.Variables)
		s.metrics.observe(op.Operation, start)
		return nil, res
	}
	sub, res := s.subscribe(ctx, req, doc, op)
	if sub != nil {
		s.metrics.observe(op.Operation, start)
	}
	return sub, res
}

// subscribe starts the subscription operation op of doc.
func (s *Server) subscribe(ctx context.Context, req Request, d *document, op *ast.OperationDefinition) (*Subscription, *Result) {
	doc := d.ast
	w := depthWalker{fragments: fragmentsOf(doc)}
	roots := w.rootFields(op.SelectionSet, map[string]bool{})
	if len(roots) != 1 || roots[0].Name == nil || strings.HasPrefix(roots[0].Name.Value, "__") {
		return nil, errorResult(CodeValidationFailed, errors.New("a subscription must select exactly one field of Subscription"))
	}
	if res := s.checkCost(d, op, req.Variables); res != nil {
		return nil, res
	}
	o := &operation{query: req.Query, doc: doc, op: op, vars: req.Variables, sel: newSelections(doc, op)}
	pr := &probe{}
	res := s.executeRoot(ctx, doc, op, req.Variables, pr, o.sel)
	if len(res.Errors) == 1 && code(res.Errors[0]) == codeProbed {
		// The variables coerce: plan with them.
		o.plan = s.planFor(d, op, req.Variables)
	}
	var field string
	var args map[string]any
	fields, _ := pr.recorded()
	for _, f := range fields { // one at most
		field, args = f.field, f.args
	}
	switch field {
	case "resourceEvents":
		return s.subscribeResources(ctx, o, roots[0], args)
	case "clusterHealth":
		name, _ := args["cluster"].(string)
		hs := &healthSub{s: s, op: o, cluster: name, hasCluster: args["cluster"] != nil, user: s.userOf(ctx)}
		hs.ctx, hs.cancel = context.WithCancel(s.stopped)
		return &Subscription{src: hs}, nil
	case "":
		// Variables that do not coerce, a timeout, or a root field that
		// @skip or @include leaves out.
		if len(res.Errors) == 0 {
			return nil, errorResult(CodeValidationFailed, errors.New("the subscription's field is skipped"))
		}
		res.Executed, res.Data = false, nil
		return nil, res
	}
	return nil, errorResult(CodeInternal, fmt.Errorf("no subscription resolves %q", field))
}

func fragmentsOf(doc *ast.Document) map[string]*ast.FragmentDefinition {
	out := map[string]*ast.FragmentDefinition{}
	for _, d := range doc.Definitions {
		if f, ok := d.(*ast.FragmentDefinition); ok && f.Name != nil {
			out[f.Name.Value] = f
		}
	}
	return out
}

// subscribeResources starts a resourceEvents subscription.
func (s *Server) subscribeResources(ctx context.Context, o *operation, root *ast.Field, args map[string]any) (*Subscription, *Result) {
	f, _, err := parseFilter(args["filter"])
	if err != nil {
		return nil, errorResult(codeOf(err), err)
	}
	epoch, current := s.ix.Epoch(), s.ix.Revision()
	start := current
	if v, ok := args["since"].(string); ok {
		c, err := decodeRevisionCursor(v)
		if err != nil {
			return nil, errorResult(CodeBadUserInput, fmt.Errorf("invalid since cursor: %w", err))
		}
		if err := c.check(epoch); err != nil {
			res := cursorExpired(fmt.Errorf("since: %w", err))
			return &Subscription{src: endedSource{}, res: res, err: ErrEnded}, nil
		}
		if c.Revision > current {
			return nil, errorResult(CodeBadUserInput, fmt.Errorf("invalid since cursor: revision %d is ahead of the index (revision %d)", c.Revision, current))
		}
		start = c.Revision
	}
	fkey := filterKey(f)
	// Subscriptions share executions only within one caller: nested fields
	// (owners, children) are filtered for the caller.
	m, pos := s.hub.register(fkey, f, fkey+"\x00"+executionKey(o, root)+s.userKey(ctx), o, start)
	if m.eg != nil {
		o = m.eg.op // shared by the execution group: o is garbage now
	}
	rs := &resourceSub{s: s, op: o, m: m, replayFrom: start, replayTo: pos, user: s.userOf(ctx)}
	return &Subscription{src: rs}, nil
}

// cursorExpired is the result that ends a subscription whose since cursor
// is of no use.
func cursorExpired(err error) *Result {
	return errorResult(CodeCursorExpired, fmt.Errorf("%w; list again and subscribe from the new revision", err))
}

// filterKey returns a string that is the same for equal filters.
func filterKey(f index.Filter) string {
	sel := ""
	if f.Selector != nil {
		sel = f.Selector.String()
	}
	b, _ := json.Marshal([]any{sortedCopy(f.Clusters), sortedCopy(f.Kinds), sortedCopy(f.Resources), sortedCopy(f.Namespaces),
		sel, f.NameContains, f.OwnerUID})
	return string(b)
}

func sortedCopy(vs []string) []string {
	return slices.Compact(slices.Sorted(slices.Values(vs)))
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

// resourceSub is a resourceEvents subscription.
type resourceSub struct {
	s  *Server
	op *operation
	m  *member
	// replayFrom and replayTo bound the changes Next replays from the feed
	// before it takes the member's queue: (replayFrom, replayTo].
	replayFrom, replayTo uint64
	replay               []*delivery // read from the feed, not yet returned
	// user is the caller, whose rights each event is checked against; nil
	// when nothing is restricted.
	user *authn.User
	// decisions are the user's recent decisions, by where an object is.
	decisions map[authz.Attributes]decision
}

// decision is whether a subscriber may see the objects of a place (a
// cluster, namespace and type), until
// hub time until: as long as the Authorizer's decision holds, so that a
// revoked right stops the events within its cache TTL. Asking the
// Authorizer costs about 0.6 µs and 9 allocations (a cache key built and
// looked up) per event and subscriber, more than a core at a million
// deliveries a second; the memo costs a map lookup.
type decision struct {
	ok    bool
	until int64
}

// maxDecisions bounds the memo of a subscription that sees many places.
const maxDecisions = 1024

func (r *resourceSub) next(ctx context.Context) (*Result, error) {
	h := r.s.hub
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		pos := h.pos.Load()
		if len(r.replay) == 0 && r.replayFrom >= r.replayTo {
			d, end, err := r.m.pop()
			switch {
			case err == errClosed:
				return nil, io.EOF
			case err != nil:
				return end, err
			case d != nil:
				if !r.visible(ctx, d) {
					continue
				}
				return r.deliver(d, true), nil
			}
		} else {
			if end, err := r.m.ended(); err != nil {
				if err == errClosed {
					return nil, io.EOF
				}
				return end, err
			}
			if len(r.replay) == 0 {
				if err := r.readReplay(); err != nil {
					r.m.finish(ErrEnded, cursorExpired(fmt.Errorf("since: %w", err)))
					h.remove(r.m)
				}
				continue
			}
			d := r.replay[0]
			r.replay[0] = nil
			r.replay = r.replay[1:]
			if !r.visible(ctx, d) {
				continue
			}
			return r.deliver(d, false), nil
		}
		// Idle: every change up to pos that concerns the subscription has
		// been returned. The hub's heartbeats goroutine wakes Next (and
		// sets beat) when a heartbeat is due.
		r.m.beat.Store(false)
		if h.now()-r.m.lastSent.Load() >= int64(h.interval) {
			r.m.lastSent.Store(h.now())
			return &Result{Extensions: map[string]any{
				"cursor":    encodeRevisionCursor(r.s.ix.Epoch(), max(pos, r.m.after)),
				"heartbeat": true,
			}}, nil
		}
		select {
		case <-r.m.signal:
		case <-ctx.Done():
		}
	}
}

func (r *resourceSub) ready() bool {
	return len(r.replay) > 0 || r.replayFrom < r.replayTo || r.m.ready()
}

// readReplay reads the next changes to replay from the feed.
func (r *resourceSub) readReplay() error {
	evs, err := r.s.ix.Events(r.replayFrom, replayBatch)
	if err != nil {
		return err
	}
	match := r.m.eg.fg.match
	for i := range evs {
		ev := &evs[i]
		if ev.Revision > r.replayTo {
			break
		}
		r.replayFrom = ev.Revision
		if typ, obj := classify(match, ev); typ != 0 {
			r.replay = append(r.replay, &delivery{ev: resourceEvent{typ: typ, obj: obj, revision: ev.Revision}})
		}
	}
	if len(evs) == 0 {
		// Cannot happen: replayTo is at most the index revision.
		r.replayFrom = r.replayTo
	}
	return nil
}

// visible reports whether the subscriber may see d's object: checked per
// event, against decisions cached for a TTL (and kept here as long as
// they hold), so that a revoked right stops the events within it. A
// failed review hides the event, and is asked again for the next.
func (r *resourceSub) visible(ctx context.Context, d *delivery) bool {
	if r.user == nil {
		return true
	}
	o := d.ev.obj
	p := authz.Attributes{Cluster: o.Cluster, Namespace: o.Namespace, Resource: o.Type.Resource}
	now := r.s.hub.now()
	if dec, ok := r.decisions[p]; ok && now < dec.until {
		return dec.ok
	}
	ok, left, err := r.s.opts.Authorizer.Visible(ctx, r.user, p.Cluster, p.Namespace, p.Resource)
	if err != nil {
		return false
	}
	if r.decisions == nil || len(r.decisions) >= maxDecisions {
		r.decisions = map[authz.Attributes]decision{}
	}
	r.decisions[p] = decision{ok: ok, until: now + int64(left)}
	return ok
}

// deliver returns the payload of d, executing it if no member did yet.
// Shared payloads are encoded once too.
func (r *resourceSub) deliver(d *delivery, shared bool) *Result {
	d.once.Do(func() {
		// The payload may be shared, by subscriptions of one caller only:
		// no subscriber's context applies, but the caller's rights do.
		ctx := context.Background()
		if r.user != nil {
			ctx = authn.WithUser(ctx, r.user)
		}
		res := r.s.payload(ctx, r.op, &d.ev)
		res.Extensions = map[string]any{"cursor": encodeRevisionCursor(r.s.ix.Epoch(), d.ev.revision)}
		if shared {
			if b, err := res.MarshalJSON(); err == nil {
				res.encoded = b
			}
		}
		d.res = res
	})
	r.m.lastSent.Store(r.s.hub.now())
	return d.res
}

func (r *resourceSub) close() {
	r.s.hub.remove(r.m)
	r.m.finish(errClosed, nil)
	wakeup(r.m)
}

// healthSub is a clusterHealth subscription. It reads the health tracker's
// changes itself, in Next: they are few.
type healthSub struct {
	s          *Server
	op         *operation
	cluster    string
	hasCluster bool
	// ctx ends when the subscription is closed or the server stops.
	ctx    context.Context
	cancel context.CancelFunc

	started bool
	version uint64
	pending []clusterUpdate
	// user is the caller, nil when nothing is restricted: messages that
	// could name other tenants are hidden from it (Server.redactHealth).
	user *authn.User
}

func (h *healthSub) next(ctx context.Context) (*Result, error) {
	for {
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case h.s.stopped.Err() != nil:
			return nil, ErrServerStopped
		case h.ctx.Err() != nil:
			return nil, io.EOF
		}
		if len(h.pending) > 0 {
			u := &h.pending[0]
			h.pending = h.pending[1:]
			if h.user != nil {
				ctx = authn.WithUser(ctx, h.user)
				u.status = h.s.redactHealth(ctx, u.status)
			}
			return h.s.payload(ctx, h.op, u), nil
		}
		if !h.started {
			statuses, v := h.s.health.Clusters()
			for _, st := range statuses {
				if !h.hasCluster || st.Name == h.cluster {
					h.pending = append(h.pending, clusterUpdate{status: st})
				}
			}
			h.version, h.started = v, true
			continue
		}
		changes, err := h.s.health.Changes(h.version)
		if err != nil {
			// Changes were dropped (ErrExpired): send the current state
			// again.
			h.started = false
			continue
		}
		for _, c := range changes {
			h.version = c.Version
			if !h.hasCluster || c.Cluster.Name == h.cluster {
				h.pending = append(h.pending, clusterUpdate{status: c.Cluster, removed: c.Removed})
			}
		}
		if len(h.pending) > 0 {
			continue
		}
		if err := h.wait(ctx); err != nil && ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
}

// wait waits for a change after h.version, until ctx or h.ctx ends.
func (h *healthSub) wait(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(h.ctx, cancel)
	defer stop()
	return h.s.health.Wait(ctx, h.version)
}

func (h *healthSub) ready() bool { return len(h.pending) > 0 }

func (h *healthSub) close() { h.cancel() }
