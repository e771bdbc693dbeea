package app

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/fleetcache/fleetcache/pkg/authn"
	"github.com/fleetcache/fleetcache/pkg/authz"
	"github.com/fleetcache/fleetcache/pkg/fanout"
	"github.com/fleetcache/fleetcache/pkg/graphql"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/informers"
	"github.com/fleetcache/fleetcache/pkg/transport"
)

// flagDef is one command-line flag and the Config field it sets.
type flagDef struct {
	name, usage string
	bind        func(*Config) flag.Value
}

var flagDefs = []flagDef{
	{"kubeconfig", "kubeconfig file whose contexts are clusters (repeatable; default $KUBECONFIG or ~/.kube/config when no cluster source is set)",
		func(c *Config) flag.Value { return &listValue{p: &c.Kubeconfigs} }},
	{"contexts", "comma-separated contexts of the kubeconfig files to register (default all)",
		func(c *Config) flag.Value { return &listValue{p: &c.Contexts, split: true} }},
	{"kubeconfig-dir", "directory of kubeconfig files, followed live",
		func(c *Config) flag.Value { return (*stringValue)(&c.KubeconfigDir) }},
	{"cluster-secrets-namespace", "namespace whose Secrets labelled fleetcache.io/cluster=true register clusters, followed live",
		func(c *Config) flag.Value { return (*stringValue)(&c.ClusterSecrets.Namespace) }},
	{"cluster-secrets-kubeconfig", "kubeconfig of the cluster holding the cluster Secrets (default in-cluster)",
		func(c *Config) flag.Value { return (*stringValue)(&c.ClusterSecrets.Kubeconfig) }},
	{"cluster-profiles", "register the clusters of ClusterProfiles (multicluster.x-k8s.io), followed live; needs --cluster-profiles-providers-file",
		func(c *Config) flag.Value { return (*boolValue)(&c.ClusterProfiles.Enabled) }},
	{"cluster-profiles-providers-file", "KEP-5339 providers file mapping the profiles' access providers to exec plugins",
		func(c *Config) flag.Value { return (*stringValue)(&c.ClusterProfiles.ProvidersFile) }},
	{"cluster-profiles-namespace", "namespace of the ClusterProfiles (default every namespace)",
		func(c *Config) flag.Value { return (*stringValue)(&c.ClusterProfiles.Namespace) }},
	{"cluster-profiles-kubeconfig", "kubeconfig of the hub cluster holding the ClusterProfiles (default in-cluster)",
		func(c *Config) flag.Value { return (*stringValue)(&c.ClusterProfiles.Kubeconfig) }},
	{"cluster-api", "register Cluster API's workload clusters from their <cluster>-kubeconfig Secrets, followed live",
		func(c *Config) flag.Value { return (*boolValue)(&c.ClusterAPI.Enabled) }},
	{"cluster-api-namespace", "namespace of the Cluster API Secrets (default every namespace)",
		func(c *Config) flag.Value { return (*stringValue)(&c.ClusterAPI.Namespace) }},
	{"cluster-api-kubeconfig", "kubeconfig of the management cluster holding the Cluster API Secrets (default in-cluster)",
		func(c *Config) flag.Value { return (*stringValue)(&c.ClusterAPI.Kubeconfig) }},
	{"cluster-api-allow-exec-plugins", "accept exec credential plugins in Cluster API kubeconfig Secrets: whoever may write them may run commands in fleetcache's container",
		func(c *Config) flag.Value { return (*boolValue)(&c.ClusterAPI.AllowExecPlugins) }},
	{"argocd", "register the clusters of Argo CD's cluster Secrets, followed live",
		func(c *Config) flag.Value { return (*boolValue)(&c.ArgoCD.Enabled) }},
	{"argocd-namespace", "namespace of Argo CD's cluster Secrets, commonly argocd (default every namespace)",
		func(c *Config) flag.Value { return (*stringValue)(&c.ArgoCD.Namespace) }},
	{"argocd-kubeconfig", "kubeconfig of the cluster holding Argo CD's Secrets (default in-cluster)",
		func(c *Config) flag.Value { return (*stringValue)(&c.ArgoCD.Kubeconfig) }},
	{"argocd-allow-exec-plugins", "accept execProviderConfig in Argo CD cluster Secrets: whoever may write them may run commands in fleetcache's container",
		func(c *Config) flag.Value { return (*boolValue)(&c.ArgoCD.AllowExecPlugins) }},
	{"resources", withDefault("comma-separated resource types, kubectl names such as pods,deployments.apps", strings.Join(informers.DefaultResources, ",")),
		func(c *Config) flag.Value { return &listValue{p: &c.Resources, split: true} }},
	{"watch-timeout", "longest watch request to the member API servers; set it below the idle timeout of a proxy in between (default client-go's 5 to 10 minutes)",
		func(c *Config) flag.Value { return (*durationValue)(&c.WatchTimeout.Duration) }},
	{"streaming-lists", "list each type by a streaming watch (WatchList) instead of a plain list from the API server's watch cache (default false: plain lists cost the servers less)",
		func(c *Config) flag.Value { return (*boolValue)(&c.StreamingLists) }},
	{"max-concurrent-lists", "lists (initial lists and relists) running at once across all clusters; the others wait their turn, PENDING (default twice the CPUs, at least 4)",
		func(c *Config) flag.Value { return (*intValue)(&c.MaxConcurrentLists) }},
	{"member-qps", withDefault("requests per second to each member cluster (lists, watches, discovery; probes are not limited)", informers.DefaultOptions().ClientQPS),
		func(c *Config) flag.Value { return (*float64Value)(&c.MemberQPS) }},
	{"member-burst", withDefault("burst of requests to each member cluster", informers.DefaultOptions().ClientBurst),
		func(c *Config) flag.Value { return (*intValue)(&c.MemberBurst) }},
	{"disconnect-after", withDefault("how long a member API server may leave probes unanswered (timeouts) before it is DISCONNECTED; refused connections count at once", informers.DefaultOptions().DisconnectAfter),
		func(c *Config) flag.Value { return (*durationValue)(&c.DisconnectAfter.Duration) }},
	{"addr", withDefault("HTTP listen address", DefaultAddr),
		func(c *Config) flag.Value { return (*stringValue)(&c.Addr) }},
	{"readyz-exclude", "comma-separated clusters whose initial sync /readyz does not wait for",
		func(c *Config) flag.Value { return &listValue{p: &c.Readyz.Exclude, split: true} }},
	{"default-page-size", withDefault("default of resources(first:)", graphql.DefaultOptions().DefaultPageSize),
		func(c *Config) flag.Value { return (*intValue)(&c.Limits.DefaultPageSize) }},
	{"max-page-size", withDefault("largest resources(first:)", graphql.DefaultOptions().MaxPageSize),
		func(c *Config) flag.Value { return (*intValue)(&c.Limits.MaxPageSize) }},
	{"max-depth", withDefault("deepest selection nesting of a GraphQL document", graphql.DefaultOptions().MaxDepth),
		func(c *Config) flag.Value { return (*intValue)(&c.Limits.MaxDepth) }},
	{"max-body-bytes", withDefault("largest request body", transport.DefaultOptions().MaxBodyBytes),
		func(c *Config) flag.Value { return (*int64Value)(&c.Limits.MaxBodyBytes) }},
	{"max-cost", withDefault("most objects one GraphQL operation's answer (a subscription's: each event's) may hold, computed before it runs", graphql.DefaultOptions().MaxCost),
		func(c *Config) flag.Value { return (*intValue)(&c.Limits.MaxCost) }},
	{"max-response-bytes", withDefault("largest encoded answer (or subscription event); larger ones are abandoned with RESPONSE_TOO_LARGE", graphql.DefaultOptions().MaxResponseBytes),
		func(c *Config) flag.Value { return (*int64Value)(&c.Limits.MaxResponseBytes) }},
	{"request-timeout", withDefault("time limit of one GraphQL request", graphql.DefaultOptions().Timeout),
		func(c *Config) flag.Value { return (*durationValue)(&c.Limits.RequestTimeout.Duration) }},
	{"subscription-buffer", withDefault("events that may wait for one subscription before it is ended as a slow consumer", fanout.DefaultOptions().Buffer),
		func(c *Config) flag.Value { return (*intValue)(&c.Limits.SubscriptionBuffer) }},
	{"max-subscriptions-per-connection", withDefault("operations one WebSocket may run at once", transport.DefaultOptions().MaxSubscriptionsPerConnection),
		func(c *Config) flag.Value { return (*intValue)(&c.Limits.MaxSubscriptionsPerConnection) }},
	{"max-connections-per-address", withDefault("WebSocket and SSE connections one client address may hold", transport.DefaultOptions().MaxConnectionsPerAddress),
		func(c *Config) flag.Value { return (*intValue)(&c.Limits.MaxConnectionsPerAddress) }},
	{"event-retention", withDefault("changes the index keeps for subscriptions to resume from", index.DefaultOptions().Retention),
		func(c *Config) flag.Value { return (*intValue)(&c.Limits.EventRetention) }},
	{"memory-budget", "bytes the index may hold, as it estimates them (about 1.3 KB per object plus its compressed body); above three quarters, objects are cached without their body, at the budget new objects are refused (default 0: no budget)",
		func(c *Config) flag.Value { return (*int64Value)(&c.Limits.MemoryBudget) }},
	{"tls-cert-file", "PEM certificate (chain) to serve HTTPS with; needs --tls-private-key-file (default plain HTTP)",
		func(c *Config) flag.Value { return (*stringValue)(&c.Serving.TLSCertFile) }},
	{"tls-private-key-file", "PEM private key of --tls-cert-file",
		func(c *Config) flag.Value { return (*stringValue)(&c.Serving.TLSPrivateKeyFile) }},
	{"cors-allowed-origins", "comma-separated exact origins of browser portals allowed to call the API (CORS and WebSocket), such as https://portal.example.com",
		func(c *Config) flag.Value { return &listValue{p: &c.Serving.CORSAllowedOrigins, split: true} }},
	{"rate-limit-queries-per-second", fmt.Sprintf("queries one user may send per second (default %d; with --authn=none: per client address, no limit unless set)", defaultQueriesPerSecond),
		func(c *Config) flag.Value { return (*float64Value)(&c.Serving.RateLimit.QueriesPerSecond) }},
	{"rate-limit-query-burst", fmt.Sprintf("queries one user may send at once (default %d; with --authn=none: twice the rate)", defaultQueryBurst),
		func(c *Config) flag.Value { return (*intValue)(&c.Serving.RateLimit.QueryBurst) }},
	{"rate-limit-subscriptions-per-second", fmt.Sprintf("subscriptions one user may open per second (default %d; with --authn=none: per client address, no limit unless set)", defaultSubscriptionsPerSecond),
		func(c *Config) flag.Value { return (*float64Value)(&c.Serving.RateLimit.SubscriptionsPerSecond) }},
	{"rate-limit-subscription-burst", fmt.Sprintf("subscriptions one user may open at once (default %d; with --authn=none: twice the rate)", defaultSubscriptionBurst),
		func(c *Config) flag.Value { return (*intValue)(&c.Serving.RateLimit.SubscriptionBurst) }},
	{"profiling", "serve Go's profiles at /debug/pprof/, to operators only with authentication (default: on when --addr is a loopback address, off otherwise)",
		func(c *Config) flag.Value { return optionalBool{&c.Serving.Profiling} }},
	{"playground", "deprecated and ignored: /graphql serves GraphiQL",
		func(c *Config) flag.Value { return (*stringValue)(&c.Serving.Playground) }},
	{"cache-secret-data", "keep the data of Secrets when secrets are cached (default: dropped)",
		func(c *Config) flag.Value { return (*boolValue)(&c.Serving.CacheSecretData) }},
	{"authn", withDefault("authentication: "+AuthnTokenReview+" (bearer tokens reviewed by the cluster fleetcache runs in) or "+AuthnNone, AuthnTokenReview),
		func(c *Config) flag.Value { return (*stringValue)(&c.Authn.Mode) }},
	{"authn-kubeconfig", "kubeconfig of the cluster that reviews tokens (default in-cluster)",
		func(c *Config) flag.Value { return (*stringValue)(&c.Authn.Kubeconfig) }},
	{"authn-context", "context of --authn-kubeconfig (default its current context)",
		func(c *Config) flag.Value { return (*stringValue)(&c.Authn.Context) }},
	{"authn-cache-ttl", withDefault("how long an accepted token's review is reused", authn.DefaultTokenReviewOptions().TTL),
		func(c *Config) flag.Value { return (*durationValue)(&c.Authn.CacheTTL.Duration) }},
	{"authz", withDefault("authorization: "+AuthzSubjectAccessReview+" (each member cluster decides) or "+AuthzPolicy+" (rules of the config file)", AuthzSubjectAccessReview),
		func(c *Config) flag.Value { return (*stringValue)(&c.Authz.Mode) }},
	{"authz-cache-ttl", withDefault("how long an access decision is reused", authz.DefaultOptions().TTL),
		func(c *Config) flag.Value { return (*durationValue)(&c.Authz.CacheTTL.Duration) }},
	{"authz-cache-size", withDefault("access decisions kept", authz.DefaultOptions().CacheSize),
		func(c *Config) flag.Value { return (*intValue)(&c.Authz.CacheSize) }},
	{"v", "log verbosity (default 0)",
		func(c *Config) flag.Value { return (*intValue)(&c.Log.Level) }},
	{"log-format", "log format: text or json (default text)",
		func(c *Config) flag.Value { return (*stringValue)(&c.Log.Format) }},
}

// withDefault appends a flag's default to its usage. Defaults come from the
// package that fills them in (a DefaultOptions function or a constant), never
// written here again.
func withDefault(usage string, def any) string {
	return fmt.Sprintf("%s (default %v)", usage, def)
}

// ParseArgs builds the Config of a command line: the file named by --config,
// if any, with every flag given on the command line applied over it. It
// returns flag.ErrHelp for -h and --help, after printing the usage to out.
// The result is not validated: call Validate.
func ParseArgs(args []string, out io.Writer) (Config, error) {
	fs := flag.NewFlagSet("aggregator", flag.ContinueOnError)
	fs.SetOutput(out)
	configPath := fs.String("config", "", "YAML configuration file; flags win over it (see docs/operations.md)")
	// Parse into a scratch Config, recording each flag as given, then apply
	// the recorded flags over the file: that is what "flags win" means, also
	// for lists, which a flag replaces rather than extends.
	var (
		scratch Config
		given   []setCall
	)
	for _, d := range flagDefs {
		fs.Var(recorder{name: d.name, v: d.bind(&scratch), calls: &given}, d.name, d.usage)
	}
	if err := fs.Parse(args); err != nil {
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
	values := map[string]flag.Value{}
	for _, d := range flagDefs {
		values[d.name] = d.bind(&cfg)
	}
	for _, g := range given {
		if err := values[g.name].Set(g.value); err != nil {
			return Config{}, fmt.Errorf("--%s: %w", g.name, err)
		}
	}
	return cfg, nil
}

type setCall struct{ name, value string }

// recorder is a flag.Value that records each value it is set to.
type recorder struct {
	name  string
	v     flag.Value
	calls *[]setCall
}

// String is empty, so that the flag package prints no default of its own:
// the value a flag is bound to is the zero Config's, which means "the
// default", and the usage names what that default is (withDefault).
func (recorder) String() string { return "" }

// IsBoolFlag lets a boolean flag be given without a value.
func (r recorder) IsBoolFlag() bool {
	b, ok := r.v.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

func (r recorder) Set(s string) error {
	if err := r.v.Set(s); err != nil {
		return err
	}
	*r.calls = append(*r.calls, setCall{r.name, s})
	return nil
}

type stringValue string

func (v *stringValue) String() string     { return string(*v) }
func (v *stringValue) Set(s string) error { *v = stringValue(s); return nil }

type intValue int

func (v *intValue) String() string { return strconv.Itoa(int(*v)) }
func (v *intValue) Set(s string) error {
	n, err := strconv.Atoi(s)
	*v = intValue(n)
	return err
}

type int64Value int64

func (v *int64Value) String() string { return strconv.FormatInt(int64(*v), 10) }
func (v *int64Value) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 64)
	*v = int64Value(n)
	return err
}

type float64Value float64

func (v *float64Value) String() string { return strconv.FormatFloat(float64(*v), 'g', -1, 64) }
func (v *float64Value) Set(s string) error {
	f, err := strconv.ParseFloat(s, 64)
	*v = float64Value(f)
	return err
}

type boolValue bool

func (v *boolValue) String() string   { return strconv.FormatBool(bool(*v)) }
func (v *boolValue) IsBoolFlag() bool { return true }
func (v *boolValue) Set(s string) error {
	b, err := strconv.ParseBool(s)
	*v = boolValue(b)
	return err
}

// optionalBool is a boolean flag whose absence (nil) means the default.
type optionalBool struct{ p **bool }

func (v optionalBool) String() string {
	if v.p == nil || *v.p == nil {
		return ""
	}
	return strconv.FormatBool(**v.p)
}

func (v optionalBool) IsBoolFlag() bool { return true }

func (v optionalBool) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	*v.p = &b
	return nil
}

type durationValue time.Duration

func (v *durationValue) String() string { return time.Duration(*v).String() }
func (v *durationValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	*v = durationValue(d)
	return err
}

// listValue is a list flag: the first use replaces the list (from the file),
// later uses extend it. With split, each use is a comma-separated list.
type listValue struct {
	p     *[]string
	split bool
	set   bool
}

func (v *listValue) String() string {
	if v.p == nil {
		return ""
	}
	return strings.Join(*v.p, ",")
}

func (v *listValue) Set(s string) error {
	if !v.set {
		*v.p, v.set = nil, true
	}
	if !v.split {
		*v.p = append(*v.p, s)
		return nil
	}
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			*v.p = append(*v.p, item)
		}
	}
	return nil
}
