package graphql

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"

	"github.com/fleetcache/fleetcache/pkg/fanout"
)

// Option defaults.
const (
	defaultPageSize          = 100
	defaultMaxPageSize       = 1000
	defaultMaxDepth          = 12
	defaultMaxBodyBytes      = 1 << 20
	defaultMaxCost           = 10000
	defaultMaxResponseBytes  = 64 << 20
	defaultTimeout           = 10 * time.Second
	defaultDocumentCacheSize = 1024

	// Defaults of the streaming transports (ws.go, sse.go).
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
	// DefaultPageSize is the default of resources(first:). Default 100.
	DefaultPageSize int
	// MaxPageSize is the largest resources(first:) accepted. Default 1000.
	MaxPageSize int
	// MaxDepth is how deeply a document may nest field selections, counted
	// with fragments expanded: { resources { edges { node { name } } } } is
	// 4 deep. Introspection (__schema, __type) is bounded separately by
	// max(MaxDepth, 16), which fits the introspection query of GraphQL
	// clients such as GraphiQL. Default 12.
	MaxDepth int
	// MaxBodyBytes is the largest request body accepted; larger ones get
	// HTTP 413. Default 1 MiB.
	MaxBodyBytes int64
	// MaxCost bounds an operation's cost: the most objects its answer (a
	// subscription's: each event's) can hold, computed before it runs,
	// with each edge of resources counting its first and each resource,
	// owner and child one (docs/graphql.md, "Query cost"). An operation
	// over it is refused with QUERY_TOO_COMPLEX. Default 10,000: ten full
	// pages of MaxPageSize.
	MaxCost int
	// MaxResponseBytes bounds the encoding of one answer (or subscription
	// event): objects range from a few hundred bytes to megabytes, which
	// the cost cannot know, so the server stops writing an answer once it
	// passes this size and answers RESPONSE_TOO_LARGE instead. Default
	// 64 MiB: a full-cost answer of objects of 6 KiB on average.
	MaxResponseBytes int64
	// Timeout bounds the execution of each request. Default 10s.
	Timeout time.Duration
	// DocumentCacheSize is how many parsed and validated documents are kept,
	// keyed by query text; documents over 64 KiB are not cached. Default 1024.
	DocumentCacheSize int
	// Fanout configures the hub behind resourceEvents subscriptions, with
	// fanout's defaults: Buffer (1024) is how many events may wait for each
	// subscription (Subscription.Next) before it is ended as a slow
	// consumer with ErrSlowConsumer, the client resuming from its last
	// cursor; HeartbeatInterval (30s) is how long a subscription stays
	// silent before it sends a heartbeat, a payload without data whose
	// extensions carry the cursor of the revision it has caught up with,
	// so that a client resuming after a quiet spell is not behind the
	// retained changes. Its Overflows counter is the server's own.
	Fanout fanout.Options
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
	// stream by its bearer token. Default nil: no authentication, and no
	// authorization either.
	Authenticator Authenticator
	// Authorizer filters every answer and event by what the caller may
	// list. Default nil: everything is visible. It needs an Authenticator.
	Authorizer Authorizer
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
	// Logger receives the server's log lines. Default klog.Background().
	Logger klog.Logger
	// Registerer is where the server registers its metrics (request
	// durations, open subscriptions, overflows, document cache lookups;
	// see docs/metrics.md). Default nil: they are not registered.
	Registerer prometheus.Registerer
}

// DefaultOptions returns the Options with every default filled in: what a
// zero Options means. Configuration and flags that expose a field read its
// default from here.
func DefaultOptions() Options { return Options{}.withDefaults() }

// withDefaults fills in the defaults of unset fields.
func (o Options) withDefaults() Options {
	if o.DefaultPageSize <= 0 {
		o.DefaultPageSize = defaultPageSize
	}
	if o.MaxPageSize <= 0 {
		o.MaxPageSize = defaultMaxPageSize
	}
	if o.MaxDepth <= 0 {
		o.MaxDepth = defaultMaxDepth
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = defaultMaxBodyBytes
	}
	if o.MaxCost <= 0 {
		o.MaxCost = defaultMaxCost
	}
	if o.MaxResponseBytes <= 0 {
		o.MaxResponseBytes = defaultMaxResponseBytes
	}
	if o.Timeout <= 0 {
		o.Timeout = defaultTimeout
	}
	if o.DocumentCacheSize <= 0 {
		o.DocumentCacheSize = defaultDocumentCacheSize
	}
	o.Fanout = o.Fanout.WithDefaults()
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
	if o.Logger.GetSink() == nil {
		o.Logger = klog.Background()
	}
	return o
}
