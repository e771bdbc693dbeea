package app

import (
	"net/http"
	"slices"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/fleetcache/fleetcache/internal/statuspage"
	"github.com/fleetcache/fleetcache/pkg/audit"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/kubeapi"
)

// routes is the HTTP surface of the aggregator. operators, when not nil,
// guards the operator endpoints (profiling).
func (a *Aggregator) routes(opts Options, operators func(http.Handler) http.Handler) http.Handler {
	r := chi.NewRouter()
	// Every API endpoint is audited (a line per request, and per
	// operation on a WebSocket); its query string, for the Kubernetes API
	// only: /graphql's holds documents and variables.
	audited, auditedURI := a.Audit.Middleware(audit.PathOnly), a.Audit.Middleware(audit.FullURI)
	r.With(audited, cors(opts.CORSAllowedOrigins), a.loaded).Handle("/graphql", a.Transport)
	if a.MCP != nil {
		// The same callers, rights and rate limits as /graphql. No CORS:
		// MCP clients are not browser pages (a cross-origin page's POST
		// needs a preflight, which gets no CORS answer).
		r.With(audited, a.loaded).Handle("/mcp", a.Transport.Guard(a.MCP))
	}
	// Each member's Kubernetes API, and the fleet's, read-only: the same
	// callers as /graphql, each request authorized for its verb; refusals
	// are Kubernetes Status objects.
	r.With(auditedURI, a.loaded).Handle(kubeapi.PathPrefix+"*", a.Transport.GuardStatus(a.KubeAPI))
	r.With(auditedURI, a.loaded).Handle(kubeapi.FleetPrefix+"*", a.Transport.GuardStatus(a.KubeAPI))
	r.Handle("/metrics", promhttp.HandlerFor(a.Metrics, promhttp.HandlerOpts{Registry: a.Metrics}))

	// Kubernetes-style probes; /readyz/NAME runs one check, e.g.
	// /readyz/cluster:c1.
	ready := opts.Readyz
	if a.snapshot != nil {
		ready.Checks = append(slices.Clip(ready.Checks), health.Check{Name: "snapshot", Check: a.snapshot.ready})
	}
	healthz, readyz := health.Healthz(), health.Readyz(a.Health, ready)
	r.Get("/healthz", healthz.ServeHTTP)
	r.Get("/healthz/*", func(w http.ResponseWriter, r *http.Request) {
		healthz.ServeCheck(w, r, strings.TrimPrefix(r.URL.Path, "/healthz/"))
	})
	r.Get("/readyz", readyz.ServeHTTP)
	r.Get("/readyz/*", func(w http.ResponseWriter, r *http.Request) {
		readyz.ServeCheck(w, r, strings.TrimPrefix(r.URL.Path, "/readyz/"))
	})

	if opts.Profiling != nil && *opts.Profiling {
		routeProfiling(r, operators)
	}

	status := statuspage.Handler()
	r.Get("/", status.ServeHTTP)
	r.Get(statuspage.AssetPrefix+"*", status.ServeHTTP)
	r.Get(statuspage.FaviconPath, status.ServeHTTP)
	return r
}

// loaded holds an API request until the index holds what the snapshot
// kept (the load runs while the clusters start, and the index is the
// load's alone until it ends); a request whose context ends first, or
// whose wait the process stopping ended (the index is then empty), is
// answered 503 with Retry-After. Requests of an aggregator without a
// snapshot go on at once.
func (a *Aggregator) loaded(next http.Handler) http.Handler {
	if a.snapshot == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a.WaitLoaded(r.Context()) != nil || a.snapshot.stopped {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "fleetcache is loading its snapshot", http.StatusServiceUnavailable)
			return
		}
		next.ServeHTTP(w, r)
	})
}
