package transport

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"

	"github.com/fleetcache/fleetcache/pkg/authn"
	"github.com/fleetcache/fleetcache/pkg/graphql"
)

// Option defaults.
const (
	defaultMaxBodyBytes                  = 1 << 20
	defaultConnectionInitTimeout         = 10 * time.Second
	defaultMaxSubscriptionsPerConnection = 100
	defaultMaxConnectionsPerAddress      = 64
	defaultKeepAliveInterval             = 12 * time.Second
	defaultWriteTimeout                  = 10 * time.Second
	defaultShutdownGrace                 = 5 * time.Second
)

// Options configure a Server. Each field's comment states its default, used
// when the field is zero.
type Options struct {
	// MaxBodyBytes is the largest request body accepted; larger ones get
	// HTTP 413. Default 1 MiB.
	MaxBodyBytes int64
	// ConnectionInitTimeout is how long a WebSocket client has, once
	// connected, to send connection_init; then the socket is closed with
	// 4408. Default 10s.
	ConnectionInitTimeout time.Duration
	// MaxSubscriptionsPerConnection is how many operations (subscriptions,
	// and queries while they run) one WebSocket connection may run at once;
	// a subscribe message beyond it gets an error message with code
	// TOO_MANY_SUBSCRIPTIONS, and the connection stays open. Default 100.
	MaxSubscriptionsPerConnection int
	// MaxConnectionsPerAddress is how many WebSocket connections and SSE
	// streams one client address (the host of the request's RemoteAddr;
	// forwarding headers are not trusted, so behind a proxy all clients
	// share its address) may hold at once; one more is refused with HTTP
	// 429 and code TOO_MANY_CONNECTIONS. Default 64.
	MaxConnectionsPerAddress int
	// KeepAliveInterval is how often the server sends a ping message on a
	// WebSocket and a comment line on an SSE stream, so that idle
	// connections survive proxies' idle timeouts. Default 12s.
	KeepAliveInterval time.Duration
	// WriteTimeout bounds each write to a WebSocket (of the messages that
	// waited, sent together) or an SSE stream: a client that does not take
	// them within it is disconnected. (A WebSocket's write deadline moves
	// only when half of it is left: a blocked write is cut after between
	// half of WriteTimeout and all of it.) Default 10s.
	WriteTimeout time.Duration
	// ShutdownGrace is how long Start, once its context ended, waits for
	// WebSockets to finish their close handshake (1001) and event streams
	// their last write; then it drops the connections that are left and
	// waits for them to end. Default 5s (the close handshake's own bound).
	ShutdownGrace time.Duration
	// Authenticator authenticates every request, WebSocket and event
	// stream by its bearer token, and puts the caller in the context the
	// engine runs the operation with (authn.WithUser), for its Authorizer
	// and the rate limits. Default nil: no authentication (then the
	// engine's Authorizer, if any, sees an anonymous caller).
	Authenticator Authenticator
	// Impersonator lets an authenticated caller act as another user with
	// the Impersonate-User, Impersonate-Group, Impersonate-Uid and
	// Impersonate-Extra-* headers (on a WebSocket, the upgrade request's
	// headers, or keys of the same names in connection_init's payload),
	// on every request, stream and endpoint that Guard fronts, when it
	// allows it (authz.Impersonator); the impersonated user is then the
	// caller. Default nil: the headers are ignored. It applies only with
	// an Authenticator.
	Impersonator Impersonator
	// AllowedOrigins are the browser origins, exactly as a browser sends
	// them ("https://portal.example.com"), whose pages may open WebSockets
	// to the server, besides pages of the server's own origin. A WebSocket
	// upgrade whose Origin is neither gets 403: without the check, any page
	// a user visits could subscribe with the user's cookies or network
	// position. Default none: same-origin and non-browser clients only.
	AllowedOrigins []string
	// RateLimit bounds how fast one caller (the authenticated user, else
	// the client address) may send queries and open subscriptions.
	// Default: no limit (see RateLimit).
	RateLimit RateLimit
	// BrowserPage is served to a browser's GET (Accept preferring
	// text/html) and to the requests for its assets (GraphiQL, see
	// internal/graphiql). Default nil: browsers get the GraphQL error
	// of a GET without a query.
	BrowserPage http.Handler
	// IsBrowserAsset reports whether a GET asks for one of BrowserPage's
	// assets, which need no authentication. Default nil: none.
	IsBrowserAsset func(*http.Request) bool
	// Logger receives the server's log lines. Default klog.Background().
	Logger klog.Logger
	// Registerer is where the server registers its metrics (open
	// subscriptions, rate-limited operations; see docs/metrics.md).
	// Default nil: they are not registered.
	Registerer prometheus.Registerer
}

// DefaultOptions returns the Options with every default filled in: what a
// zero Options means. Configuration and flags that expose a field read its
// default from here.
func DefaultOptions() Options { return Options{}.withDefaults() }

// withDefaults fills in the defaults of unset fields.
func (o Options) withDefaults() Options {
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = defaultMaxBodyBytes
	}
	if o.ConnectionInitTimeout <= 0 {
		o.ConnectionInitTimeout = defaultConnectionInitTimeout
	}
	if o.MaxSubscriptionsPerConnection <= 0 {
		o.MaxSubscriptionsPerConnection = defaultMaxSubscriptionsPerConnection
	}
	if o.MaxConnectionsPerAddress <= 0 {
		o.MaxConnectionsPerAddress = defaultMaxConnectionsPerAddress
	}
	if o.KeepAliveInterval <= 0 {
		o.KeepAliveInterval = defaultKeepAliveInterval
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = defaultWriteTimeout
	}
	if o.ShutdownGrace <= 0 {
		o.ShutdownGrace = defaultShutdownGrace
	}
	o.RateLimit = o.RateLimit.withDefaults()
	if o.Logger.GetSink() == nil {
		o.Logger = klog.Background()
	}
	return o
}

// Engine runs GraphQL operations; *graphql.Server implements it. A
// transport prepares each request, to learn what it is, then runs it.
type Engine interface {
	Prepare(req graphql.Request) (*graphql.Operation, *graphql.Result)
	ExecuteOperation(ctx context.Context, o *graphql.Operation) *graphql.Result
	SubscribeOperation(ctx context.Context, o *graphql.Operation) (*graphql.Subscription, *graphql.Result)
}

// Authenticator checks a caller's bearer token; authn.TokenReview
// implements it.
type Authenticator interface {
	Authenticate(ctx context.Context, token string) (*authn.User, error)
}

// Impersonator decides whom a caller acts as, from a request's
// Impersonate-* headers; authz.Impersonator implements it. Its refusals
// are apierrors.APIStatus errors (400, 403); any other error means it
// could not decide.
type Impersonator interface {
	Impersonate(ctx context.Context, caller *authn.User, h http.Header) (*authn.User, error)
}

// Server serves an Engine over HTTP, graphql-transport-ws and GraphQL over
// Server-Sent Events, on one path. It is safe for concurrent use.
type Server struct {
	engine  Engine
	opts    Options
	metrics *metrics
	// conns counts the WebSocket and SSE connections by client address.
	conns *connections
	// limits applies Options.RateLimit; nil when it limits nothing.
	limits *rateLimiter
	// stopped is canceled when Start's context ends: WebSockets close
	// with 1001, event streams end.
	stopped context.Context
	stop    context.CancelFunc
	// dropped is canceled when connections outlive Options.ShutdownGrace
	// after the stop: they are closed without a handshake.
	dropped context.Context
	drop    context.CancelFunc
	started atomic.Bool
}

// New returns a Server of engine.
func New(engine Engine, opts Options) (*Server, error) {
	opts = opts.withDefaults()
	s := &Server{engine: engine, opts: opts, metrics: newMetrics(), conns: newConnections()}
	if opts.Registerer != nil {
		if err := s.metrics.register(opts.Registerer); err != nil {
			return nil, err
		}
	}
	var err error
	if s.limits, err = newRateLimiter(opts.RateLimit); err != nil {
		return nil, err
	}
	s.stopped, s.stop = context.WithCancel(context.Background())
	s.dropped, s.drop = context.WithCancel(context.Background())
	return s, nil
}

// Options returns the options the server runs with, defaults filled in:
// RateLimit as given (zero: no limit), its bursts' defaults filled in.
func (s *Server) Options() Options { return s.opts }

// Start waits until ctx ends; then it closes every WebSocket (1001) and
// event stream, refuses new ones, and returns once their goroutines have
// ended (see drainConnections): nil, or an error if some connection did
// not end. Start may be called once.
func (s *Server) Start(ctx context.Context) error {
	if !s.started.CompareAndSwap(false, true) {
		return errors.New("transport server started twice")
	}
	<-ctx.Done()
	s.stop()
	return s.drainConnections()
}
