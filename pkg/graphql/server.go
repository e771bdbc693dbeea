package graphql

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/graphql-go/graphql"
	"github.com/graphql-go/graphql/gqlerrors"
	"github.com/graphql-go/graphql/language/ast"
	"github.com/graphql-go/graphql/language/location"
	"github.com/graphql-go/graphql/language/parser"
	"github.com/graphql-go/graphql/language/source"
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/fleetcache/fleetcache/pkg/fanout"
	"github.com/fleetcache/fleetcache/pkg/graphql/changes"
	"github.com/fleetcache/fleetcache/pkg/graphql/document"
	"github.com/fleetcache/fleetcache/pkg/graphql/execute"
	"github.com/fleetcache/fleetcache/pkg/graphql/fleet"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/feed"
	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
	"github.com/fleetcache/fleetcache/pkg/index/views"
)

// Index is the part of the global index the API reads; views.View
// implements it.
type Index interface {
	// ListUnion, CountUnion, ListCountUnion and FacetsUnion answer over disjoint filters:
	// what a caller may see is a union of them (see authz.Scope.Filters).
	ListUnion(fs []planner.Filter, after *object.Position, limit int) planner.Page
	ListSorted(fs []planner.Filter, keys []planner.SortKey, after *planner.SortedPosition, limit int) (planner.Page, error)
	CountUnion(fs []planner.Filter) int
	// ListCountUnion is ListUnion and CountUnion read together.
	ListCountUnion(fs []planner.Filter, after *object.Position, limit int) (planner.Page, int)
	FacetsUnion(fs []planner.Filter, by views.FacetBy) []views.Facet
	// Contents says which types and namespaces of which clusters a
	// filter's answer may involve, for authorization.
	Contents(f planner.Filter) []views.Contents
	Namespaces(cluster string) []string
	Lookup(cluster, namespace, name string) []*object.Object
	// Selecting returns the objects of resource in cluster and namespace
	// whose label selector selects labels: a Pod's Services.
	Selecting(cluster, namespace, resource string, labels object.Labels) []*object.Object
	Epoch() string
	// Revision, Events and Wait follow the change feed, for subscriptions.
	Revision() uint64
	Events(after uint64, limit int) ([]feed.Event[*object.Object], error)
	Wait(ctx context.Context, after uint64) error
	// OldestRevision and RevisionBefore bound the retained changes, for
	// the changes query.
	OldestRevision() uint64
	RevisionBefore(t time.Time) uint64
	// ClocksAt and Since make and resume the cursors any index of the
	// fleet resumes (see index.Index.ClocksAt).
	ClocksAt(rev uint64, selected func(index.Stream) bool) []index.Clock
	Since(clocks []index.Clock, selected func(index.Stream) bool, match func(*object.Object) bool) ([]feed.Event[*object.Object], uint64, error)
}

// Health is the part of the health tracker the API reads; *health.Tracker
// implements it.
type Health interface {
	Clusters() ([]health.ClusterStatus, uint64)
	Cluster(name string) (health.ClusterStatus, bool)
	// Changes and Wait follow the status changes, for clusterHealth
	// subscriptions.
	Changes(after uint64) ([]health.Change, error)
	Wait(ctx context.Context, after uint64) error
	// History is a cluster's status timeline, for Cluster.history.
	History(cluster string) []health.StatusPeriod
}

// maxCachedQuery is the longest query text the document cache keeps, so
// that the cache holds at most DocumentCacheSize × 64 KiB of keys.
const maxCachedQuery = 64 << 10

// Server answers GraphQL requests from an Index and a Health tracker. It is
// safe for concurrent use.
type Server struct {
	ix     Index
	health Health
	opts   Options
	limits document.Limits
	// gen is the current schema, with its own document cache: a schema
	// built for new kinds (Options.Kinds) replaces it, and documents are
	// validated again against the new one.
	gen atomic.Pointer[generation]
	// reserved are the names of the engine's own types and root query
	// fields, which kinds do not take.
	reserved struct{ types, fields map[string]bool }
	// paths holds parsed field paths: Resource.field parses its path for
	// each object of a page otherwise.
	paths *lru.Cache[string, fieldpath.Path]
	// hits and misses count document cache lookups.
	hits, misses atomic.Int64
	metrics      *metrics
	// fleet builds the fleet's own types (Cluster, Fleetcache) and
	// resolves Query.clusters and Query.cluster.
	fleet *fleet.Schema
	// changes answers Query.changes.
	changes *changes.Query
	// running counts the plans that run past their request's deadline
	// (runWithin); Start waits for them.
	running sync.WaitGroup

	// hub hands the index's changes to the resourceEvents subscriptions;
	// Start runs it.
	hub *fanout.Hub[*operation, *Result]
	// stopped is canceled when Start's context ends: subscriptions end
	// with ErrServerStopped.
	stopped context.Context
	stop    context.CancelFunc
	started atomic.Bool
}

// parsedDocument is a query text parsed and validated: either a document ready to
// execute, or the errors that make it unusable.
type parsedDocument struct {
	// gen is the schema it was validated against, which runs it.
	gen  *generation
	ast  *ast.Document
	errs []gqlerrors.FormattedError
	// plans holds the *execute.Plan of each operation of ast whose plan
	// holds for any variables.
	plans sync.Map
	// costs holds the costed of each operation of ast whose cost holds
	// for any variables.
	costs sync.Map
}

// New returns a Server reading ix and h.
func New(ix Index, h Health, opts Options) (*Server, error) {
	opts = opts.withDefaults()
	if opts.DefaultPageSize > opts.MaxPageSize {
		return nil, fmt.Errorf("default page size %d is over the maximum page size %d", opts.DefaultPageSize, opts.MaxPageSize)
	}
	s := &Server{ix: ix, health: h, opts: opts, limits: document.NewLimits(opts.MaxDepth), metrics: newMetrics()}
	if opts.Registerer != nil {
		if err := s.metrics.register(opts.Registerer, s); err != nil {
			return nil, err
		}
	}
	s.fleet = fleet.New(h, opts.Inventory, s.mayReadDetails, func(err error) error { return badInput("%w", err) })
	s.changes = changes.New(ix, changesEngine{s})
	s.stopped, s.stop = context.WithCancel(context.Background())
	fo := opts.Fanout
	fo.Overflows = s.metrics.overflowed
	s.hub = fanout.New[*operation, *Result](ix, fo)
	if err := s.reserveNames(); err != nil {
		return nil, err
	}
	if err := s.rebuild(); err != nil {
		return nil, err
	}
	var err error
	if s.paths, err = lru.New[string, fieldpath.Path](pathCacheSize); err != nil {
		return nil, fmt.Errorf("path cache: %w", err)
	}
	return s, nil
}

// Start hands the index's changes to the resourceEvents subscriptions
// until ctx ends; then it ends every subscription (Next returns
// ErrServerStopped) and returns. Subscribe works before Start (changes wait
// in the index's feed), but live changes flow only while Start runs. Start
// may be called once.
func (s *Server) Start(ctx context.Context) error {
	if !s.started.CompareAndSwap(false, true) {
		return errors.New("graphql server started twice")
	}
	var following sync.WaitGroup
	if s.opts.Kinds != nil {
		fctx, cancel := context.WithCancel(ctx)
		defer following.Wait()
		defer cancel()
		following.Go(func() { s.followKinds(fctx) })
	}
	err := s.hub.Start(ctx)
	s.stop()
	s.running.Wait()
	return err
}

// Request is one GraphQL request, as the body of a GraphQL-over-HTTP POST
// carries it.
type Request struct {
	Query         string         `json:"query"`
	OperationName string         `json:"operationName,omitempty"`
	Variables     map[string]any `json:"variables,omitempty"`
	Extensions    map[string]any `json:"extensions,omitempty"`
}

// Result is the response to one request. Every error carries
// extensions.code.
type Result struct {
	// Data is what execution produced, encoded (a json.RawMessage): nil
	// if it failed as a whole.
	Data any
	// Errors are the request's errors, if any.
	Errors []gqlerrors.FormattedError
	// Executed reports whether execution started. When false, the request
	// failed before (parse, validation, operation selection, variable
	// coercion) and the response has no "data" entry; when true it has one,
	// null if execution failed as a whole.
	Executed bool
	// Extensions is the response's "extensions" entry, if any. The payloads
	// of resourceEvents subscriptions carry the event's or heartbeat's
	// "cursor" here, and heartbeats "heartbeat": true.
	Extensions map[string]any

	// data, when not nil, is Data encoded: the executor writes it.
	data []byte
	// response, when not nil, is the response of a result without errors
	// or extensions, written by the executor around data.
	response []byte
	// encoded, when not nil, is the result encoded: results shared by
	// several subscriptions are encoded once.
	encoded []byte
}

// ResponseError is a GraphQL error as a response carries it: no
// "locations" entry when there are none.
type ResponseError struct {
	Message    string                    `json:"message"`
	Locations  []location.SourceLocation `json:"locations,omitempty"`
	Path       []any                     `json:"path,omitempty"`
	Extensions map[string]any            `json:"extensions,omitempty"`
}

// MarshalJSON renders the result as a GraphQL response: "data" (if
// execution started), "errors" and "extensions" (if any). Its output is
// compact JSON that callers may write as it is, without encoding/json
// checking it again.
func (r *Result) MarshalJSON() ([]byte, error) {
	if r.encoded != nil {
		return r.encoded, nil
	}
	if r.response != nil && len(r.Errors) == 0 && len(r.Extensions) == 0 {
		return r.response, nil
	}
	b := make([]byte, 0, len(r.data)+64)
	b = append(b, '{')
	if r.Executed {
		data := r.data
		if data == nil {
			data = []byte("null")
		}
		b = append(append(b, `"data":`...), data...)
	}
	if len(r.Errors) > 0 {
		if err := appendMember(&b, "errors", ResponseErrors(r.Errors)); err != nil {
			return nil, err
		}
	}
	if len(r.Extensions) > 0 {
		if err := appendMember(&b, "extensions", r.Extensions); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// ResponseErrors returns errs as a response carries them.
func ResponseErrors(errs []gqlerrors.FormattedError) []ResponseError {
	out := make([]ResponseError, 0, len(errs))
	for _, e := range errs {
		out = append(out, ResponseError{Message: e.Message, Locations: e.Locations, Path: e.Path, Extensions: e.Extensions})
	}
	return out
}

// appendMember appends "name":v to the JSON object *b is writing.
func appendMember(b *[]byte, name string, v any) error {
	enc, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", name, err)
	}
	if len(*b) > 1 {
		*b = append(*b, ',')
	}
	*b = append(append(append(append(*b, '"'), name...), `":`...), enc...)
	return nil
}

// errorResult is a result that failed before execution.
func errorResult(code string, err error) *Result {
	return &Result{Errors: []gqlerrors.FormattedError{formatted(code, err)}}
}

// Operation is a request ready to run: its document parsed and validated
// (or taken from the cache), its operation selected. A transport prepares
// a request to learn what it is (Type) before it runs it with
// ExecuteOperation or SubscribeOperation.
type Operation struct {
	req   Request
	doc   *parsedDocument
	op    *ast.OperationDefinition
	start time.Time
}

// The types of operations, as Operation.Type returns them.
const (
	OperationQuery        = ast.OperationTypeQuery
	OperationMutation     = ast.OperationTypeMutation
	OperationSubscription = ast.OperationTypeSubscription
)

// Type returns the operation's type: OperationQuery, OperationMutation or
// OperationSubscription.
func (o *Operation) Type() string { return o.op.Operation }

// Name returns the operation's name, "" for an anonymous one.
func (o *Operation) Name() string {
	if o.op.Name == nil {
		return ""
	}
	return o.op.Name.Value
}

// Prepare takes the request's document from the cache or parses and
// validates it, and selects the operation to run. A request that fails
// there gets a nil Operation and a Result with the errors, whose Executed
// is false.
func (s *Server) Prepare(req Request) (*Operation, *Result) {
	start := time.Now()
	doc, errs := s.prepare(req.Query)
	if errs != nil {
		return nil, &Result{Errors: errs}
	}
	op, err := selectOperation(doc.ast, req.OperationName)
	if err != nil {
		return nil, errorResult(codeOf(err), err)
	}
	return &Operation{req: req, doc: doc, op: op, start: start}, nil
}

// Execute prepares and runs a request that is a query or a mutation; see
// ExecuteOperation.
func (s *Server) Execute(ctx context.Context, req Request) *Result {
	o, res := s.Prepare(req)
	if res != nil {
		return res
	}
	return s.ExecuteOperation(ctx, o)
}

// ExecuteOperation runs a query or a mutation within Options.Timeout. A
// subscription gets a BAD_REQUEST error: SubscribeOperation runs it, over
// a streaming transport.
func (s *Server) ExecuteOperation(ctx context.Context, o *Operation) *Result {
	if err := s.checkRoot(o.op); err != nil {
		return errorResult(codeOf(err), err)
	}
	if o.op.Operation == ast.OperationTypeSubscription {
		return errorResult(CodeBadRequest, errNotStreaming)
	}
	res := s.execute(ctx, o.doc, o.op, o.req.Variables)
	s.metrics.observe(o.op.Operation, o.start)
	return res
}

// ErrorResult returns a result that failed before execution, with one
// error carrying code.
func ErrorResult(code string, err error) *Result { return errorResult(code, err) }

// prepare returns the parsed and validated document of a query, or the
// errors that make it unusable, each with its code: GRAPHQL_PARSE_FAILED, or
// GRAPHQL_VALIDATION_FAILED for documents that do not fit the schema or nest
// deeper than the limits. Documents come from the cache when they can; the
// document and the errors are shared, and must not be modified.
func (s *Server) prepare(query string) (*parsedDocument, []gqlerrors.FormattedError) {
	gen := s.gen.Load()
	if d, ok := gen.docs.Get(query); ok {
		s.hits.Add(1)
		return d, d.errs
	}
	s.misses.Add(1)
	d := s.parseAndValidate(gen, query)
	d.gen = gen
	if len(query) <= maxCachedQuery {
		gen.docs.Add(query, d)
	}
	return d, d.errs
}

func (s *Server) parseAndValidate(gen *generation, query string) (d *parsedDocument) {
	defer func() {
		// graphql-go's validation panicked on a document its parser
		// accepts (fuzzing found one, document.Limits.Check catches it
		// now). Such a document is invalid, and must not take the server
		// down.
		if r := recover(); r != nil {
			s.opts.Logger.V(2).Info("GraphQL parsing or validation panicked", "panic", r, "queryBytes", len(query))
			d = &parsedDocument{errs: []gqlerrors.FormattedError{formatted(CodeValidationFailed, errors.New("invalid document"))}}
		}
	}()
	if query == "" {
		return &parsedDocument{errs: []gqlerrors.FormattedError{formatted(CodeBadRequest, errors.New("no query in the request"))}}
	}
	if err := s.limits.CheckText(query); err != nil {
		return &parsedDocument{errs: []gqlerrors.FormattedError{formatted(CodeValidationFailed, err)}}
	}
	doc, err := parser.Parse(parser.ParseParams{Source: source.NewSource(&source.Source{Body: []byte(query), Name: "GraphQL request"})})
	if err != nil {
		return &parsedDocument{errs: []gqlerrors.FormattedError{withCode(gqlerrors.FormatError(err), CodeParseFailed)}}
	}
	var errs []gqlerrors.FormattedError
	for _, err := range s.limits.Check(doc) {
		code := CodeValidationFailed
		if errors.Is(err, document.ErrSyntax) {
			code = CodeParseFailed
		}
		errs = append(errs, formatted(code, err))
	}
	if errs != nil {
		return &parsedDocument{errs: errs}
	}
	if v := graphql.ValidateDocument(&gen.schema, doc, nil); !v.IsValid {
		for _, e := range v.Errors {
			errs = append(errs, withCode(e, CodeValidationFailed))
		}
		return &parsedDocument{errs: errs}
	}
	return &parsedDocument{ast: doc}
}

// Subscriptions returns how many resourceEvents subscriptions run, and how
// many of their events wait to be read.
func (s *Server) Subscriptions() (running, queued int) { return s.hub.Subscribers(), s.hub.Queued() }

// Options returns the options the server runs with, defaults filled in.
func (s *Server) Options() Options { return s.opts }

// cacheStats returns how many document lookups hit and missed the cache.
func (s *Server) cacheStats() (hits, misses int64) { return s.hits.Load(), s.misses.Load() }

// selectOperation returns the operation of doc named name, or the only one.
func selectOperation(doc *ast.Document, name string) (*ast.OperationDefinition, error) {
	var op *ast.OperationDefinition
	for _, d := range doc.Definitions {
		o, ok := d.(*ast.OperationDefinition)
		if !ok {
			continue
		}
		switch {
		case name == "" && op != nil:
			return nil, newCodedError(CodeBadRequest, errors.New("the document has several operations: name one with operationName"))
		case name == "" || (o.Name != nil && o.Name.Value == name):
			op = o
		}
	}
	if op == nil {
		if name != "" {
			return nil, newCodedError(CodeBadRequest, fmt.Errorf("the document has no operation named %q", name))
		}
		return nil, newCodedError(CodeBadRequest, errors.New("the document has no operation"))
	}
	return op, nil
}

// checkRoot fails for operations whose root type the schema lacks: it has
// neither mutations nor subscriptions (graphql-go's validation does not
// check).
func (s *Server) checkRoot(op *ast.OperationDefinition) error {
	schema := &s.gen.Load().schema
	switch op.Operation {
	case ast.OperationTypeMutation:
		if schema.MutationType() == nil {
			return newCodedError(CodeValidationFailed, errors.New("the schema has no mutations"))
		}
	case ast.OperationTypeSubscription:
		if schema.SubscriptionType() == nil {
			return newCodedError(CodeValidationFailed, errors.New("the schema has no subscriptions"))
		}
	}
	return nil
}

// codeOf returns the code of a coded error, else INTERNAL_SERVER_ERROR.
func codeOf(err error) string {
	var ce *codedError
	if errors.As(err, &ce) {
		return ce.code
	}
	return CodeInternal
}

// execute runs the query op of doc with the variables within
// Options.Timeout. An operation over Options.MaxCost is refused before it
// runs, and an answer over Options.MaxResponseBytes is abandoned.
func (s *Server) execute(ctx context.Context, doc *parsedDocument, op *ast.OperationDefinition, vars map[string]any) *Result {
	if res := s.checkCost(doc, op, vars); res != nil {
		return res
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	coerced, res := s.coerceVariables(ctx, op, vars)
	if res != nil {
		return res
	}
	p, err := s.planFor(doc, op, coerced)
	if err != nil {
		return s.internal(op, fmt.Errorf("plan: %w", err))
	}
	return s.runWithin(ctx, op, p, rootArgs(op, p, coerced))
}

// runWithin runs p (see run) until ctx ends. A resolver may be slow to
// return (a long index read): the request does not wait for it past its
// deadline, and gets the context's error (TIMEOUT), while the plan's
// goroutine ends on its own, its resolvers checking ctx before each index
// read. The Server owns those goroutines: Start waits for them before it
// returns.
func (s *Server) runWithin(ctx context.Context, op *ast.OperationDefinition, p *execute.Plan, args map[string]map[string]any) *Result {
	done := make(chan *Result, 1)
	s.running.Add(1)
	go func() {
		defer s.running.Done()
		done <- s.run(ctx, op, p, nil, args)
	}()
	var res *Result
	select {
	case res = <-done:
	case <-ctx.Done():
	}
	if err := contextError(ctx, s.opts.Timeout); err != nil {
		// Whatever was written may have fields cut short: the answer is
		// the timeout, as a whole.
		return &Result{Executed: true, Errors: []gqlerrors.FormattedError{formatted(codeOf(err), err)}}
	}
	return res
}

// responseTooLarge is the result of an answer abandoned for its size.
func (s *Server) responseTooLarge() *Result {
	err := formatted(CodeResponseTooLarge, fmt.Errorf("response too large: the answer passed %s bytes, the limit; ask for fewer objects (first) or fewer fields (object is the largest)",
		formatCount(int(min(s.opts.MaxResponseBytes, math.MaxInt)))))
	return &Result{Executed: true, Errors: []gqlerrors.FormattedError{err}}
}
