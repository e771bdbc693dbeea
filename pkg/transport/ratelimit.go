package transport

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/time/rate"

	"github.com/fleetcache/fleetcache/pkg/authn"
	"github.com/fleetcache/fleetcache/pkg/graphql"
)

// CodeRateLimited: the caller (an authenticated user, else a client
// address) sent operations faster than Options.RateLimit allows. Over HTTP and SSE the request gets 429 with a
// Retry-After header; over a WebSocket the subscribe message gets an error
// message, and the connection stays open. The message says when to retry.
const CodeRateLimited = "RATE_LIMITED"

// RateLimit bounds how fast one caller may start operations, over every
// transport together. A caller is the authenticated user (authn.User.Key:
// name, UID, groups and extra), whatever address it comes from; without an
// Authenticator it is the client address (as for
// Options.MaxConnectionsPerAddress: the host of the request's RemoteAddr,
// forwarding headers not trusted). Each limit is a token bucket: a caller
// may send Burst operations at once, then PerSecond on average.
//
// A zero RateLimit limits nothing, so that programs embedding the server
// and their tests choose; the aggregator's configuration turns both limits
// on by default when it authenticates (docs/configuration.md).
type RateLimit struct {
	// QueriesPerSecond is how many queries and mutations a caller may send
	// per second: HTTP requests, and operations other than subscriptions
	// over SSE and WebSocket. Default 0: no limit.
	QueriesPerSecond float64
	// QueryBurst is how many queries a caller may send at once. Default
	// twice QueriesPerSecond, at least 1.
	QueryBurst int
	// SubscriptionsPerSecond is how many subscriptions a caller may open
	// per second, over SSE and WebSocket. Default 0: no limit.
	SubscriptionsPerSecond float64
	// SubscriptionBurst is how many subscriptions a caller may open at
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

// maxRateLimitedClients bounds how many callers (users and addresses) the
// limiters are kept for. When more are active, the least recently seen
// one's limiter is forgotten, which can only give that caller a fresh
// burst: memory stays bounded whatever the number of addresses or tokens an
// attacker uses. No expiry is needed either: the limiter of an idle caller
// is a full bucket, the same as a new one.
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

// rateLimiter applies a RateLimit per caller (see callerKey). It is safe
// for concurrent use.
type rateLimiter struct {
	limits [2]bucket // by operationKind
	// clients holds each caller's limiters, by operationKind.
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

// callerKey is whom a rate limit counts an operation against: the
// authenticated user when there is one, else the client address. The two
// kinds of keys cannot collide.
type callerKey struct {
	key string
	// what names the caller in messages: "this user", "this client address".
	what string
}

// userCaller is the caller key of an authenticated user.
func userCaller(u *authn.User) callerKey {
	return callerKey{key: "user\x00" + u.Key(), what: "this user"}
}

// addressCaller is the caller key of an unauthenticated client address.
func addressCaller(addr string) callerKey {
	return callerKey{key: "addr\x00" + addr, what: "this client address"}
}

// callerOf returns the caller key of a request whose context carries its
// authenticated user, if any, and whose client address is addr.
func callerOf(ctx context.Context, addr string) callerKey {
	if u, ok := authn.UserFrom(ctx); ok && u != nil {
		return userCaller(u)
	}
	return addressCaller(addr)
}

// allow takes a token for an operation of kind from the caller's bucket.
// When there is none it returns an error with code RATE_LIMITED and how
// long until the next token.
func (rl *rateLimiter) allow(c callerKey, kind operationKind) (retryAfter time.Duration, err error) {
	if rl == nil || rl.limits[kind].perSecond == 0 {
		return 0, nil
	}
	lims, ok := rl.clients.Get(c.key)
	if !ok {
		fresh := &[2]*rate.Limiter{}
		for k, b := range rl.limits {
			fresh[k] = rate.NewLimiter(b.perSecond, b.burst)
		}
		// Two first requests of one caller may race: both use the one
		// the cache keeps.
		if prev, found, _ := rl.clients.PeekOrAdd(c.key, fresh); found {
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
	return wait, (fmt.Errorf("rate limited: %s may send %s %s per second, in bursts of at most %d; retry in %s",
		c.what, strconv.FormatFloat(float64(b.perSecond), 'f', -1, 64), b.what, b.burst, retrySeconds(wait)+"s"))
}

// retrySeconds is wait as a Retry-After value: whole seconds, rounded up,
// at least 1.
func retrySeconds(wait time.Duration) string {
	return strconv.Itoa(max(1, int(math.Ceil(wait.Seconds()))))
}

// kindOf returns what the rate limits count an operation as: a
// subscription if it is one, else a query (also when it did not prepare: it
// cost a parse).
func kindOf(o *graphql.Operation) operationKind {
	if o != nil && o.Type() == graphql.OperationSubscription {
		return kindSubscription
	}
	return kindQuery
}

// allowRate takes a token of kind for the caller, counting a refusal in
// the metrics; see rateLimiter.allow.
func (s *Server) allowRate(c callerKey, kind operationKind) (retryAfter time.Duration, err error) {
	wait, err := s.limits.allow(c, kind)
	if err != nil {
		s.metrics.rateLimited.WithLabelValues(kind.String()).Inc()
	}
	return wait, err
}

// allowHTTP takes a token of kind for the caller of r (authenticated
// already, when the server authenticates), or writes the 429 response and
// returns false.
func (s *Server) allowHTTP(w http.ResponseWriter, r *http.Request, kind operationKind) bool {
	wait, err := s.allowRate(callerOf(r.Context(), clientAddress(r)), kind)
	if err == nil {
		return true
	}
	w.Header().Set("Retry-After", retrySeconds(wait))
	s.writeError(w, r, http.StatusTooManyRequests, CodeRateLimited, err)
	return false
}
