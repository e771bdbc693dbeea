package app

import (
	"context"
	"crypto/tls"
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
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/fleetcache/fleetcache/internal/memlimit"
	"github.com/fleetcache/fleetcache/internal/servingcert"
	"github.com/fleetcache/fleetcache/pkg/audit"
	"github.com/fleetcache/fleetcache/pkg/clusters"
	"github.com/fleetcache/fleetcache/pkg/columns"
	"github.com/fleetcache/fleetcache/pkg/graphql"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/compact"
	"github.com/fleetcache/fleetcache/pkg/index/views"
	"github.com/fleetcache/fleetcache/pkg/informers"
	"github.com/fleetcache/fleetcache/pkg/inventory"
	"github.com/fleetcache/fleetcache/pkg/kubeapi"
	"github.com/fleetcache/fleetcache/pkg/mcp"
	"github.com/fleetcache/fleetcache/pkg/openapi"
	"github.com/fleetcache/fleetcache/pkg/transport"
)

// Defaults of Options, filled in by Run.
const (
	// DefaultAddr is Options.Addr when unset: loopback only.
	DefaultAddr = "127.0.0.1:8080"
	// DefaultShutdownTimeout is Options.ShutdownTimeout when unset, inside
	// the 10s a Kubernetes pod is commonly given.
	DefaultShutdownTimeout = 8 * time.Second
	// DefaultTLSReloadInterval is Options.TLSReloadInterval when unset.
	DefaultTLSReloadInterval = 10 * time.Second
)

// Options configure the aggregator. Config.Options builds them from the
// configuration file and flags. Each field's comment states its default,
// used when the field is zero; the packages' own Options (Index, Informers,
// GraphQL, and those that Auth builds) fill in theirs.
//
// Two defaults differ from the command's, as they do in the Go API of pkg/:
// a zero Auth means no authentication, and a zero GraphQL.RateLimit no rate
// limit, while the command (Config.Options) authenticates with a
// TokenReview and limits each user's rate unless told otherwise.
type Options struct {
	// Kubeconfigs are kubeconfig files whose contexts are clusters, read
	// once at start. Default, when no cluster source at all is set: the
	// files of $KUBECONFIG, else ~/.kube/config.
	Kubeconfigs []string
	// Contexts are the contexts of Kubeconfigs to register. Default: every context.
	Contexts []string
	// KubeconfigDir is a directory of kubeconfig files (see clusters.FromDir),
	// followed live. Default: none.
	KubeconfigDir string
	// DirInterval is how often KubeconfigDir is read. Default
	// clusters.DefaultDirInterval.
	DirInterval time.Duration
	// ClusterSecretsNamespace is the namespace whose Secrets labelled
	// fleetcache.io/cluster=true register clusters, followed live. Default: none.
	ClusterSecretsNamespace string
	// ClusterSecretsKubeconfig reaches the cluster holding those Secrets,
	// through its current context. Default: the in-cluster configuration.
	ClusterSecretsKubeconfig string
	// ClusterProfiles, ClusterAPI and ArgoCD are the inventory sources,
	// followed live; each is off unless Enabled.
	ClusterProfiles, ClusterAPI, ArgoCD InventorySourceOptions
	// ClusterLabels are configured cluster labels by cluster name, added to
	// (and winning over) those of the cluster's source. Default none.
	ClusterLabels map[string]map[string]string
	// Addr is where the HTTP server listens. Default DefaultAddr.
	Addr string
	// Listener, if set, is served instead of a listener on Addr, which it
	// must be bound to: a caller that binds the address early keeps it
	// from being taken meanwhile. Run closes it.
	Listener net.Listener
	// Profiling serves Go's profiles at /debug/pprof/ on the HTTP server,
	// as Kubernetes components do; with authentication, to operators only
	// (see operatorsOnly). Default (nil): on when Addr is a loopback
	// address (127.0.0.0/8, ::1, localhost), off otherwise.
	Profiling *bool
	// TLSCertFile and TLSPrivateKeyFile, both set, make Run serve HTTPS
	// (and WSS) with this PEM certificate (chain) and key, loaded at start
	// and again whenever the files change. Default: plain HTTP.
	TLSCertFile, TLSPrivateKeyFile string
	// TLSReloadInterval is how often the certificate's files are checked
	// for a change. Default DefaultTLSReloadInterval.
	TLSReloadInterval time.Duration
	// CORSAllowedOrigins are the exact origins of browser pages allowed to
	// call /graphql cross-origin: CORS for HTTP and SSE, and the WebSocket
	// Origin check (it replaces Transport.AllowedOrigins). Default none.
	CORSAllowedOrigins []string
	// Readyz configures /readyz.
	Readyz health.ReadyzOptions
	// ShutdownTimeout bounds a graceful stop, from the end of ctx to Run's
	// return. Default DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
	// Index configures the global index.
	Index index.Options
	// Health configures the health tracker (its status histories).
	Health health.Options
	// Auth configures authentication and authorization. Default: none (see
	// AuthOptions.Authn); the command's default is a TokenReview.
	Auth AuthOptions
	// Informers configures the per-cluster caches (resource types included).
	Informers informers.Options
	// GraphQL configures the GraphQL engine.
	GraphQL graphql.Options
	// Schemas configures how the members' OpenAPI schemas are followed,
	// for the typed kinds of the GraphQL schema (package openapi).
	Schemas openapi.Options
	// Transport configures how the engine is served: HTTP, WebSocket, SSE.
	Transport transport.Options
	// DisableMCP leaves the MCP server out: /mcp answers 404. Default
	// false: MCP is served at /mcp, with the authentication, rate limits
	// and authorization of /graphql.
	DisableMCP bool
	// MCP configures the MCP server (package mcp).
	MCP mcp.Options
	// KubeAPI configures the Kubernetes API at /clusters/{cluster} (package
	// kubeapi); its Columns and Authorizer are the aggregator's.
	KubeAPI kubeapi.Options
	// Snapshot keeps the index in a store for warm starts.
	Snapshot SnapshotOptions
	// Audit configures the audit log of the API endpoints (/graphql, /mcp,
	// /clusters, /fleet). Default: none (audit.Options.Path "").
	Audit audit.Options
}

// SnapshotOptions configure the snapshot of the index (pkg/warmstart).
type SnapshotOptions struct {
	// Dir is the snapshot store's directory. Default "": none.
	Dir string
	// Interval is how often what changed is written. Default
	// warmstart.Options' (5s).
	Interval time.Duration
}

// InventorySourceOptions configure one inventory source (ClusterProfiles,
// Cluster API or Argo CD Secrets).
type InventorySourceOptions struct {
	// Enabled turns the source on. Default false.
	Enabled bool
	// Namespace is where its objects are. Default "": every namespace.
	Namespace string
	// Kubeconfig reaches the cluster holding them, through its current
	// context. Default: the in-cluster configuration.
	Kubeconfig string
	// ProvidersFile is the KEP-5339 providers file (ClusterProfiles only,
	// required there).
	ProvidersFile string
	// AllowExecPlugins accepts exec credential plugins written in Secrets
	// (Cluster API, Argo CD). Default false.
	AllowExecPlugins bool
}

func (o Options) withDefaults() (Options, error) {
	if len(o.Kubeconfigs) == 0 && o.KubeconfigDir == "" && o.ClusterSecretsNamespace == "" &&
		!o.ClusterProfiles.Enabled && !o.ClusterAPI.Enabled && !o.ArgoCD.Enabled {
		for _, p := range filepath.SplitList(os.Getenv("KUBECONFIG")) {
			if p != "" {
				o.Kubeconfigs = append(o.Kubeconfigs, p)
			}
		}
		if len(o.Kubeconfigs) == 0 {
			home, err := os.UserHomeDir()
			if err != nil {
				return o, fmt.Errorf("default kubeconfig: %w", err)
			}
			o.Kubeconfigs = []string{filepath.Join(home, ".kube", "config")}
		}
	}
	if o.Addr == "" {
		o.Addr = DefaultAddr
	}
	if o.Profiling == nil {
		on := isLoopback(o.Addr)
		o.Profiling = &on
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = DefaultShutdownTimeout
	}
	if o.TLSReloadInterval <= 0 {
		o.TLSReloadInterval = DefaultTLSReloadInterval
	}
	return o, nil
}

// Aggregator is fleetcache assembled: the registry of clusters, the index
// and health they feed, and the HTTP handler that serves them.
type Aggregator struct {
	Index    *index.Index
	Health   *health.Tracker
	Registry *clusters.Registry
	// Inventory holds each registered cluster's labels and source.
	Inventory *inventory.Store
	// Columns holds the printers of the index's types, which the informers
	// record and the API reads (Resource.columns).
	Columns *columns.Types
	API     *graphql.Server
	// Transport serves API over HTTP, WebSocket and SSE at /graphql.
	Transport *transport.Server
	// MCP serves API's queries as MCP tools at /mcp; nil when
	// Options.DisableMCP.
	MCP *mcp.Server
	// KubeAPI serves each member's Kubernetes API, read-only, from the
	// index at /clusters/{cluster}/…, with /graphql's callers and rights.
	KubeAPI *kubeapi.Server
	// Audit writes the audit log; it writes nothing unless
	// Options.Audit.Path is set.
	Audit *audit.Log
	// Metrics holds every metric of this aggregator, served at /metrics.
	Metrics *prometheus.Registry
	// Handler serves the HTTP API (see routes).
	Handler http.Handler

	// fleet runs Registry's clusters; Start runs what they share.
	fleet *informers.Fleet
	// snapshot keeps the index for warm starts; nil without one.
	snapshot *warmStart
}

// New assembles an Aggregator with no cluster registered yet. Run fills in
// the defaults of opts first; New takes them as they are (a nil Profiling
// serves no profiles).
func New(opts Options) (*Aggregator, error) {
	reg := prometheus.NewRegistry()
	// The informers record their types' printers in a table that the
	// API reads: the one the informers' options bring, or a new one. The
	// objects of a warm start are compressed as theirs are.
	infOpts := opts.Informers
	if infOpts.Columns == nil {
		infOpts.Columns = new(columns.Types)
	}
	if infOpts.Codecs == nil {
		infOpts.Codecs = new(compact.Codecs)
	}
	ix := index.New(opts.Index)
	snap, err := openSnapshot(opts, reg, ix, infOpts.Codecs, klog.Background())
	if err != nil {
		return nil, err
	}
	tr := health.NewTracker(ix, opts.Health)
	if snap != nil {
		snap.attach(tr)
		infOpts.Restored, infOpts.Loading = snap.take, snap
	}
	printers := infOpts.Columns
	// The informers tell the follower of the schemas which types each
	// cluster caches; the API builds a type per kind from what it follows.
	schemas := openapi.New(opts.Schemas)
	infOpts.Schemas = schemas
	infOpts.Registerer = reg
	fleet, err := informers.NewFleet(ix, tr, infOpts)
	if err != nil {
		return nil, fmt.Errorf("informers: %w", err)
	}
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		health.NewCollector(tr),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "fleetcache_index_memory_budget_bytes",
			Help: "The index's memory budget (limits.memoryBudget); 0 when there is none."},
			func() float64 { return float64(ix.Budget().Budget) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "fleetcache_index_estimated_bytes",
			Help: "What the index holds as its memory budget counts it: about 0.7 KB per object plus the object's stored body."},
			func() float64 { return float64(ix.Budget().Used) }))
	registry := clusters.NewRegistry(fleet, clusters.Options{})
	inv := inventory.NewStore()
	gqlOpts, trOpts := opts.GraphQL, opts.Transport
	gqlOpts.Registerer, trOpts.Registerer = reg, reg
	gqlOpts.Inventory, gqlOpts.Columns, gqlOpts.Kinds = inv, printers, schemas
	gqlOpts.Process = processStatus(ix, fleet)
	trOpts.AllowedOrigins = opts.CORSAllowedOrigins
	trOpts.BrowserPage, trOpts.IsBrowserAsset = browserPage()
	auth, err := opts.Auth.build(registry)
	if err != nil {
		return nil, err
	}
	if auth.authn != nil {
		trOpts.Authenticator, gqlOpts.Authorizer = auth.authn, auth.authz
		trOpts.Impersonator = auth.impersonator
	}
	auditLog, err := audit.New(opts.Audit)
	if err != nil {
		return nil, err
	}
	api, err := graphql.New(views.Of(ix), tr, gqlOpts)
	if err != nil {
		return nil, fmt.Errorf("graphql: %w", err)
	}
	tp, err := transport.New(api, trOpts)
	if err != nil {
		return nil, fmt.Errorf("graphql transports: %w", err)
	}
	var assistants *mcp.Server
	if !opts.DisableMCP {
		if assistants, err = mcp.New(api, opts.MCP); err != nil {
			return nil, fmt.Errorf("mcp: %w", err)
		}
	}
	kubeOpts := opts.KubeAPI
	kubeOpts.Columns, kubeOpts.Inventory = printers, inv
	if auth.authz != nil {
		kubeOpts.Authorizer = auth.authz
	}
	a := &Aggregator{
		KubeAPI:   kubeapi.New(ix, registry, tr, kubeOpts),
		Index:     ix,
		Health:    tr,
		Registry:  registry,
		Inventory: inv,
		Columns:   printers,
		API:       api,
		Transport: tp,
		MCP:       assistants,
		Audit:     auditLog,
		Metrics:   reg,
		fleet:     fleet,
		snapshot:  snap,
	}
	var operators func(http.Handler) http.Handler
	if auth.authn != nil {
		operators = operatorsOnly(auth.authn, auth.home, klog.Background())
	}
	a.Handler = a.routes(opts, operators)
	return a, nil
}

// Start runs the registered clusters (and those registered later) and the
// API's subscriptions until ctx ends, then waits for all of them to stop.
func (a *Aggregator) Start(ctx context.Context) error {
	var wg sync.WaitGroup
	var apiErr, transportErr, fleetErr error
	var snapErr error
	if a.snapshot != nil {
		// While the clusters start: they write nothing to the index,
		// and the API answers nothing, until it ends.
		wg.Go(func() { a.snapshot.load(ctx, a.Health) })
		wg.Go(func() { snapErr = a.snapshot.run(ctx, a.Index, a.Registry, a.fleet.ForgetCluster) })
	}
	wg.Go(func() { apiErr = a.API.Start(ctx) })
	wg.Go(func() { transportErr = a.Transport.Start(ctx) })
	wg.Go(func() { fleetErr = a.fleet.Start(ctx) })
	wg.Go(func() {
		if a.WaitLoaded(ctx) == nil {
			pruneTombstones(ctx, a.Index)
		}
	})
	regErr := a.Registry.Start(ctx)
	wg.Wait()
	// Requests still served after this are not audited.
	auditErr := a.Audit.Close()
	return errors.Join(regErr, apiErr, transportErr, fleetErr, snapErr, auditErr)
}

// WaitLoaded waits until the index holds what the snapshot kept (Start
// loads it while the clusters start), or ctx ends. Without a snapshot it
// returns at once. After a load that failed, the index is empty: a cold
// start.
func (a *Aggregator) WaitLoaded(ctx context.Context) error {
	if a.snapshot == nil {
		return nil
	}
	return a.snapshot.wait(ctx)
}

// tombstonePruning is how often the index drops the tombs that aged out:
// a quiet index makes no new ones, which would prune them.
const tombstonePruning = time.Minute

// pruneTombstones prunes ix's tombs every tombstonePruning until ctx ends.
func pruneTombstones(ctx context.Context, ix *index.Index) {
	t := time.NewTicker(tombstonePruning)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			ix.PruneTombstones(now)
		}
	}
}

// Run registers the clusters of every configured source, serves HTTP on
// opts.Addr and returns when ctx ends, after the server and every cluster
// have stopped. Contexts of kubeconfig files that fail to load are logged and
// left out; a file that cannot be read, or no cluster from the files when no
// live source is set, is an error.
//
// When ctx ends, Run stops accepting connections, ends subscriptions (their
// WebSockets close with 1001 going away), stops the informers and returns
// within opts.ShutdownTimeout.
func Run(ctx context.Context, opts Options) error {
	opts, err := opts.withDefaults()
	if err != nil {
		return err
	}
	logger := klog.FromContext(ctx)
	// Before the caches fill: the collector then keeps the heap, and so the
	// RSS, under the container's limit rather than at twice the live heap.
	applyMemoryLimit(logger)
	agg, err := New(opts)
	if err != nil {
		return err
	}
	live, err := registerClusters(logger, agg, opts)
	if err != nil {
		return err
	}
	srv, err := listen(agg.Handler, opts, logger)
	if err != nil {
		return err
	}
	logger.Info("Serving", "addr", srv.ln.Addr().String(), "tls", srv.http.TLSConfig != nil, "clusters", agg.Registry.Names())
	if opts.Auth.Authn == "" || opts.Auth.Authn == AuthnNone {
		logger.Info("WARNING: AUTHENTICATION IS OFF (--authn=none): every caller sees every object of every cluster; use it only on loopback")
	}
	return runUntilDone(ctx, logger, agg, srv, live, opts.ShutdownTimeout)
}

// applyMemoryLimit sets Go's memory limit from the container's, and logs
// what it found.
func applyMemoryLimit(logger klog.Logger) {
	if d, err := memlimit.Apply(); err != nil {
		logger.Error(err, "Go memory limit not set from the container's")
	} else if d.Source == "" {
		logger.Info("No Go memory limit: no container memory limit found and GOMEMLIMIT unset")
	} else {
		logger.Info("Go memory limit", "bytes", d.Limit, "source", d.Source, "containerLimit", d.ContainerLimit)
	}
}

// registerClusters registers the clusters of the kubeconfig files in
// agg.Registry and returns the Start functions of the live sources (the
// kubeconfig directory, the cluster Secrets) that opts configure.
func registerClusters(logger klog.Logger, agg *Aggregator, opts Options) ([]func(context.Context) error, error) {
	sources := clusters.NewSources(agg.Registry, agg.Health, clusters.SourcesOptions{Inventory: agg.Inventory, Labels: opts.ClusterLabels})
	static, err := kubeconfigClusters(logger, opts)
	if err != nil {
		return nil, err
	}
	if err := sources.Set("kubeconfig files", static, nil); err != nil {
		logger.Error(err, "Some clusters were not registered")
	}
	var live []func(context.Context) error
	if opts.KubeconfigDir != "" {
		live = append(live, clusters.NewDirSource(opts.KubeconfigDir, opts.DirInterval, sources).Start)
	}
	if opts.ClusterSecretsNamespace != "" {
		src, err := secretSource(opts, sources)
		if err != nil {
			return nil, err
		}
		live = append(live, src.Start)
	}
	more, err := inventorySources(opts, sources)
	if err != nil {
		return nil, err
	}
	return append(live, more...), nil
}

// inventorySources returns the Start functions of the inventory sources
// that opts enable, each connected to the cluster holding its objects.
func inventorySources(opts Options, sink clusters.SetSink) ([]func(context.Context) error, error) {
	var live []func(context.Context) error
	if o := opts.ClusterProfiles; o.Enabled {
		providers, err := clusters.LoadProviders(o.ProvidersFile)
		if err != nil {
			return nil, fmt.Errorf("clusterprofiles: %w", err)
		}
		cfg, err := hubConfig(o.Kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("clusterprofiles: reach the cluster holding them: %w", err)
		}
		client, err := dynamic.NewForConfig(cfg)
		if err != nil {
			return nil, fmt.Errorf("clusterprofiles: %w", err)
		}
		src, err := clusters.NewProfileSource(client, clusters.ProfileOptions{Namespace: o.Namespace, Providers: providers}, sink)
		if err != nil {
			return nil, err
		}
		live = append(live, src.Start)
	}
	for _, s := range []struct {
		what  string
		o     InventorySourceOptions
		start func(kubernetes.Interface) func(context.Context) error
	}{
		{"cluster api secrets", opts.ClusterAPI, func(c kubernetes.Interface) func(context.Context) error {
			return clusters.NewCAPISource(c, clusters.CAPIOptions{Namespace: opts.ClusterAPI.Namespace, AllowExecPlugins: opts.ClusterAPI.AllowExecPlugins}, sink).Start
		}},
		{"argo cd cluster secrets", opts.ArgoCD, func(c kubernetes.Interface) func(context.Context) error {
			return clusters.NewArgoCDSource(c, clusters.ArgoCDOptions{Namespace: opts.ArgoCD.Namespace, AllowExecPlugins: opts.ArgoCD.AllowExecPlugins}, sink).Start
		}},
	} {
		if !s.o.Enabled {
			continue
		}
		cfg, err := hubConfig(s.o.Kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("%s: reach the cluster holding them: %w", s.what, err)
		}
		client, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.what, err)
		}
		live = append(live, s.start(client))
	}
	return live, nil
}

// hubConfig reaches the cluster that holds an inventory: through the
// current context of kubeconfig, or in-cluster when it is "".
func hubConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		return rest.InClusterConfig()
	}
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: kubeconfig}, nil).ClientConfig()
}

// server is the HTTP server of Run, its listener and, with TLS, the
// reloader of its certificate.
type server struct {
	http  *http.Server
	ln    net.Listener
	certs *servingcert.Reloader // nil without TLS
}

// listen loads the TLS certificate, if opts name one, and listens on
// opts.Addr for handler, or takes opts.Listener.
func listen(handler http.Handler, opts Options, logger klog.Logger) (*server, error) {
	s := &server{http: &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}}
	if opts.TLSCertFile != "" || opts.TLSPrivateKeyFile != "" {
		var err error
		s.certs, err = servingcert.New(opts.TLSCertFile, opts.TLSPrivateKeyFile, opts.TLSReloadInterval, logger)
		if err != nil {
			return nil, err
		}
		s.http.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: s.certs.GetCertificate}
	}
	s.ln = opts.Listener
	if s.ln == nil {
		ln, err := net.Listen("tcp", opts.Addr)
		if err != nil {
			return nil, fmt.Errorf("listen on %s: %w", opts.Addr, err)
		}
		s.ln = ln
	}
	return s, nil
}

// runUntilDone runs the clusters and the API, the live cluster sources, the
// certificate reloader and the HTTP server until ctx ends or the server
// fails, then stops the server within timeout and waits for all of them.
func runUntilDone(ctx context.Context, logger klog.Logger, agg *Aggregator, srv *server, live []func(context.Context) error, timeout time.Duration) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var regErr, srvErr error
	wg.Go(func() { regErr = agg.Start(ctx) })
	for _, start := range live {
		wg.Go(func() {
			if err := start(ctx); err != nil {
				logger.Error(err, "Cluster source stopped")
			}
		})
	}
	if srv.certs != nil {
		wg.Go(func() { _ = srv.certs.Start(ctx) }) // ends with ctx, without error
	}
	wg.Go(func() {
		if err := serve(srv.http, srv.ln); !errors.Is(err, http.ErrServerClosed) {
			srvErr = fmt.Errorf("serve http: %w", err)
			cancel()
		}
	})
	<-ctx.Done()
	srv.shutdown(ctx, logger, timeout)
	wg.Wait()
	return errors.Join(srvErr, regErr)
}

// shutdown stops the server accepting at once and waits, within timeout,
// for plain requests to end; the hijacked WebSockets and the event streams
// end as Aggregator.Start stops the API. ctx has ended: only its values
// are used.
func (s *server) shutdown(ctx context.Context, logger klog.Logger, timeout time.Duration) {
	logger.Info("Shutting down", "timeout", timeout)
	shutdownCtx, stop := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer stop()
	if err := s.http.Shutdown(shutdownCtx); err != nil {
		logger.Error(err, "HTTP server shutdown")
		_ = s.http.Close()
	}
}

// kubeconfigClusters loads the clusters of opts.Kubeconfigs.
func kubeconfigClusters(logger klog.Logger, opts Options) ([]clusters.Cluster, error) {
	var out []clusters.Cluster
	for _, path := range opts.Kubeconfigs {
		cs, err := clusters.FromKubeconfig(path, opts.Contexts...)
		if len(cs) == 0 {
			return nil, fmt.Errorf("no cluster to register from %s: %w", path, err)
		}
		if err != nil {
			logger.Error(err, "Some contexts were left out", "kubeconfig", path)
		}
		out = append(out, cs...)
	}
	return out, nil
}

// secretSource connects to the cluster holding the cluster Secrets.
func secretSource(opts Options, sink clusters.SetSink) (*clusters.SecretSource, error) {
	cfg, err := hubConfig(opts.ClusterSecretsKubeconfig)
	if err != nil {
		return nil, fmt.Errorf("cluster secrets: reach the cluster holding them: %w", err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("cluster secrets: %w", err)
	}
	return clusters.NewSecretSource(client, opts.ClusterSecretsNamespace, sink)
}
