package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/klog/v2"

	aggregator "github.com/fleetcache/fleetcache/internal/app" // the demo names its Deployments "app"
	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/informers"
)

const (
	// serveTimeout bounds the wait for the aggregator's HTTP server.
	serveTimeout = 30 * time.Second
	// syncTimeout bounds the wait for every cluster to be SYNCED before the
	// banner is printed anyway.
	syncTimeout = 2 * time.Minute
	// pollInterval is the pause between two readiness probes of the aggregator.
	pollInterval = 100 * time.Millisecond
)

// Options configure Run.
type Options struct {
	// Addr is where the aggregator serves HTTP. Default 127.0.0.1:8080.
	Addr string
	// Kubeconfig is where the kubeconfig of the demo clusters (one context
	// per cluster, user admin) is written, for kubectl; it is removed when
	// Run returns, as the clusters are gone then. Default: a file in a
	// temporary directory.
	Kubeconfig string
	// FleetKubeconfig is the kubeconfig file where the demo writes the
	// context named "fleetcache" (its cluster and user too), whose server is
	// the aggregator, so that `kubectl fleet` finds it as written in the
	// README; they are removed when Run returns. A "fleetcache" context
	// that points elsewhere is left alone, and the banner names --server
	// instead. Default: kubectl's (the first file of $KUBECONFIG, else
	// ~/.kube/config); "-" writes none.
	FleetKubeconfig string
	// ChurnInterval is the pause between two changes of the churn. Default 1s.
	ChurnInterval time.Duration
	// Out receives the URLs and hints for the person running the demo.
	// Default os.Stdout.
	Out io.Writer
}

func (o Options) withDefaults() Options {
	if o.Addr == "" {
		o.Addr = "127.0.0.1:8080"
	}
	if o.ChurnInterval <= 0 {
		o.ChurnInterval = time.Second
	}
	if o.Out == nil {
		o.Out = os.Stdout
	}
	return o
}

// Run starts the demo clusters, seeds them, runs the aggregator against them
// on opts.Addr, prints where to look and churns until ctx ends. It then stops
// the aggregator and the clusters and returns nil, also when ctx ends during
// start-up; it returns an error if something fails before, or the
// aggregator fails.
func Run(ctx context.Context, opts Options) error {
	opts = opts.withDefaults()
	// Fail before the clusters take their seconds to start if the address is
	// taken (by an earlier demo, most likely), and keep it for the
	// aggregator: a port left free for those seconds can be taken, by a
	// client's connection as well as by a server.
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s (choose another address): %w", opts.Addr, err)
	}
	defer ln.Close() // the aggregator closes it too, when it got that far
	begin := time.Now()
	fmt.Fprintf(opts.Out, "Starting %d clusters: etcd and %d kube-apiservers on 127.0.0.1 …\n", len(plans), len(plans))
	env, err := testcluster.Start(ctx, testcluster.Options{Clusters: len(plans), Users: []string{}})
	if err != nil {
		return unlessStopped(ctx, fmt.Errorf("start clusters: %w", err))
	}
	defer env.Stop()

	members := make([]*member, len(plans))
	for i, c := range env.Clusters() {
		if members[i], err = newMember(plans[i], c.AdminConfig()); err != nil {
			return err
		}
		// Close the clients' connections before the servers stop, so that
		// none of their goroutines outlives Run.
		defer members[i].http.CloseIdleConnections()
	}
	started := time.Now()
	if err := seed(ctx, members); err != nil {
		return unlessStopped(ctx, err)
	}
	seeded := time.Since(started)

	kubeconfig, cleanup, err := writeKubeconfig(opts.Kubeconfig, members)
	if err != nil {
		return err
	}
	defer cleanup()

	resources := append(slices.Clone(informers.DefaultResources), WidgetResource)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var aggErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		aggErr = aggregator.Run(ctx, aggregator.Options{
			Kubeconfigs: []string{kubeconfig},
			Addr:        opts.Addr,
			Listener:    ln,
			Informers:   informers.Options{Resources: resources},
		})
		cancel() // the aggregator failed (or ctx ended): end the demo
	}()
	defer func() { cancel(); <-done }()

	fleetContext, removeContext := addFleetContext(ctx, opts.FleetKubeconfig, "http://"+displayAddr(opts.Addr))
	defer removeContext()

	probe := &http.Client{Transport: &http.Transport{}} // no proxy: the aggregator is local
	defer probe.CloseIdleConnections()
	base := "http://" + displayAddr(opts.Addr)
	if err := waitServing(ctx, probe, base, done); err != nil {
		cancel()
		<-done
		if aggErr != nil {
			return fmt.Errorf("aggregator: %w", aggErr)
		}
		return unlessStopped(ctx, err)
	}
	cached, err := waitSynced(ctx, probe, base)
	if err != nil {
		klog.FromContext(ctx).Info("Not every cluster is SYNCED yet; see the status page", "err", err)
	}
	var objects int64
	for _, m := range members {
		objects += m.created.Load()
	}
	printBanner(opts.Out, bannerInfo{
		base: base, kubeconfig: kubeconfig, seeded: objects, cached: cached,
		seedTime: seeded, readyTime: time.Since(begin), churn: opts.ChurnInterval, fleetContext: fleetContext,
	})

	churn(ctx, members, opts.ChurnInterval)
	cancel()
	<-done
	fmt.Fprintln(opts.Out, "Stopping the aggregator and the clusters …")
	if aggErr != nil {
		return fmt.Errorf("aggregator: %w", aggErr)
	}
	return nil
}

// unlessStopped returns nil for an error that came from ctx ending: stopping
// the demo while it starts is not a failure.
func unlessStopped(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// seed seeds every cluster, concurrently.
func seed(ctx context.Context, members []*member) error {
	errs := make([]error, len(members))
	var wg sync.WaitGroup
	for i, m := range members {
		wg.Go(func() { errs[i] = m.seed(ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// writeKubeconfig writes a kubeconfig with one context per demo cluster,
// named after it, to path (a file in a new temporary directory if path is
// empty). cleanup removes what it wrote.
func writeKubeconfig(path string, members []*member) (string, func(), error) {
	cleanup := func() { _ = os.Remove(path) }
	if path == "" {
		dir, err := os.MkdirTemp("", "fleetcache-demo-")
		if err != nil {
			return "", nil, fmt.Errorf("create kubeconfig dir: %w", err)
		}
		path = filepath.Join(dir, "kubeconfig")
		cleanup = func() { _ = os.RemoveAll(dir) }
	}
	cfg := clientcmdapi.NewConfig()
	for _, m := range members {
		name := m.plan.name
		cfg.Clusters[name] = &clientcmdapi.Cluster{Server: m.config.Host, CertificateAuthorityData: m.config.CAData}
		cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: m.config.BearerToken}
		cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	}
	cfg.CurrentContext = members[0].plan.name
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return path, cleanup, nil
}

// FleetContext is the name of the kubeconfig context, cluster and user that
// the demo writes for kubectl fleet, the name kubectl fleet looks for first.
const FleetContext = "fleetcache"

// addFleetContext adds the context FleetContext, with a cluster and user of
// that name, whose server is server, to the kubeconfig file path (kubectl's
// default file when ""; none when "-"). It returns what the banner says of
// it and a function that removes what it added, if it is still there. A
// context of that name that names another server is left as it is: the
// banner then says to pass --server.
func addFleetContext(ctx context.Context, path, server string) (string, func()) {
	logger := klog.FromContext(ctx)
	noContext := "no kubeconfig context: add --server " + server
	if path == "-" {
		return noContext, func() {}
	}
	po := clientcmd.NewDefaultPathOptions()
	if path != "" {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			if err := clientcmd.WriteToFile(*clientcmdapi.NewConfig(), path); err != nil {
				logger.Info("Cannot create the kubeconfig for the fleetcache context", "err", err)
				return noContext, func() {}
			}
		}
		po.LoadingRules.ExplicitPath = path
		po.GlobalFile = path
		po.EnvVar = ""
	}
	cfg, err := po.GetStartingConfig()
	if err != nil {
		logger.Info("Cannot read the kubeconfig to add the fleetcache context", "err", err)
		return noContext, func() {}
	}
	if c, ok := cfg.Contexts[FleetContext]; ok {
		if cl, ok := cfg.Clusters[c.Cluster]; !ok || cl.Server != server {
			return fmt.Sprintf("the context %q of your kubeconfig is another server's: add --server %s", FleetContext, server), func() {}
		}
	}
	cfg.Clusters[FleetContext] = &clientcmdapi.Cluster{Server: server}
	cfg.AuthInfos[FleetContext] = &clientcmdapi.AuthInfo{}
	cfg.Contexts[FleetContext] = &clientcmdapi.Context{Cluster: FleetContext, AuthInfo: FleetContext}
	if err := clientcmd.ModifyConfig(po, *cfg, false); err != nil {
		logger.Info("Cannot add the fleetcache context to the kubeconfig", "err", err)
		return noContext, func() {}
	}
	file := po.GetDefaultFilename()
	if path != "" {
		file = path
	}
	return fmt.Sprintf("context %q, added to %s until the demo stops", FleetContext, file), func() {
		cfg, err := po.GetStartingConfig()
		if err != nil {
			return
		}
		if cl, ok := cfg.Clusters[FleetContext]; !ok || cl.Server != server {
			return // someone else's by now
		}
		delete(cfg.Clusters, FleetContext)
		delete(cfg.AuthInfos, FleetContext)
		delete(cfg.Contexts, FleetContext)
		if err := clientcmd.ModifyConfig(po, *cfg, false); err != nil {
			logger.Info("Cannot remove the fleetcache context from the kubeconfig", "err", err)
		}
	}
}

// displayAddr is addr as a browser on this machine reaches it.
func displayAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// waitServing polls the aggregator's /healthz until it answers, the
// aggregator ends (done closes) or serveTimeout passes.
func waitServing(ctx context.Context, client *http.Client, base string, done <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, serveTimeout)
	defer cancel()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/healthz", nil)
		if err != nil {
			return fmt.Errorf("probe aggregator: %w", err)
		}
		resp, err := client.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("status %s", resp.Status)
		}
		select {
		case <-done:
			return errors.New("aggregator stopped")
		case <-ctx.Done():
			return fmt.Errorf("aggregator not serving at %s: %w (last probe: %v)", base, ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// clustersQuery asks for what waitSynced needs.
const clustersQuery = `{ clusters { name status objectCount } }`

// waitSynced polls the GraphQL API until every demo cluster is SYNCED and
// returns how many objects the aggregator then caches.
func waitSynced(ctx context.Context, client *http.Client, base string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		var answer struct {
			Data struct {
				Clusters []struct {
					Name, Status string
					ObjectCount  int
				}
			}
		}
		err := postQuery(ctx, client, base, clustersQuery, &answer)
		synced, objects := 0, 0
		var states []string
		for _, c := range answer.Data.Clusters {
			objects += c.ObjectCount
			states = append(states, c.Name+"="+c.Status)
			if c.Status == "SYNCED" {
				synced++
			}
		}
		if err == nil && synced == len(plans) {
			return objects, nil
		}
		select {
		case <-ctx.Done():
			return objects, fmt.Errorf("clusters not SYNCED: %w (last seen: %s; %v)", ctx.Err(), strings.Join(states, ", "), err)
		case <-tick.C:
		}
	}
}

// postQuery sends a GraphQL query and decodes the JSON answer into out.
func postQuery(ctx context.Context, client *http.Client, base, query string, out any) error {
	body, err := json.Marshal(map[string]string{"query": query})
	if err != nil {
		return fmt.Errorf("encode query: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/graphql", bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("query: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("query: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("query: status %s", resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("query: decode answer: %w", err)
	}
	return nil
}

// bannerInfo is what printBanner shows.
type bannerInfo struct {
	base, kubeconfig    string
	seeded              int64
	cached              int
	seedTime, readyTime time.Duration
	churn               time.Duration
	// fleetContext says where the "fleetcache" context is, or how to
	// reach the aggregator without it.
	fleetContext string
}

// ExampleQuery is the query the banner suggests for GraphiQL: Pods per
// cluster, and a Deployment with its ReplicaSets and their Pods.
const ExampleQuery = `{
  facets(by: CLUSTER, filter: {kinds: ["Pod"]}) { value count }
  resource(cluster: "prod-eu", kind: "Deployment.apps", namespace: "payments", name: "api") {
    name
    children { kind name labels children { kind name object } }
  }
}`

// printBanner tells the person running the demo where to look.
func printBanner(w io.Writer, b bannerInfo) {
	names := make([]string, len(plans))
	for i, p := range plans {
		names[i] = p.name
	}
	fmt.Fprintf(w, `
fleetcache demo is up (%s): %d clusters (%s), %d objects seeded in %s, %d cached.

  GraphiQL     %s/graphql
  MCP          %s/mcp (for AI assistants: docs/mcp.md)
  Status page  %s/
  Metrics      %s/metrics
  kubectl      kubectl --kubeconfig %s --context prod-eu get deploy,rs,pods -n payments
  kubectl fleet  kubectl fleet get pods -A      (%s;
                 the plugin: go install ./cmd/kubectl-fleet, with $(go env GOPATH)/bin on $PATH)

Try in GraphiQL:

%s

Live: every %s a Pod comes or goes, a ConfigMap gets a new config-version label, or a
Widget is created or deleted. Follow it over Server-Sent Events:

  curl -N -H 'Accept: text/event-stream' -H 'Content-Type: application/json' %s/graphql \
    -d '{"query":"subscription { resourceEvents { type resource { cluster kind namespace name } } }"}'

Ctrl-C stops the aggregator and the clusters.
`,
		b.readyTime.Round(100*time.Millisecond), len(plans), strings.Join(names, ", "), b.seeded, b.seedTime.Round(10*time.Millisecond), b.cached,
		b.base, b.base, b.base, b.base, b.kubeconfig, b.fleetContext, indent(ExampleQuery, "  "), b.churn, b.base)
}

func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix)
}
