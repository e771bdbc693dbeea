package app

import (
	"net/http"
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
	r.With(audited, cors(opts.CORSAllowedOrigins)).Handle("/graphql", a.Transport)
	if a.MCP != nil {
		// The same callers, rights and rate limits as /graphql. No CORS:
		// MCP clients are not browser pages (a cross-origin page's POST
		// needs a preflight, which gets no CORS answer).
		r.With(audited).Handle("/mcp", a.Transport.Guard(a.MCP))
	}
	// Each member's Kubernetes API, and the fleet's, read-only: the same
	// callers as /graphql, each request authorized for its verb; refusals
	// are Kubernetes Status objects.
	r.With(auditedURI).Handle(kubeapi.PathPrefix+"*", a.Transport.GuardStatus(a.KubeAPI))
	r.With(auditedURI).Handle(kubeapi.FleetPrefix+"*", a.Transport.GuardStatus(a.KubeAPI))
	r.Handle("/metrics", promhttp.HandlerFor(a.Metrics, promhttp.HandlerOpts{Registry: a.Metrics}))

	// Kubernetes-style probes; /readyz/NAME runs one check, e.g.
	// /readyz/cluster:c1.
	healthz, readyz := health.Healthz(), health.Readyz(a.Health, opts.Readyz)
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
