package app

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/fleetcache/fleetcache/pkg/audit"
	"github.com/fleetcache/fleetcache/pkg/authn"
	"github.com/fleetcache/fleetcache/pkg/authz"
	"github.com/fleetcache/fleetcache/pkg/fanout"
	"github.com/fleetcache/fleetcache/pkg/graphql"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/informers"
	"github.com/fleetcache/fleetcache/pkg/mcp"
	"github.com/fleetcache/fleetcache/pkg/openapi"
	"github.com/fleetcache/fleetcache/pkg/transport"
	"github.com/fleetcache/fleetcache/pkg/warmstart"
)

// flagDef is one command-line flag and the Config field it sets.
type flagDef struct {
	name, usage string
	// bind returns the Config field the flag sets: a *string, *int,
	// *int64, *float64, *bool, *time.Duration, *[]string (comma-separated,
	// repeatable), repeated (repeatable, not split) or **bool (unset means
	// the default).
	bind func(*Config) any
}

var flagDefs = []flagDef{
	{"kubeconfig", "kubeconfig file whose contexts are clusters (repeatable; default $KUBECONFIG or ~/.kube/config when no cluster source is set)",
		func(c *Config) any { return repeated{&c.Kubeconfigs} }},
	{"contexts", "comma-separated contexts of the kubeconfig files to register (default all)",
		func(c *Config) any { return &c.Contexts }},
	{"kubeconfig-dir", "directory of kubeconfig files, followed live",
		func(c *Config) any { return &c.KubeconfigDir }},
	{"cluster-secrets-namespace", "namespace whose Secrets labelled fleetcache.io/cluster=true register clusters, followed live",
		func(c *Config) any { return &c.ClusterSecrets.Namespace }},
	{"cluster-secrets-kubeconfig", "kubeconfig of the cluster holding the cluster Secrets (default in-cluster)",
		func(c *Config) any { return &c.ClusterSecrets.Kubeconfig }},
	{"cluster-profiles", "register the clusters of ClusterProfiles (multicluster.x-k8s.io), followed live; needs --cluster-profiles-providers-file",
		func(c *Config) any { return &c.ClusterProfiles.Enabled }},
	{"cluster-profiles-providers-file", "KEP-5339 providers file mapping the profiles' access providers to exec plugins",
		func(c *Config) any { return &c.ClusterProfiles.ProvidersFile }},
	{"cluster-profiles-namespace", "namespace of the ClusterProfiles (default every namespace)",
		func(c *Config) any { return &c.ClusterProfiles.Namespace }},
	{"cluster-profiles-kubeconfig", "kubeconfig of the hub cluster holding the ClusterProfiles (default in-cluster)",
		func(c *Config) any { return &c.ClusterProfiles.Kubeconfig }},
	{"cluster-api", "register Cluster API's workload clusters from their <cluster>-kubeconfig Secrets, followed live",
		func(c *Config) any { return &c.ClusterAPI.Enabled }},
	{"cluster-api-namespace", "namespace of the Cluster API Secrets (default every namespace)",
		func(c *Config) any { return &c.ClusterAPI.Namespace }},
	{"cluster-api-kubeconfig", "kubeconfig of the management cluster holding the Cluster API Secrets (default in-cluster)",
		func(c *Config) any { return &c.ClusterAPI.Kubeconfig }},
	{"cluster-api-allow-exec-plugins", "accept exec credential plugins in Cluster API kubeconfig Secrets: whoever may write them may run commands in fleetcache's container",
		func(c *Config) any { return &c.ClusterAPI.AllowExecPlugins }},
	{"argocd", "register the clusters of Argo CD's cluster Secrets, followed live",
		func(c *Config) any { return &c.ArgoCD.Enabled }},
	{"argocd-namespace", "namespace of Argo CD's cluster Secrets, commonly argocd (default every namespace)",
		func(c *Config) any { return &c.ArgoCD.Namespace }},
	{"argocd-kubeconfig", "kubeconfig of the cluster holding Argo CD's Secrets (default in-cluster)",
		func(c *Config) any { return &c.ArgoCD.Kubeconfig }},
	{"argocd-allow-exec-plugins", "accept execProviderConfig in Argo CD cluster Secrets: whoever may write them may run commands in fleetcache's container",
		func(c *Config) any { return &c.ArgoCD.AllowExecPlugins }},
	{"resources", withDefault("comma-separated resource types, kubectl names such as pods,deployments.apps", strings.Join(informers.DefaultResources, ",")),
		func(c *Config) any { return &c.Resources }},
	{"snapshot-dir", "directory, on a volume that survives restarts, where the index is kept so that a restart serves at once and resumes each watch instead of listing (default none: every start is cold)",
		func(c *Config) any { return &c.Snapshot.Dir }},
	{"snapshot-interval", withDefault("how often what changed is written to --snapshot-dir: a crash loses at most this much of the snapshot, which the watches then catch up on", warmstart.DefaultOptions().Interval),
		func(c *Config) any { return &c.Snapshot.Interval.Duration }},
	{"watch-timeout", "longest watch request to the member API servers; set it below the idle timeout of a proxy in between (default client-go's 5 to 10 minutes)",
		func(c *Config) any { return &c.WatchTimeout.Duration }},
	{"streaming-lists", "list each type by a streaming watch (WatchList) instead of a plain list from the API server's watch cache (default false: plain lists cost the servers less)",
		func(c *Config) any { return &c.StreamingLists }},
	{"max-concurrent-lists", "lists (initial lists and relists) running at once across all clusters; the others wait their turn, PENDING (default twice the CPUs, at least 4)",
		func(c *Config) any { return &c.MaxConcurrentLists }},
	{"member-qps", withDefault("requests per second to each member cluster (lists, watches, discovery; probes are not limited)", informers.DefaultOptions().ClientQPS),
		func(c *Config) any { return &c.MemberQPS }},
	{"member-burst", withDefault("burst of requests to each member cluster", informers.DefaultOptions().ClientBurst),
		func(c *Config) any { return &c.MemberBurst }},
	{"disconnect-after", withDefault("how long a member API server may leave probes unanswered (timeouts) before it is DISCONNECTED; refused connections count at once", informers.DefaultOptions().DisconnectAfter),
		func(c *Config) any { return &c.DisconnectAfter.Duration }},
	{"openapi-interval", withDefault("how often each member's /openapi/v3 is read for the typed GraphQL schema: a CRD added, changed or removed reaches the schema within about that long", openapi.DefaultOptions().Interval),
		func(c *Config) any { return &c.OpenAPIInterval.Duration }},
	{"addr", withDefault("HTTP listen address", DefaultAddr),
		func(c *Config) any { return &c.Addr }},
	{"readyz-exclude", "comma-separated clusters whose initial sync /readyz does not wait for",
		func(c *Config) any { return &c.Readyz.Exclude }},
	{"default-page-size", withDefault("default of resources(first:)", graphql.DefaultOptions().DefaultPageSize),
		func(c *Config) any { return &c.Limits.DefaultPageSize }},
	{"max-page-size", withDefault("largest resources(first:)", graphql.DefaultOptions().MaxPageSize),
		func(c *Config) any { return &c.Limits.MaxPageSize }},
	{"max-depth", withDefault("deepest selection nesting of a GraphQL document", graphql.DefaultOptions().MaxDepth),
		func(c *Config) any { return &c.Limits.MaxDepth }},
	{"max-body-bytes", withDefault("largest request body", transport.DefaultOptions().MaxBodyBytes),
		func(c *Config) any { return &c.Limits.MaxBodyBytes }},
	{"max-cost", withDefault("most objects one GraphQL operation's answer (a subscription's: each event's) may hold, computed before it runs", graphql.DefaultOptions().MaxCost),
		func(c *Config) any { return &c.Limits.MaxCost }},
	{"max-response-bytes", withDefault("largest encoded answer (or subscription event); larger ones are abandoned with RESPONSE_TOO_LARGE", graphql.DefaultOptions().MaxResponseBytes),
		func(c *Config) any { return &c.Limits.MaxResponseBytes }},
	{"request-timeout", withDefault("time limit of one GraphQL request", graphql.DefaultOptions().Timeout),
		func(c *Config) any { return &c.Limits.RequestTimeout.Duration }},
	{"subscription-buffer", withDefault("events that may wait for one subscription before it is ended as a slow consumer", fanout.DefaultOptions().Buffer),
		func(c *Config) any { return &c.Limits.SubscriptionBuffer }},
	{"max-subscriptions-per-connection", withDefault("operations one WebSocket may run at once", transport.DefaultOptions().MaxSubscriptionsPerConnection),
		func(c *Config) any { return &c.Limits.MaxSubscriptionsPerConnection }},
	{"max-connections-per-address", withDefault("WebSocket and SSE connections one client address may hold", transport.DefaultOptions().MaxConnectionsPerAddress),
		func(c *Config) any { return &c.Limits.MaxConnectionsPerAddress }},
	{"event-retention", withDefault("changes the index keeps, for the changes query and for subscriptions to resume from", index.DefaultOptions().Retention),
		func(c *Config) any { return &c.Limits.EventRetention }},
	{"event-retention-age", withDefault("how long the index keeps a change, at most (older ones are dropped as new ones come)", index.DefaultOptions().RetentionAge),
		func(c *Config) any { return &c.Limits.EventRetentionAge.Duration }},
	{"status-history", withDefault("how long each cluster's status history (its timeline on the status page, Cluster.history) reaches back", health.DefaultOptions().HistoryWindow),
		func(c *Config) any { return &c.Limits.StatusHistory.Duration }},
	{"tombstone-retention", withDefault("how long deleted objects are remembered, so that a cursor from before a deletion resumes on any replica", index.DefaultOptions().TombstoneRetention),
		func(c *Config) any { return &c.Limits.TombstoneRetention.Duration }},
	{"max-tombstones", withDefault("deleted objects remembered at most for --tombstone-retention, the oldest going first", index.DefaultOptions().MaxTombstones),
		func(c *Config) any { return &c.Limits.MaxTombstones }},
	{"memory-budget", "bytes the index may hold, as it estimates them (about 0.7 KB per object plus its compressed body); above three quarters, objects are cached without their body, at the budget new objects are refused (default 0: no budget)",
		func(c *Config) any { return &c.Limits.MemoryBudget }},
	{"tls-cert-file", "PEM certificate (chain) to serve HTTPS with; needs --tls-private-key-file (default plain HTTP)",
		func(c *Config) any { return &c.Serving.TLSCertFile }},
	{"tls-private-key-file", "PEM private key of --tls-cert-file",
		func(c *Config) any { return &c.Serving.TLSPrivateKeyFile }},
	{"cors-allowed-origins", "comma-separated exact origins of browser portals allowed to call the API (CORS and WebSocket), such as https://portal.example.com",
		func(c *Config) any { return &c.Serving.CORSAllowedOrigins }},
	{"rate-limit-queries-per-second", fmt.Sprintf("queries one user may send per second (default %d; with --authn=none: per client address, no limit unless set)", defaultQueriesPerSecond),
		func(c *Config) any { return &c.Serving.RateLimit.QueriesPerSecond }},
	{"rate-limit-query-burst", fmt.Sprintf("queries one user may send at once (default %d; with --authn=none: twice the rate)", defaultQueryBurst),
		func(c *Config) any { return &c.Serving.RateLimit.QueryBurst }},
	{"rate-limit-subscriptions-per-second", fmt.Sprintf("subscriptions one user may open per second (default %d; with --authn=none: per client address, no limit unless set)", defaultSubscriptionsPerSecond),
		func(c *Config) any { return &c.Serving.RateLimit.SubscriptionsPerSecond }},
	{"rate-limit-subscription-burst", fmt.Sprintf("subscriptions one user may open at once (default %d; with --authn=none: twice the rate)", defaultSubscriptionBurst),
		func(c *Config) any { return &c.Serving.RateLimit.SubscriptionBurst }},
	{"profiling", "serve Go's profiles at /debug/pprof/, to operators only with authentication (default: on when --addr is a loopback address, off otherwise)",
		func(c *Config) any { return &c.Serving.Profiling }},
	{"playground", "deprecated and ignored: /graphql serves GraphiQL",
		func(c *Config) any { return &c.Serving.Playground }},
	{"cache-secret-data", "keep the data of Secrets when secrets are cached (default: dropped)",
		func(c *Config) any { return &c.Serving.CacheSecretData }},
	{"authn", withDefault("authentication: "+AuthnTokenReview+" (bearer tokens reviewed by the cluster fleetcache runs in) or "+AuthnNone, AuthnTokenReview),
		func(c *Config) any { return &c.Authn.Mode }},
	{"authn-kubeconfig", "kubeconfig of the cluster that reviews tokens (default in-cluster)",
		func(c *Config) any { return &c.Authn.Kubeconfig }},
	{"authn-context", "context of --authn-kubeconfig (default its current context)",
		func(c *Config) any { return &c.Authn.Context }},
	{"authn-cache-ttl", withDefault("how long an accepted token's review is reused", authn.DefaultTokenReviewOptions().TTL),
		func(c *Config) any { return &c.Authn.CacheTTL.Duration }},
	{"authz", withDefault("authorization: "+AuthzSubjectAccessReview+" (each member cluster decides) or "+AuthzPolicy+" (rules of the config file)", AuthzSubjectAccessReview),
		func(c *Config) any { return &c.Authz.Mode }},
	{"authz-cache-ttl", withDefault("how long an access decision is reused", authz.DefaultOptions().TTL),
		func(c *Config) any { return &c.Authz.CacheTTL.Duration }},
	{"authz-cache-size", withDefault("access decisions kept", authz.DefaultOptions().CacheSize),
		func(c *Config) any { return &c.Authz.CacheSize }},
	{"audit-log-path", "file the audit log is appended to, a JSON line per API request; - for standard output (default none: no audit log)",
		func(c *Config) any { return &c.Audit.LogPath }},
	{"audit-level", withDefault("what each audit line records: None (nothing) or Metadata (caller, operation, decision, status; never bodies or tokens)", audit.DefaultOptions().Level),
		func(c *Config) any { return &c.Audit.Level }},
	{"mcp", "serve the MCP server at /mcp, for AI assistants, with the authentication and authorization of /graphql; --mcp=false leaves it out (default true)",
		func(c *Config) any { return &c.MCP.Enabled }},
	{"mcp-result-bytes", withDefault("size budget of one MCP tool call's answer, in bytes; longer answers stop there with a cursor to continue", mcp.DefaultOptions().ResultBytes),
		func(c *Config) any { return &c.MCP.ResultBytes }},
	{"v", "log verbosity (default 0)",
		func(c *Config) any { return &c.Log.Level }},
	{"log-format", "log format: text or json (default text)",
		func(c *Config) any { return &c.Log.Format }},
}

// withDefault appends a flag's default to its usage. Defaults come from the
// package that fills them in (a DefaultOptions function or a constant), never
// written here again.
func withDefault(usage string, def any) string {
	return fmt.Sprintf("%s (default %v)", usage, def)
}

// SnapshotDirEnv names the environment variable that gives the snapshot's
// directory when neither --snapshot-dir nor the file's snapshot.dir does
// (the Helm chart sets it to its snapshot volume).
const SnapshotDirEnv = "FLEETCACHE_SNAPSHOT_DIR"

// ParseArgs builds the Config of a command line: the file named by --config,
// if any, with every flag given on the command line applied over it. It
// returns flag.ErrHelp for -h and --help, after printing the usage to out.
// The result is not validated: call Validate.
func ParseArgs(args []string, out io.Writer) (Config, error) {
	// A first parse, into a scratch Config, checks the command line and
	// finds --config.
	var scratch Config
	fs, configPath := newFlagSet(&scratch, out)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return Config{}, flag.ErrHelp
		}
		return Config{}, err
	}
	if fs.NArg() > 0 {
		return Config{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	var cfg Config
	if *configPath != "" {
		var err error
		if cfg, err = LoadConfig(*configPath); err != nil {
			return Config{}, err
		}
	}
	// The environment sets what neither the file nor a flag does: the
	// Helm chart's snapshot volume.
	if cfg.Snapshot.Dir == "" {
		cfg.Snapshot.Dir = os.Getenv(SnapshotDirEnv)
	}
	// The second applies the flags over the file: that is what "flags win"
	// means, also for lists, whose first flag replaces the file's list and
	// the next ones extend it.
	fs, _ = newFlagSet(&cfg, io.Discard)
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	trimLists(fs, &cfg)
	return cfg, nil
}

// newFlagSet returns the flags bound to c's fields, each defaulting to the
// field's value (the file's, or zero: the usage then prints no default of
// pflag's own, and withDefault names the real one), and the --config flag.
func newFlagSet(c *Config, out io.Writer) (*pflag.FlagSet, *string) {
	fs := pflag.NewFlagSet("aggregator", pflag.ContinueOnError)
	fs.SetOutput(out)
	fs.SortFlags = false
	configPath := fs.String("config", "", "YAML configuration file; flags win over it (see docs/operations.md)")
	for _, d := range flagDefs {
		short := ""
		if len(d.name) == 1 {
			short = d.name // -v as well as --v, as Kubernetes components take it
		}
		switch p := d.bind(c).(type) {
		case *string:
			fs.StringVarP(p, d.name, short, *p, d.usage)
		case *int:
			fs.IntVarP(p, d.name, short, *p, d.usage)
		case *int64:
			fs.Int64VarP(p, d.name, short, *p, d.usage)
		case *float64:
			fs.Float64VarP(p, d.name, short, *p, d.usage)
		case *bool:
			fs.BoolVarP(p, d.name, short, *p, d.usage)
		case *time.Duration:
			fs.DurationVarP(p, d.name, short, *p, d.usage)
		case *[]string:
			fs.StringSliceVarP(p, d.name, short, *p, d.usage)
		case repeated:
			fs.StringArrayVarP(p.p, d.name, short, *p.p, d.usage)
		case **bool:
			fs.VarP(optionalBool{p}, d.name, short, d.usage)
			fs.Lookup(d.name).NoOptDefVal = "true"
		default:
			panic(fmt.Sprintf("flag --%s: no flag type for %T", d.name, p))
		}
	}
	// Accepted and ignored (Config.Deprecated), so left out of the usage.
	_ = fs.MarkHidden("playground") // it is defined above
	return fs, configPath
}

// repeated is a list flag that may be given several times, each time one
// item (commas are part of it): --kubeconfig.
type repeated struct{ p *[]string }

// trimLists drops the spaces around the items of the comma-separated list
// flags given in fs, and empty items: "--contexts 'a, b'" is a and b.
func trimLists(fs *pflag.FlagSet, c *Config) {
	for _, d := range flagDefs {
		p, ok := d.bind(c).(*[]string)
		if !ok || !fs.Changed(d.name) {
			continue
		}
		var out []string
		for _, item := range *p {
			if item = strings.TrimSpace(item); item != "" {
				out = append(out, item)
			}
		}
		*p = out
	}
}

// optionalBool is a boolean flag whose absence (nil) means the default.
type optionalBool struct{ p **bool }

func (v optionalBool) Type() string { return "bool" }

func (v optionalBool) String() string {
	if v.p == nil || *v.p == nil {
		return ""
	}
	return strconv.FormatBool(**v.p)
}

func (v optionalBool) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	*v.p = &b
	return nil
}
