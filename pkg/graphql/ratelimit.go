package graphql

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/graphql-go/graphql/language/ast"
	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/time/rate"
)

// CodeRateLimited: the client's address sent operations faster than
// Options.RateLimit allows. Over HTTP and SSE the request gets 429 with a
// Retry-After header; over a WebSocket the subscribe message gets an error
// message, and the connection stays open. The message says when to retry.
const CodeRateLimited = "RATE_LIMITED"

// RateLimit bounds how fast one client address (as for
// Options.MaxConnectionsPerAddress: the host of the request's RemoteAddr,
// forwarding headers not trusted) may start operations, over every
// transport together. Each limit is a token bucket: a client may send Burst
// operations at once, then PerSecond on average.
//
// A zero RateLimit limits nothing, so that programs embedding the server
// and their tests choose; the aggregator's configuration turns both limits
// on by default (docs/configuration.md).
type RateLimit struct {
	// QueriesPerSecond is how many queries and mutations a client may send
	// per second: HTTP requests, and operations other than subscriptions
	// over SSE and WebSocket. Default 0: no limit.
	QueriesPerSecond float64
	// QueryBurst is how many queries a client may send at once. Default
	// twice QueriesPerSecond, at least 1.
	QueryBurst int
	// SubscriptionsPerSecond is how many subscriptions a client may open
	// per second, over SSE and WebSocket. Default 0: no limit.
	SubscriptionsPerSecond float64
	// SubscriptionBurst is how many subscriptions a client may open at
	// once. Default twice SubscriptionsPerSecond, at least 1.
	SubscriptionBurst int
}

func (l RateLimit) withDefaults() RateLimit {
	burst := func(perSecond float64, burst int) int {
		if burst > 0 || perSecond <= 0 {
			return burst
		}
		return max(1, int(math.Ceil(2*perSecond)))
	}
	l.QueryBurst = burst(l.QueriesPerSecond, l.QueryBurst)
	l.SubscriptionBurst = burst(l.SubscriptionsPerSecond, l.SubscriptionBurst)
	return l
}

// maxRateLimitedClients bounds how many client addresses the limiters are
// kept for. When more are active, the least recently seen one's limiter is
// forgotten, which can only give that client a fresh burst: memory stays
// bounded whatever the number of addresses an attacker uses. No expiry is
// needed either: the limiter of an idle client is a full bucket, the same
// as a new one.
const maxRateLimitedClients = 16 << 10

// operationKind is what a rate limit counts.
type operationKind int

const (
	kindQuery operationKind = iota
	kindSubscription
)

// operationKinds are the kinds, for the metrics' label values.
var operationKinds = []operationKind{kindQuery, kindSubscription}

// String is the kind's label value in metrics: "query", "subscription".
func (k operationKind) String() string {
	if k == kindSubscription {
		return "subscription"
	}
	return "query"
}

// rateLimiter applies a RateLimit per client address. It is safe for
// concurrent use.
type rateLimiter struct {
	limits [2]bucket // by operationKind
	// clients holds each address's limiters, by operationKind.
	clients *lru.Cache[string, *[2]*rate.Limiter]
	// now is the clock; tests replace it.
	now func() time.Time
}

// bucket is one token bucket's parameters; a zero perSecond means no limit.
type bucket struct {
	perSecond rate.Limit
	burst     int
	// what names the operations in messages: "queries", "subscriptions".
	what string
}

// newRateLimiter returns the limiter of l, or nil if l limits nothing.
func newRateLimiter(l RateLimit) (*rateLimiter, error) {
	l = l.withDefaults()
	if l.QueriesPerSecond <= 0 && l.SubscriptionsPerSecond <= 0 {
		return nil, nil
	}
	clients, err := lru.New[string, *[2]*rate.Limiter](maxRateLimitedClients)
	if err != nil {
		return nil, fmt.Errorf("rate limiters: %w", err)
	}
	return &rateLimiter{
		limits: [2]bucket{
			kindQuery:        {perSecond: rate.Limit(max(l.QueriesPerSecond, 0)), burst: l.QueryBurst, what: "queries"},
			kindSubscription: {perSecond: rate.Limit(max(l.SubscriptionsPerSecond, 0)), burst: l.SubscriptionBurst, what: "subscriptions"},
		},
		clients: clients,
		now:     time.Now,
	}, nil
}

// allow takes a token for an operation of kind from addr's bucket. When
// there is none it returns an error with code RATE_LIMITED and how long
// until the next token.
func (rl *rateLimiter) allow(addr string, kind operationKind) (retryAfter time.Duration, err error) {
	if rl == nil || rl.limits[kind].perSecond == 0 {
		return 0, nil
	}
	lims, ok := rl.clients.Get(addr)
	if !ok {
		fresh := &[2]*rate.Limiter{}
		for k, b := range rl.limits {
			fresh[k] = rate.NewLimiter(b.perSecond, b.burst)
		}
		// Two first requests of one address may race: both use the one
		// the cache keeps.
		if prev, found, _ := rl.clients.PeekOrAdd(addr, fresh); found {
			lims = prev
		} else {
			lims = fresh
		}
	}
	lim, now := lims[kind], rl.now()
	if lim.AllowN(now, 1) {
		return 0, nil
	}
	b := rl.limits[kind]
	wait := time.Duration((1 - lim.TokensAt(now)) / float64(b.perSecond) * float64(time.Second))
	return wait, newCodedError(CodeRateLimited, fmt.Errorf("rate limited: this client may send %s %s per second, in bursts of at most %d; retry in %s",
		strconv.FormatFloat(float64(b.perSecond), 'f', -1, 64), b.what, b.burst, retrySeconds(wait)+"s"))
}

// retrySeconds is wait as a Retry-After value: whole seconds, rounded up,
// at least 1.
func retrySeconds(wait time.Duration) string {
	return strconv.Itoa(max(1, int(math.Ceil(wait.Seconds()))))
}

// kindOf returns what the rate limits count req as: a subscription if it is
// one, else a query (also when it does not parse: it costs a parse).
func (s *Server) kindOf(req Request) operationKind {
	doc, errs := s.prepare(req.Query)
	if errs != nil {
		return kindQuery
	}
	op, err := selectOperation(doc.ast, req.OperationName)
	if err == nil && op.Operation == ast.OperationTypeSubscription {
		return kindSubscription
	}
	return kindQuery
}

// allowRate takes a token of kind for addr, counting a refusal in the
// metrics; see rateLimiter.allow.
func (s *Server) allowRate(addr string, kind operationKind) (retryAfter time.Duration, err error) {
	wait, err := s.limits.allow(addr, kind)
	if err != nil {
		s.metrics.rateLimited.WithLabelValues(kind.String()).Inc()
	}
	return wait, err
}

// allowHTTP takes a token of kind for the client of r, or writes the 429
// response and returns false.
func (s *Server) allowHTTP(w http.ResponseWriter, r *http.Request, kind operationKind) bool {
	wait, err := s.allowRate(clientAddress(r), kind)
	if err == nil {
		return true
	}
	w.Header().Set("Retry-After", retrySeconds(wait))
	s.writeError(w, r, http.StatusTooManyRequests, CodeRateLimited, err)
	return false
}
