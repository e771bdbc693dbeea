package aggregator

import (
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// routes is the HTTP surface of the aggregator.
func (a *Aggregator) routes() http.Handler {
	r := chi.NewRouter()
	r.Handle("/graphql", a.API)
	r.Get("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	r.Handle("/metrics", promhttp.HandlerFor(a.Metrics, promhttp.HandlerOpts{Registry: a.Metrics}))
	return r
}
