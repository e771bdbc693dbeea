package app

import (
	"cmp"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/fleetcache/fleetcache/pkg/transport"
)

// The rate limits of the command when it authenticates and the
// configuration sets none; each authenticated user has its own budget. The
// main user is a portal backend: one identity that may send 2,000 queries a
// second at full speed. Twice that, with bursts of two seconds' worth, lets
// it run unthrottled with room for spikes, while one user still cannot take
// all of a server that answers about 8,000 to 30,000 small queries a second
// (docs/benchmarks.md). Subscriptions cost more to open (a registration and
// a replay) and are opened far less often: 50 a second covers a backend
// opening live views for its own users' page loads.
const (
	defaultQueriesPerSecond       = 4000
	defaultQueryBurst             = 8000
	defaultSubscriptionsPerSecond = 50
	defaultSubscriptionBurst      = 100
)

// options returns the rate limits for the authentication mode authn:
// without authentication (loopback use) only what is configured, so
// nothing by default; with it, the defaults fill what is not configured.
func (r RateLimitConfig) options(authn string) transport.RateLimit {
	if authn == AuthnNone {
		return transport.RateLimit(r)
	}
	return transport.RateLimit{
		QueriesPerSecond:       cmp.Or(r.QueriesPerSecond, defaultQueriesPerSecond),
		QueryBurst:             cmp.Or(r.QueryBurst, defaultQueryBurst),
		SubscriptionsPerSecond: cmp.Or(r.SubscriptionsPerSecond, defaultSubscriptionsPerSecond),
		SubscriptionBurst:      cmp.Or(r.SubscriptionBurst, defaultSubscriptionBurst),
	}
}

// validateServing reports the bad fields of the serving section to bad.
func validateServing(s ServingConfig, bad func(field, format string, args ...any)) {
	switch {
	case s.TLSCertFile != "" && s.TLSPrivateKeyFile == "":
		bad("serving.tlsPrivateKeyFile", "must be set with serving.tlsCertFile")
	case s.TLSCertFile == "" && s.TLSPrivateKeyFile != "":
		bad("serving.tlsCertFile", "must be set with serving.tlsPrivateKeyFile")
	case s.TLSCertFile != "":
		if _, err := tls.LoadX509KeyPair(s.TLSCertFile, s.TLSPrivateKeyFile); err != nil {
			bad("serving.tlsCertFile", "%v", err)
		}
	}
	for i, o := range s.CORSAllowedOrigins {
		if err := checkOrigin(o); err != nil {
			bad(fmt.Sprintf("serving.corsAllowedOrigins[%d]", i), "%v", err)
		}
	}
	r := s.RateLimit
	for _, f := range []struct {
		name     string
		negative bool
	}{
		{"serving.rateLimit.queriesPerSecond", r.QueriesPerSecond < 0},
		{"serving.rateLimit.queryBurst", r.QueryBurst < 0},
		{"serving.rateLimit.subscriptionsPerSecond", r.SubscriptionsPerSecond < 0},
		{"serving.rateLimit.subscriptionBurst", r.SubscriptionBurst < 0},
	} {
		if f.negative {
			bad(f.name, "must not be negative (0 means the default)")
		}
	}
}

// checkOrigin accepts an origin as browsers send it: http or https, a
// host, an optional port, nothing else. A wildcard is refused: the list
// also guards WebSockets, where "any origin" would let every page a user
// opens subscribe in the user's name.
func checkOrigin(o string) error {
	if o == "*" || strings.Contains(o, "*") {
		return fmt.Errorf("%q: wildcards are not allowed, list each origin", o)
	}
	u, err := url.Parse(o)
	switch {
	case err != nil:
		return fmt.Errorf("%q: %w", o, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("%q: must start with https:// or http://", o)
	case u.Host == "" || u.Hostname() == "":
		return fmt.Errorf("%q: has no host", o)
	case u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(o, "/"):
		return fmt.Errorf("%q: an origin is scheme://host[:port], without a path", o)
	case o != strings.ToLower(o):
		return fmt.Errorf("%q: write it in lower case, as browsers send it", o)
	}
	if port := u.Port(); port != "" {
		if _, err := net.LookupPort("tcp", port); err != nil {
			return fmt.Errorf("%q: bad port %q", o, port)
		}
	}
	return nil
}

// serve serves srv on ln, over TLS when srv has a TLS configuration. HTTP/2
// comes with TLS; WebSockets still use HTTP/1.1, as net/http does not offer
// extended CONNECT by default, so browsers upgrade over HTTP/1.1.
func serve(srv *http.Server, ln net.Listener) error {
	if srv.TLSConfig != nil {
		return srv.ServeTLS(ln, "", "")
	}
	return srv.Serve(ln)
}
