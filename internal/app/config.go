package app

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"

	"github.com/fleetcache/fleetcache/pkg/audit"
	"github.com/fleetcache/fleetcache/pkg/authz"
	"github.com/fleetcache/fleetcache/pkg/fanout"
	"github.com/fleetcache/fleetcache/pkg/graphql"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
	"github.com/fleetcache/fleetcache/pkg/informers"
	"github.com/fleetcache/fleetcache/pkg/mcp"
	"github.com/fleetcache/fleetcache/pkg/openapi"
	"github.com/fleetcache/fleetcache/pkg/transport"
)

// Config is the aggregator's configuration file (--config), in YAML. Every
// field has a flag of the same meaning, and flags win over the file; see
// docs/operations.md for the reference. Zero values mean the default.
type Config struct {
	// Kubeconfigs are kubeconfig files whose contexts are clusters.
	// When no cluster source at all is set: the files of $KUBECONFIG, else
	// ~/.kube/config.
	Kubeconfigs []string `json:"kubeconfigs,omitempty"`
	// Contexts limits Kubeconfigs to these contexts. Default: all.
	Contexts []string `json:"contexts,omitempty"`
	// KubeconfigDir is a directory of kubeconfig files, followed live.
	KubeconfigDir string `json:"kubeconfigDir,omitempty"`
	// ClusterSecrets registers clusters from Secrets, followed live.
	ClusterSecrets ClusterSecretsConfig `json:"clusterSecrets,omitzero"`
	// ClusterProfiles registers the clusters of sig-multicluster
	// ClusterProfiles (Open Cluster Management, GKE Fleet), followed live.
	ClusterProfiles InventorySourceConfig `json:"clusterProfiles,omitzero"`
	// ClusterAPI registers Cluster API's workload clusters from their
	// <cluster>-kubeconfig Secrets, followed live.
	ClusterAPI InventorySourceConfig `json:"clusterAPI,omitzero"`
	// ArgoCD registers the clusters of Argo CD's cluster Secrets, followed
	// live.
	ArgoCD InventorySourceConfig `json:"argoCD,omitzero"`
	// Clusters holds per-cluster settings by cluster name: labels added to
	// (and winning over) those of the cluster's source.
	Clusters map[string]ClusterConfig `json:"clusters,omitempty"`
	// Resources are the resource types to cache, by kubectl name
	// ("pods", "deployments.apps"). Default: informers.DefaultResources.
	Resources []string `json:"resources,omitempty"`
	// Indexes are the paths (package fieldpath) that get secondary
	// indexes, per resource: {pods: [status.phase, spec.nodeName]}. A
	// resource listed gets exactly its list instead of its defaults ([]
	// turns them off); the others keep index.DefaultOptions().Indexes.
	Indexes map[string][]string `json:"indexes,omitempty"`
	// WatchTimeout caps one watch request to the member API servers. Set
	// it below the idle timeout of a proxy or load balancer in between: a
	// watch such a device cuts counts as an interruption and costs a relist.
	// Default: client-go's 5 to 10 minutes.
	WatchTimeout metav1.Duration `json:"watchTimeout,omitzero"`
	// StreamingLists lists each type by a streaming watch (WatchList)
	// instead of a plain list. Default false: see
	// informers.Options.StreamingLists.
	StreamingLists bool `json:"streamingLists,omitzero"`
	// MaxConcurrentLists bounds the lists (initial lists and relists) that
	// run at once across all clusters; types waiting for their turn are
	// PENDING with that reason. Default informers.DefaultMaxConcurrentLists.
	MaxConcurrentLists int `json:"maxConcurrentLists,omitempty"`
	// MemberQPS and MemberBurst limit the requests sent to each member
	// cluster. Default informers.DefaultOptions().
	MemberQPS   float64 `json:"memberQPS,omitempty"`
	MemberBurst int     `json:"memberBurst,omitempty"`
	// DisconnectAfter is how long a member API server may leave probes
	// unanswered before its cluster is DISCONNECTED. Default
	// informers.DefaultOptions().
	DisconnectAfter metav1.Duration `json:"disconnectAfter,omitzero"`
	// OpenAPIInterval is how often each member's /openapi/v3 root is read
	// for the typed GraphQL schema: a CRD added, changed or removed
	// reaches the schema within about that long. Default
	// openapi.DefaultOptions().Interval.
	OpenAPIInterval metav1.Duration `json:"openAPIInterval,omitzero"`
	// Addr is the HTTP listen address. Default DefaultAddr.
	Addr string `json:"addr,omitempty"`
	// Readyz configures /readyz.
	Readyz ReadyzConfig `json:"readyz,omitzero"`
	// Limits bound what one request or client may cost.
	Limits LimitsConfig `json:"limits,omitzero"`
	// Serving secures the HTTP server: TLS, CORS, rate limits, Secret data.
	Serving ServingConfig `json:"serving,omitzero"`
	// Log configures logging.
	Log LogConfig `json:"log,omitzero"`
	// Authn configures how callers are authenticated.
	Authn AuthnConfig `json:"authn,omitzero"`
	// Authz configures what callers may see.
	Authz AuthzConfig `json:"authz,omitzero"`
	// MCP configures the MCP server at /mcp.
	MCP MCPConfig `json:"mcp,omitzero"`
	// Snapshot keeps the index on a volume for warm starts.
	Snapshot SnapshotConfig `json:"snapshot,omitzero"`
	// Audit writes the audit log (docs/operations.md, "Audit log").
	Audit AuditConfig `json:"audit,omitzero"`
}

// AuditConfig configures the audit log: a JSON line per API request.
type AuditConfig struct {
	// LogPath is the file the events are appended to, "-" for standard
	// output. Default "": no audit log.
	LogPath string `json:"logPath,omitempty"`
	// Level is None or Metadata. Default audit.DefaultOptions().Level
	// (Metadata): with a path, a line per request.
	Level string `json:"level,omitempty"`
}

// SnapshotConfig configures the snapshot of the index (docs/operations.md,
// "Warm start").
type SnapshotConfig struct {
	// Dir is the directory of the snapshot store, on a volume that
	// survives restarts. Default "": no snapshot, every start is cold.
	Dir string `json:"dir,omitempty"`
	// Interval is how often what changed is written to it. Default 5s.
	Interval metav1.Duration `json:"interval,omitzero"`
}

// MCPConfig configures the MCP server at /mcp (docs/mcp.md).
type MCPConfig struct {
	// Enabled serves MCP at /mcp. Default (unset) true; false leaves it out.
	Enabled *bool `json:"enabled,omitempty"`
	// ResultBytes is the size budget of one tool call's answer. Default
	// mcp.DefaultResultBytes.
	ResultBytes int `json:"resultBytes,omitempty"`
}

// AuthnConfig configures authentication.
type AuthnConfig struct {
	// Mode is "tokenreview" (default): callers send a bearer token that the
	// cluster fleetcache runs in reviews; or "none": no authentication, and
	// everything is visible to everyone (the demo on loopback).
	Mode string `json:"mode,omitempty"`
	// Kubeconfig reaches the cluster that reviews tokens, outside a
	// cluster. Default: the in-cluster configuration.
	Kubeconfig string `json:"kubeconfig,omitempty"`
	// Context is the context of Kubeconfig to use. Default: its current one.
	Context string `json:"context,omitempty"`
	// CacheTTL is how long an accepted token's review is reused. Default
	// authn.DefaultTokenReviewOptions().TTL.
	CacheTTL metav1.Duration `json:"cacheTTL,omitzero"`
}

// AuthzConfig configures authorization.
type AuthzConfig struct {
	// Mode is "subjectaccessreview" (default): each member cluster decides
	// whether the caller may list a type there; or "policy": Rules decide.
	Mode string `json:"mode,omitempty"`
	// CacheTTL is how long a decision is reused. Default
	// authz.DefaultOptions().TTL.
	CacheTTL metav1.Duration `json:"cacheTTL,omitzero"`
	// CacheSize bounds the cached decisions. Default
	// authz.DefaultOptions().CacheSize.
	CacheSize int `json:"cacheSize,omitempty"`
	// Rules are the policy of mode "policy".
	Rules []authz.Rule `json:"rules,omitempty"`
}

// ClusterSecretsConfig says where cluster Secrets are.
type ClusterSecretsConfig struct {
	// Namespace holds the Secrets labelled fleetcache.io/cluster=true.
	// Empty: no Secrets are read.
	Namespace string `json:"namespace,omitempty"`
	// Kubeconfig reaches the cluster that holds the Secrets (its current
	// context). Default: the cluster fleetcache runs in (in-cluster config).
	Kubeconfig string `json:"kubeconfig,omitempty"`
}

// InventorySourceConfig says where one inventory of clusters is and how to
// read it (docs/configuration.md, "Cluster inventories").
type InventorySourceConfig struct {
	// Enabled turns the source on. Default false.
	Enabled bool `json:"enabled,omitempty"`
	// Namespace is where its objects are. Default "": every namespace.
	Namespace string `json:"namespace,omitempty"`
	// Kubeconfig reaches the cluster that holds them (the hub), through its
	// current context. Default: the cluster fleetcache runs in.
	Kubeconfig string `json:"kubeconfig,omitempty"`
	// ProvidersFile is the KEP-5339 providers file that maps access
	// providers to exec plugins; clusterProfiles only, and required there.
	ProvidersFile string `json:"providersFile,omitempty"`
	// AllowExecPlugins accepts exec credential plugins written in Secrets
	// (clusterAPI, argoCD): whoever may write those Secrets may then run
	// commands in fleetcache's container. Default false.
	AllowExecPlugins bool `json:"allowExecPlugins,omitempty"`
}

// ClusterConfig is the configuration of one cluster, by name.
type ClusterConfig struct {
	// Labels are added to the cluster's labels, over its source's.
	Labels map[string]string `json:"labels,omitempty"`
}

// ReadyzConfig configures /readyz.
type ReadyzConfig struct {
	// Exclude lists clusters whose initial sync /readyz does not wait for.
	Exclude []string `json:"exclude,omitempty"`
	// Disabled makes /readyz pass as soon as the process serves.
	Disabled bool `json:"disabled,omitempty"`
}

// LimitsConfig bounds requests and clients. Each field sets the option that
// its comment names, and zero means that option's default, which its
// package documents and fills in (aggregator --help prints them).
type LimitsConfig struct {
	DefaultPageSize               int             `json:"defaultPageSize,omitempty"`               // graphql.Options.DefaultPageSize
	MaxPageSize                   int             `json:"maxPageSize,omitempty"`                   // graphql.Options.MaxPageSize
	MaxDepth                      int             `json:"maxDepth,omitempty"`                      // graphql.Options.MaxDepth
	MaxBodyBytes                  int64           `json:"maxBodyBytes,omitempty"`                  // transport.Options.MaxBodyBytes
	MaxCost                       int             `json:"maxCost,omitempty"`                       // graphql.Options.MaxCost
	MaxResponseBytes              int64           `json:"maxResponseBytes,omitempty"`              // graphql.Options.MaxResponseBytes
	RequestTimeout                metav1.Duration `json:"requestTimeout,omitzero"`                 // graphql.Options.Timeout
	SubscriptionBuffer            int             `json:"subscriptionBuffer,omitempty"`            // fanout.Options.Buffer
	MaxSubscriptionsPerConnection int             `json:"maxSubscriptionsPerConnection,omitempty"` // transport.Options.MaxSubscriptionsPerConnection
	MaxConnectionsPerAddress      int             `json:"maxConnectionsPerAddress,omitempty"`      // transport.Options.MaxConnectionsPerAddress
	EventRetention                int             `json:"eventRetention,omitempty"`                // index.Options.Retention
	EventRetentionAge             metav1.Duration `json:"eventRetentionAge,omitzero"`              // index.Options.RetentionAge
	StatusHistory                 metav1.Duration `json:"statusHistory,omitzero"`                  // health.Options.HistoryWindow
	TombstoneRetention            metav1.Duration `json:"tombstoneRetention,omitzero"`             // index.Options.TombstoneRetention
	MaxTombstones                 int             `json:"maxTombstones,omitempty"`                 // index.Options.MaxTombstones
	MemoryBudget                  int64           `json:"memoryBudget,omitempty"`                  // index.Options.MemoryBudget, bytes
}

// ServingConfig secures what the HTTP server serves, and to whom.
type ServingConfig struct {
	// TLSCertFile is a PEM certificate (chain) to serve HTTPS and WSS
	// with; TLSPrivateKeyFile is its key. Both or neither. Default: plain
	// HTTP, for loopback or behind a TLS-terminating proxy.
	TLSCertFile       string `json:"tlsCertFile,omitempty"`
	TLSPrivateKeyFile string `json:"tlsPrivateKeyFile,omitempty"`
	// CORSAllowedOrigins are the exact origins ("https://portal.example.com")
	// of browser portals that may call the API from their pages, with CORS
	// and WebSockets. "*" is not accepted. Default none: same-origin only.
	CORSAllowedOrigins []string `json:"corsAllowedOrigins,omitempty"`
	// RateLimit bounds queries and subscriptions per authenticated user
	// (per client address without authentication).
	RateLimit RateLimitConfig `json:"rateLimit,omitzero"`
	// CacheSecretData keeps the data and stringData of Secrets, when
	// resources include secrets. Default false: they are dropped before
	// caching.
	CacheSecretData bool `json:"cacheSecretData,omitempty"`
	// Profiling serves Go's profiles at /debug/pprof/, to operators only
	// when callers authenticate. Default: on when addr is a loopback
	// address, off otherwise (Options.Profiling).
	Profiling *bool `json:"profiling,omitempty"`
	// Playground is deprecated and ignored: it chose between GraphiQL and
	// a basic playground, which is gone. /graphql serves GraphiQL (or, in a
	// binary built without it, a page that says how to build it). A file or
	// flag that sets it is accepted with a warning (Deprecated).
	Playground string `json:"playground,omitempty"`
}

// RateLimitConfig bounds how fast one caller may send queries and open
// subscriptions: each authenticated user (transport.RateLimit), or, without
// authentication, each client address (the connection's peer: behind a
// proxy, the proxy). Zero means the command's default, which each comment
// names (serving.go); with authn.mode none the default is no limit (see
// RateLimitConfig.options), as it is for transport.RateLimit.
type RateLimitConfig struct {
	QueriesPerSecond       float64 `json:"queriesPerSecond,omitempty"`       // defaultQueriesPerSecond
	QueryBurst             int     `json:"queryBurst,omitempty"`             // defaultQueryBurst
	SubscriptionsPerSecond float64 `json:"subscriptionsPerSecond,omitempty"` // defaultSubscriptionsPerSecond
	SubscriptionBurst      int     `json:"subscriptionBurst,omitempty"`      // defaultSubscriptionBurst
}

// LogConfig configures logging.
type LogConfig struct {
	// Level is the klog verbosity. Default 0.
	Level int `json:"level,omitempty"`
	// Format is "text" (klog's) or "json". Default text.
	Format string `json:"format,omitempty"`
}

// LoadConfig reads a configuration file. Unknown fields are errors, so that
// a misspelt setting does not go unnoticed.
func LoadConfig(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("config file: %w", err)
	}
	// Name unknown fields by their path; the JSON decoder names only the key.
	var raw any
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return Config{}, fmt.Errorf("config file %s: %w", path, err)
	}
	if unknown := unknownFields(raw, reflect.TypeFor[Config](), ""); len(unknown) > 0 {
		quoted := make([]string, len(unknown))
		for i, u := range unknown {
			quoted[i] = strconv.Quote(u)
		}
		return Config{}, fmt.Errorf("config file %s: unknown field %s", path, strings.Join(quoted, ", "))
	}
	var c Config
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		return Config{}, fmt.Errorf("config file %s: %w", path, err)
	}
	return c, nil
}

// unknownFields returns the paths of the keys of v that t has no field for.
func unknownFields(v any, t reflect.Type, prefix string) []string {
	if list, ok := v.([]any); ok && t.Kind() == reflect.Slice {
		// Elements are named by index: "authz.rules[1].grups".
		var out []string
		for i, e := range list {
			out = append(out, unknownFields(e, t.Elem(), fmt.Sprintf("%s[%d].", strings.TrimSuffix(prefix, "."), i))...)
		}
		return out
	}
	m, ok := v.(map[string]any)
	if ok && t.Kind() == reflect.Map && t.Key().Kind() == reflect.String {
		// Entries are named by their key: "clusters.prod-eu.lables".
		var out []string
		for _, key := range slices.Sorted(maps.Keys(m)) {
			out = append(out, unknownFields(m[key], t.Elem(), prefix+key+".")...)
		}
		return out
	}
	if !ok || t.Kind() != reflect.Struct || t == reflect.TypeFor[metav1.Duration]() {
		return nil
	}
	fields := map[string]reflect.Type{}
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		fields[name] = f.Type
	}
	var out []string
	for _, key := range slices.Sorted(maps.Keys(m)) {
		ft, ok := fields[key]
		if !ok {
			out = append(out, prefix+key)
			continue
		}
		out = append(out, unknownFields(m[key], ft, prefix+key+".")...)
	}
	return out
}

// Validate returns an error naming every bad field (by its name in the
// configuration file).
func (c Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	}
	for i, p := range c.Kubeconfigs {
		if p == "" {
			bad(fmt.Sprintf("kubeconfigs[%d]", i), "empty path")
		}
	}
	if c.KubeconfigDir != "" {
		if fi, err := os.Stat(c.KubeconfigDir); err != nil {
			bad("kubeconfigDir", "%v", err)
		} else if !fi.IsDir() {
			bad("kubeconfigDir", "%s is not a directory", c.KubeconfigDir)
		}
	}
	if ns := c.ClusterSecrets.Namespace; ns != "" {
		if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
			bad("clusterSecrets.namespace", "%q: %s", ns, strings.Join(msgs, "; "))
		}
	} else if c.ClusterSecrets.Kubeconfig != "" {
		bad("clusterSecrets.kubeconfig", "set without clusterSecrets.namespace")
	}
	if c.Audit.Level != "" {
		if _, err := audit.ParseLevel(c.Audit.Level); err != nil {
			bad("audit.level", "%v", err)
		}
	}
	validateInventory("clusterProfiles", c.ClusterProfiles, bad)
	validateInventory("clusterAPI", c.ClusterAPI, bad)
	validateInventory("argoCD", c.ArgoCD, bad)
	if c.ClusterProfiles.AllowExecPlugins {
		bad("clusterProfiles.allowExecPlugins", "applies to clusterAPI and argoCD: ClusterProfiles get their exec plugins from the providers file")
	}
	for _, name := range slices.Sorted(maps.Keys(c.Clusters)) {
		if strings.TrimSpace(name) == "" {
			bad("clusters", "empty cluster name")
		}
		for _, k := range slices.Sorted(maps.Keys(c.Clusters[name].Labels)) {
			field := fmt.Sprintf("clusters[%q].labels[%q]", name, k)
			if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
				bad(field, "bad key: %s", strings.Join(msgs, "; "))
			}
			if msgs := validation.IsValidLabelValue(c.Clusters[name].Labels[k]); len(msgs) > 0 {
				bad(field, "bad value: %s", strings.Join(msgs, "; "))
			}
		}
	}
	if len(c.Contexts) > 0 && len(c.Kubeconfigs) == 0 && (c.KubeconfigDir != "" || c.ClusterSecrets.Namespace != "" ||
		c.ClusterProfiles.Enabled || c.ClusterAPI.Enabled || c.ArgoCD.Enabled) {
		bad("contexts", "applies to kubeconfigs, and none is set")
	}
	if err := informers.ValidateResources(c.Resources); err != nil {
		bad("resources", "%v", err)
	}
	validateIndexes(c.Indexes, bad)
	if w := c.WatchTimeout.Duration; w != 0 && w < time.Second {
		bad("watchTimeout", "%v: must be at least 1s (0 means the default)", w)
	}
	if c.MaxConcurrentLists < 0 {
		bad("maxConcurrentLists", "%d: must not be negative (0 means the default)", c.MaxConcurrentLists)
	}
	if c.MemberQPS < 0 {
		bad("memberQPS", "%v: must not be negative (0 means the default)", c.MemberQPS)
	}
	if c.MemberBurst < 0 {
		bad("memberBurst", "%d: must not be negative (0 means the default)", c.MemberBurst)
	}
	if d := c.DisconnectAfter.Duration; d < 0 {
		bad("disconnectAfter", "%v: must not be negative (0 means the default)", d)
	}
	if d := c.OpenAPIInterval.Duration; d != 0 && d < 100*time.Millisecond {
		bad("openAPIInterval", "%v: must be at least 100ms (0 means the default)", d)
	}
	if c.Addr != "" {
		if _, port, err := net.SplitHostPort(c.Addr); err != nil {
			bad("addr", "%v", err)
		} else if _, err := strconv.ParseUint(port, 10, 16); err != nil {
			bad("addr", "bad port %q", port)
		}
	}
	l := c.Limits
	for _, f := range []struct {
		name  string
		value int64
	}{
		{"limits.defaultPageSize", int64(l.DefaultPageSize)},
		{"limits.maxPageSize", int64(l.MaxPageSize)},
		{"limits.maxDepth", int64(l.MaxDepth)},
		{"limits.maxBodyBytes", l.MaxBodyBytes},
		{"limits.maxCost", int64(l.MaxCost)},
		{"limits.maxResponseBytes", l.MaxResponseBytes},
		{"limits.requestTimeout", int64(l.RequestTimeout.Duration)},
		{"limits.subscriptionBuffer", int64(l.SubscriptionBuffer)},
		{"limits.maxSubscriptionsPerConnection", int64(l.MaxSubscriptionsPerConnection)},
		{"limits.maxConnectionsPerAddress", int64(l.MaxConnectionsPerAddress)},
		{"limits.eventRetention", int64(l.EventRetention)},
		{"limits.eventRetentionAge", int64(l.EventRetentionAge.Duration)},
		{"limits.statusHistory", int64(l.StatusHistory.Duration)},
		{"limits.tombstoneRetention", int64(l.TombstoneRetention.Duration)},
		{"limits.maxTombstones", int64(l.MaxTombstones)},
		{"limits.memoryBudget", l.MemoryBudget},
		{"mcp.resultBytes", int64(c.MCP.ResultBytes)},
		{"snapshot.interval", int64(c.Snapshot.Interval.Duration)},
	} {
		if f.value < 0 {
			bad(f.name, "must not be negative (0 means the default)")
		}
	}
	gqlDefaults := graphql.DefaultOptions()
	if def, maxSize := cmp.Or(l.DefaultPageSize, gqlDefaults.DefaultPageSize), cmp.Or(l.MaxPageSize, gqlDefaults.MaxPageSize); l.DefaultPageSize >= 0 && l.MaxPageSize >= 0 && def > maxSize {
		bad("limits.defaultPageSize", "%d is above limits.maxPageSize %d", def, maxSize)
	}
	switch c.Authn.Mode {
	case "", "tokenreview":
	case "none":
		if c.Authz.Mode != "" {
			bad("authz.mode", "needs authentication: authn.mode is none")
		}
	default:
		bad("authn.mode", "must be tokenreview or none, not %q", c.Authn.Mode)
	}
	if c.Authn.Context != "" && c.Authn.Kubeconfig == "" {
		bad("authn.context", "set without authn.kubeconfig")
	}
	switch c.Authz.Mode {
	case "", "subjectaccessreview":
		if len(c.Authz.Rules) > 0 {
			bad("authz.rules", "apply to authz.mode policy only")
		}
	case "policy":
		if len(c.Authz.Rules) == 0 {
			bad("authz.rules", "mode policy needs at least one rule")
		}
		for i, r := range c.Authz.Rules {
			if err := r.Validate(); err != nil {
				bad(fmt.Sprintf("authz.rules[%d]", i), "%v", err)
			}
		}
	default:
		bad("authz.mode", "must be subjectaccessreview or policy, not %q", c.Authz.Mode)
	}
	for _, f := range []struct {
		name  string
		value int64
	}{
		{"authn.cacheTTL", int64(c.Authn.CacheTTL.Duration)},
		{"authz.cacheTTL", int64(c.Authz.CacheTTL.Duration)},
		{"authz.cacheSize", int64(c.Authz.CacheSize)},
	} {
		if f.value < 0 {
			bad(f.name, "must not be negative (0 means the default)")
		}
	}
	validateServing(c.Serving, bad)
	if c.Log.Level < 0 {
		bad("log.level", "must not be negative")
	}
	switch c.Log.Format {
	case "", "text", "json":
	default:
		bad("log.format", "must be text or json, not %q", c.Log.Format)
	}
	return errors.Join(errs...)
}

// Deprecated returns a warning for each deprecated setting c sets: the
// setting is accepted and ignored, and the command logs the warning at
// start.
func (c Config) Deprecated() []string {
	var out []string
	if c.Serving.Playground != "" {
		out = append(out, "serving.playground (--playground) is deprecated and ignored: the basic playground is gone, "+
			"/graphql serves GraphiQL (a binary built without it says how to build it); remove the setting")
	}
	return out
}

// Options turns a valid Config into Options.
func (c Config) Options() Options {
	l := c.Limits
	authnMode := cmp.Or(c.Authn.Mode, AuthnTokenReview) // the command authenticates unless told not to
	return Options{
		Kubeconfigs:              c.Kubeconfigs,
		Contexts:                 c.Contexts,
		KubeconfigDir:            c.KubeconfigDir,
		ClusterSecretsNamespace:  c.ClusterSecrets.Namespace,
		ClusterSecretsKubeconfig: c.ClusterSecrets.Kubeconfig,
		ClusterProfiles:          c.ClusterProfiles.options(),
		ClusterAPI:               c.ClusterAPI.options(),
		ArgoCD:                   c.ArgoCD.options(),
		ClusterLabels:            clusterLabels(c.Clusters),
		Addr:                     c.Addr,
		Readyz:                   health.ReadyzOptions{Exclude: c.Readyz.Exclude, Disabled: c.Readyz.Disabled},
		Health:                   health.Options{HistoryWindow: l.StatusHistory.Duration},
		Index: index.Options{Retention: l.EventRetention, RetentionAge: l.EventRetentionAge.Duration, Indexes: indexPaths(c.Indexes), MemoryBudget: l.MemoryBudget,
			TombstoneRetention: l.TombstoneRetention.Duration, MaxTombstones: l.MaxTombstones},
		Auth: AuthOptions{
			Authn:           authnMode,
			AuthnKubeconfig: c.Authn.Kubeconfig,
			AuthnContext:    c.Authn.Context,
			AuthnCacheTTL:   c.Authn.CacheTTL.Duration,
			Authz:           c.Authz.Mode,
			AuthzCacheTTL:   c.Authz.CacheTTL.Duration,
			AuthzCacheSize:  c.Authz.CacheSize,
			PolicyRules:     c.Authz.Rules,
		},
		TLSCertFile:        c.Serving.TLSCertFile,
		TLSPrivateKeyFile:  c.Serving.TLSPrivateKeyFile,
		CORSAllowedOrigins: c.Serving.CORSAllowedOrigins,
		Profiling:          c.Serving.Profiling,
		Informers: informers.Options{Resources: c.Resources, WatchTimeout: c.WatchTimeout.Duration, StreamingLists: c.StreamingLists, CacheSecretData: c.Serving.CacheSecretData,
			MaxConcurrentLists: c.MaxConcurrentLists, ClientQPS: float32(c.MemberQPS), ClientBurst: c.MemberBurst,
			DisconnectAfter: c.DisconnectAfter.Duration},
		GraphQL: graphql.Options{
			DefaultPageSize:  l.DefaultPageSize,
			MaxPageSize:      l.MaxPageSize,
			MaxDepth:         l.MaxDepth,
			MaxCost:          l.MaxCost,
			MaxResponseBytes: l.MaxResponseBytes,
			Timeout:          l.RequestTimeout.Duration,
			Fanout:           fanout.Options{Buffer: l.SubscriptionBuffer},
		},
		Transport: transport.Options{
			MaxBodyBytes:                  l.MaxBodyBytes,
			MaxSubscriptionsPerConnection: l.MaxSubscriptionsPerConnection,
			MaxConnectionsPerAddress:      l.MaxConnectionsPerAddress,
			RateLimit:                     c.Serving.RateLimit.options(authnMode),
		},
		Schemas:    openapi.Options{Interval: c.OpenAPIInterval.Duration},
		DisableMCP: c.MCP.Enabled != nil && !*c.MCP.Enabled,
		MCP:        mcp.Options{ResultBytes: c.MCP.ResultBytes},
		Snapshot:   SnapshotOptions{Dir: c.Snapshot.Dir, Interval: c.Snapshot.Interval.Duration},
		Audit:      audit.Options{Path: c.Audit.LogPath, Level: auditLevel(c.Audit.Level)},
	}
}

// auditLevel is the level a valid audit.level names, in audit's spelling;
// "" (the default) when unset.
func auditLevel(s string) audit.Level {
	l, _ := audit.ParseLevel(s)
	return l
}

func (c InventorySourceConfig) options() InventorySourceOptions {
	return InventorySourceOptions(c)
}

// clusterLabels returns the configured labels by cluster name.
func clusterLabels(cs map[string]ClusterConfig) map[string]map[string]string {
	out := map[string]map[string]string{}
	for name, c := range cs {
		if len(c.Labels) > 0 {
			out[name] = c.Labels
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// SetupLogging applies the log settings to klog, for the whole process.
func SetupLogging(c LogConfig) error {
	var fs flag.FlagSet
	klog.InitFlags(&fs)
	if err := fs.Set("v", strconv.Itoa(c.Level)); err != nil {
		return fmt.Errorf("log.level: %w", err)
	}
	if c.Format == "json" {
		// logr maps V(n) to slog level -n; klog has already applied -v.
		klog.SetSlogLogger(slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.Level(-c.Level)})))
	}
	return nil
}

// validateInventory reports the bad fields of one inventory source's
// configuration.
func validateInventory(field string, c InventorySourceConfig, bad func(field, format string, args ...any)) {
	if c.Namespace != "" {
		if msgs := validation.IsDNS1123Label(c.Namespace); len(msgs) > 0 {
			bad(field+".namespace", "%q: %s", c.Namespace, strings.Join(msgs, "; "))
		}
	}
	if !c.Enabled && (c.Namespace != "" || c.Kubeconfig != "" || c.ProvidersFile != "" || c.AllowExecPlugins) {
		bad(field+".enabled", "other fields are set but the source is not enabled")
	}
	if field == "clusterProfiles" {
		if c.Enabled && c.ProvidersFile == "" {
			bad(field+".providersFile", "required: it maps the profiles' access providers to exec plugins")
		}
	} else if c.ProvidersFile != "" {
		bad(field+".providersFile", "applies to clusterProfiles only")
	}
}

// validateIndexes reports each bad entry of indexes, named as
// indexes["pods"][1] (a resource's name may hold dots): a resource that is
// not a kubectl name, a malformed path, the path cluster, a repeated path.
func validateIndexes(indexes map[string][]string, bad func(field, format string, args ...any)) {
	for _, r := range slices.Sorted(maps.Keys(indexes)) {
		if err := informers.ValidateResources([]string{r}); err != nil {
			bad(fmt.Sprintf("indexes[%q]", r), "%v", err)
		}
		seen := map[string]bool{}
		for i, text := range indexes[r] {
			field := fmt.Sprintf("indexes[%q][%d]", r, i)
			p, err := fieldpath.Parse(text)
			switch {
			case err != nil:
				bad(field, "%v", err)
			case p.IsCluster():
				bad(field, "the path cluster needs no index: it narrows to the clusters' objects already")
			case seen[p.String()]:
				bad(field, "%s listed twice", p)
			}
			seen[p.String()] = true
		}
	}
}

// indexPaths parses the paths of valid indexes.
func indexPaths(indexes map[string][]string) map[string][]fieldpath.Path {
	if indexes == nil {
		return nil
	}
	out := make(map[string][]fieldpath.Path, len(indexes))
	for r, texts := range indexes {
		out[r] = []fieldpath.Path{}
		for _, text := range texts {
			if p, err := fieldpath.Parse(text); err == nil {
				out[r] = append(out[r], p)
			}
		}
	}
	return out
}
