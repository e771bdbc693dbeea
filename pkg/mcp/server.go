package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/modelcontextprotocol/go-sdk/auth"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"k8s.io/klog/v2"

	"github.com/fleetcache/fleetcache/pkg/authn"
	"github.com/fleetcache/fleetcache/pkg/graphql"
)

// Engine runs GraphQL queries for the caller that the context carries;
// *graphql.Server implements it.
type Engine interface {
	Execute(ctx context.Context, req graphql.Request) *graphql.Result
}

// Option defaults.
const (
	// DefaultResultBytes is Options.ResultBytes when unset.
	DefaultResultBytes = 32 << 10
	// DefaultPageSize is Options.PageSize when unset.
	DefaultPageSize = 1000
	// maxChunk is the most objects one engine query of a tool call asks
	// for: a call that the budget cuts short reads about what it returns.
	maxChunk = 250
)

// Options configure a Server. Each field's comment states its default, used
// when the field is zero.
type Options struct {
	// ResultBytes is the size budget of one tool call's answer: the JSON of
	// the objects, rows or values it returns (its structured content; the
	// text beside it is a rendering of the same). A call that would return
	// more stops at the budget and says how to continue (a cursor) and how
	// many matched in all. Default DefaultResultBytes (32 KiB, about 8,000
	// tokens).
	ResultBytes int
	// PageSize is the most objects one find_resources or get_table call
	// returns, and the default of their first argument; within it the
	// budget decides. Default DefaultPageSize (1,000: the engine's largest
	// page).
	PageSize int
	// Version is the server version the MCP initialization reports.
	// Default "dev".
	Version string
	// Logger receives the server's log lines. Default klog.Background().
	Logger klog.Logger
}

// DefaultOptions returns the Options with every default filled in: what a
// zero Options means. Configuration and flags that expose a field read its
// default from here.
func DefaultOptions() Options { return Options{}.withDefaults() }

func (o Options) withDefaults() Options {
	if o.ResultBytes <= 0 {
		o.ResultBytes = DefaultResultBytes
	}
	if o.PageSize <= 0 {
		o.PageSize = DefaultPageSize
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	if o.Logger.GetSink() == nil {
		o.Logger = klog.Background()
	}
	return o
}

// Server is fleetcache's MCP server: tools, resources and prompts on an
// Engine, served over Streamable HTTP by ServeHTTP. It is safe for
// concurrent use and starts no goroutine of its own.
type Server struct {
	engine  Engine
	opts    Options
	sdk     *mcpsdk.Server
	handler http.Handler
}

// instructions tell a model what the server is for and how to use it.
const instructions = `fleetcache holds a fresh copy of the objects of many Kubernetes clusters (Pods, Deployments, ConfigMaps, custom resources, ...) ` +
	`in one index. Ask it what runs where, what is broken and what changed across the fleet instead of calling kubectl against each cluster. ` +
	`You see only what your user may list in each cluster. ` +
	`Start with cluster_health (which clusters exist and whether their data is current) or count_resources (how many, grouped by cluster, namespace, status...), ` +
	`then find_resources or get_table to list objects, get_resource to read one, and what_changed for what was added, modified and deleted recently. ` +
	`Every answer starts with a summary line; answers are cut to a size budget and give a cursor (nextCursor) to pass as "after" for more. ` +
	`Objects of clusters listed as stale are their last known state.`

// New returns a Server whose tools run their queries through engine.
func New(engine Engine, opts Options) (*Server, error) {
	if engine == nil {
		return nil, errors.New("mcp: no engine")
	}
	opts = opts.withDefaults()
	s := &Server{engine: engine, opts: opts}
	// The SDK logs every request's session at Info: that is V(4) here.
	sdkLog := slog.New(logr.ToSlogHandler(opts.Logger.V(4)))
	s.sdk = mcpsdk.NewServer(&mcpsdk.Implementation{Name: "fleetcache", Title: "fleetcache", Version: opts.Version},
		&mcpsdk.ServerOptions{Instructions: instructions, Logger: sdkLog})
	if err := s.addTools(); err != nil {
		return nil, err
	}
	s.addResources()
	s.addPrompts()
	h := mcpsdk.NewStreamableHTTPHandler(func(*http.Request) *mcpsdk.Server { return s.sdk },
		&mcpsdk.StreamableHTTPOptions{Stateless: true, JSONResponse: true, Logger: sdkLog})
	// The caller reaches the tools' handlers as the request's TokenInfo,
	// which the SDK hands each request (RequestExtra): the context of a
	// handler is the session's, not the HTTP request's.
	s.handler = auth.RequireBearerToken(callerInfo, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
	anonymous := h
	s.handler = withCaller(s.handler, anonymous)
	return s, nil
}

// ServeHTTP serves MCP's Streamable HTTP transport (stateless: POST only;
// GET and DELETE get 405). The caller is the one the request's context
// carries (authn.UserFrom), authenticated before.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// callerKey is where a TokenInfo's Extra holds the authenticated caller.
const callerKey = "fleetcache.caller"

// callerInfo turns the caller that authenticated the request into the
// request's TokenInfo; the token itself was reviewed already.
func callerInfo(_ context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
	u, ok := authn.UserFrom(r.Context())
	if !ok {
		return nil, fmt.Errorf("%w: not authenticated", auth.ErrInvalidToken)
	}
	return &auth.TokenInfo{UserID: u.Key(), Extra: map[string]any{callerKey: u}}, nil
}

// withCaller serves requests that carry an authenticated caller with
// authenticated, and the others (no authentication configured) with
// anonymous.
func withCaller(authenticated, anonymous http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := authn.UserFrom(r.Context()); ok {
			authenticated.ServeHTTP(w, r)
			return
		}
		anonymous.ServeHTTP(w, r)
	})
}

// callerContext returns ctx carrying the caller of a request, if it has
// one: what the engine's Authorizer reads.
func callerContext(ctx context.Context, extra *mcpsdk.RequestExtra) context.Context {
	if extra == nil || extra.TokenInfo == nil {
		return ctx
	}
	if u, ok := extra.TokenInfo.Extra[callerKey].(*authn.User); ok {
		return authn.WithUser(ctx, u)
	}
	return ctx
}

// queryError is a GraphQL error of a tool's query, as a model should read
// it: what is wrong, with the engine's code.
type queryError struct {
	code, message string
}

func (e *queryError) Error() string {
	if e.code == graphql.CodeInternal {
		return "internal error: the server logged the details; try again, or report it"
	}
	return e.message
}

// query runs a query for the caller of ctx and decodes its data into out.
// GraphQL errors come back as a *queryError.
func (s *Server) query(ctx context.Context, doc string, vars any, out any) error {
	variables, err := asVariables(vars)
	if err != nil {
		return err
	}
	start := time.Now()
	res := s.engine.Execute(ctx, graphql.Request{Query: doc, Variables: variables})
	if len(res.Errors) > 0 {
		e := graphql.ResponseErrors(res.Errors)[0]
		code, _ := e.Extensions["code"].(string)
		return &queryError{code: code, message: strings.TrimSpace(e.Message)}
	}
	data, ok := res.Data.(json.RawMessage)
	if !ok {
		// Not what the executor writes; decode the response instead.
		body, err := res.MarshalJSON()
		if err != nil {
			return fmt.Errorf("encode the answer: %w", err)
		}
		var r struct{ Data json.RawMessage }
		if err := json.Unmarshal(body, &r); err != nil {
			return fmt.Errorf("decode the answer: %w", err)
		}
		data = r.Data
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("decode the answer's data: %w", err)
	}
	s.opts.Logger.V(4).Info("MCP query", "duration", time.Since(start), "bytes", len(data))
	return nil
}

// asVariables returns v (a struct of the query's variables, or nil) as
// GraphQL variables: the JSON values a transport would decode.
func asVariables(v any) (map[string]any, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode variables: %w", err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("encode variables: %w", err)
	}
	return out, nil
}
