package aggregator

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"k8s.io/klog/v2"

	"github.com/fleetcache/fleetcache/pkg/clusters"
	"github.com/fleetcache/fleetcache/pkg/graphql"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/informers"
)

// Options configure the aggregator.
type Options struct {
	// Kubeconfig is the kubeconfig file whose contexts are the clusters.
	// Default: the first file of $KUBECONFIG, else ~/.kube/config.
	Kubeconfig string
	// Contexts are the contexts to register. Default: every context.
	Contexts []string
	// Addr is where the HTTP server listens. Default 127.0.0.1:8080.
	Addr string
	// Index configures the global index.
	Index index.Options
	// Informers configures the per-cluster caches (resource types included).
	Informers informers.Options
	// GraphQL configures the GraphQL API.
	GraphQL graphql.Options
}

func (o Options) withDefaults() (Options, error) {
	if o.Kubeconfig == "" {
		if paths := filepath.SplitList(os.Getenv("KUBECONFIG")); len(paths) > 0 && paths[0] != "" {
			o.Kubeconfig = paths[0]
		} else {
			home, err := os.UserHomeDir()
			if err != nil {
				return o, fmt.Errorf("default kubeconfig: %w", err)
			}
			o.Kubeconfig = filepath.Join(home, ".kube", "config")
		}
	}
	if o.Addr == "" {
		o.Addr = "127.0.0.1:8080"
	}
	return o, nil
}

// Aggregator is fleetcache assembled: the registry of clusters, the index
// and health they feed, and the HTTP handler that serves them.
type Aggregator struct {
	Index    *index.Index
	Health   *health.Tracker
	Registry *clusters.Registry
	API      *graphql.Server
	// Metrics holds every metric of this aggregator, served at /metrics.
	Metrics *prometheus.Registry
	// Handler serves the HTTP API (see routes).
	Handler http.Handler
}

// New assembles an Aggregator with no cluster registered yet.
func New(opts Options) (*Aggregator, error) {
	ix := index.New(opts.Index)
	tr := health.NewTracker(ix, health.Options{})
	fleet, err := informers.NewFleet(ix, tr, opts.Informers)
	if err != nil {
		return nil, fmt.Errorf("informers: %w", err)
	}
	api, err := graphql.New(ix, tr, opts.GraphQL)
	if err != nil {
		return nil, fmt.Errorf("graphql: %w", err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	a := &Aggregator{
		Index:    ix,
		Health:   tr,
		Registry: clusters.NewRegistry(fleet, clusters.Options{}),
		API:      api,
		Metrics:  reg,
	}
	a.Handler = a.routes()
	return a, nil
}

// Start runs the registered clusters (and those registered later) and the
// API's subscriptions until ctx ends, then waits for all of them to stop.
func (a *Aggregator) Start(ctx context.Context) error {
	var wg sync.WaitGroup
	var apiErr error
	wg.Go(func() { apiErr = a.API.Start(ctx) })
	regErr := a.Registry.Start(ctx)
	wg.Wait()
	return errors.Join(regErr, apiErr)
}

// Run registers the clusters of the kubeconfig, serves HTTP on opts.Addr and
// returns when ctx ends, after the server and every cluster have stopped.
// Contexts that fail to load are logged and left out; none loading is an error.
func Run(ctx context.Context, opts Options) error {
	opts, err := opts.withDefaults()
	if err != nil {
		return err
	}
	logger := klog.FromContext(ctx)
	cs, err := clusters.FromKubeconfig(opts.Kubeconfig, opts.Contexts...)
	if len(cs) == 0 {
		return fmt.Errorf("no cluster to register from %s: %w", opts.Kubeconfig, err)
	}
	if err != nil {
		logger.Error(err, "Some contexts were left out", "kubeconfig", opts.Kubeconfig)
	}
	agg, err := New(opts)
	if err != nil {
		return err
	}
	if err := agg.Registry.Set(cs); err != nil {
		logger.Error(err, "Some clusters were not registered")
	}
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", opts.Addr, err)
	}
	srv := &http.Server{Handler: agg.Handler, ReadHeaderTimeout: 10 * time.Second}
	logger.Info("Serving", "addr", ln.Addr().String(), "clusters", agg.Registry.Names())

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var regErr, srvErr error
	wg.Go(func() { regErr = agg.Start(ctx) })
	wg.Go(func() {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			srvErr = fmt.Errorf("serve http: %w", err)
			cancel()
		}
	})
	<-ctx.Done()
	shutdownCtx, stop := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer stop()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		logger.Error(err, "HTTP server shutdown")
	}
	wg.Wait()
	return errors.Join(srvErr, regErr)
}
