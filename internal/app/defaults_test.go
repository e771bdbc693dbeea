package app

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

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

// flagDefaults is the default of every flag, read from where it is filled
// in: the package that owns the setting, or this one. A nil default means
// the flag's usage describes its default in words (or it has none).
var flagDefaults = []struct {
	flag string
	def  any
	// example: the reference in docs/configuration.md shows an example
	// value rather than the default.
	example bool
}{
	{flag: "kubeconfig"},
	{flag: "contexts"},
	{flag: "kubeconfig-dir"},
	{flag: "cluster-secrets-namespace"},
	{flag: "cluster-secrets-kubeconfig"},
	{flag: "resources", def: strings.Join(informers.DefaultResources, ","), example: true},
	{flag: "streaming-lists", def: false},
	{flag: "watch-timeout"},        // client-go's, which informers.Options.WatchTimeout leaves alone
	{flag: "max-concurrent-lists"}, // sized to the machine: informers.DefaultMaxConcurrentLists
	{flag: "member-qps", def: informers.DefaultOptions().ClientQPS},
	{flag: "member-burst", def: informers.DefaultOptions().ClientBurst},
	{flag: "disconnect-after", def: informers.DefaultOptions().DisconnectAfter},
	{flag: "openapi-interval", def: openapi.DefaultOptions().Interval},
	{flag: "addr", def: DefaultAddr, example: true},
	{flag: "readyz-exclude"},
	{flag: "default-page-size", def: graphql.DefaultOptions().DefaultPageSize},
	{flag: "max-page-size", def: graphql.DefaultOptions().MaxPageSize},
	{flag: "max-depth", def: graphql.DefaultOptions().MaxDepth},
	{flag: "max-body-bytes", def: transport.DefaultOptions().MaxBodyBytes},
	{flag: "max-cost", def: graphql.DefaultOptions().MaxCost},
	{flag: "max-response-bytes", def: graphql.DefaultOptions().MaxResponseBytes},
	{flag: "request-timeout", def: graphql.DefaultOptions().Timeout},
	{flag: "subscription-buffer", def: fanout.DefaultOptions().Buffer},
	{flag: "max-subscriptions-per-connection", def: transport.DefaultOptions().MaxSubscriptionsPerConnection},
	{flag: "max-connections-per-address", def: transport.DefaultOptions().MaxConnectionsPerAddress},
	{flag: "event-retention", def: index.DefaultOptions().Retention},
	{flag: "event-retention-age", def: index.DefaultOptions().RetentionAge},
	{flag: "status-history", def: health.DefaultOptions().HistoryWindow},
	{flag: "tombstone-retention", def: index.DefaultOptions().TombstoneRetention},
	{flag: "snapshot-dir"}, // none
	{flag: "snapshot-interval", def: warmstart.DefaultOptions().Interval},
	{flag: "max-tombstones", def: index.DefaultOptions().MaxTombstones},
	{flag: "memory-budget", def: index.DefaultOptions().MemoryBudget},
	{flag: "tls-cert-file"},
	{flag: "tls-private-key-file"},
	{flag: "cors-allowed-origins"},
	{flag: "rate-limit-queries-per-second", def: defaultQueriesPerSecond},
	{flag: "rate-limit-query-burst", def: defaultQueryBurst},
	{flag: "rate-limit-subscriptions-per-second", def: defaultSubscriptionsPerSecond},
	{flag: "rate-limit-subscription-burst", def: defaultSubscriptionBurst},
	{flag: "profiling"},
	{flag: "playground"},
	{flag: "cache-secret-data"},
	{flag: "authn", def: AuthnTokenReview},
	{flag: "authn-kubeconfig"},
	{flag: "authn-context"},
	{flag: "authn-cache-ttl", def: authn.DefaultTokenReviewOptions().TTL},
	{flag: "authz", def: AuthzSubjectAccessReview},
	{flag: "authz-cache-ttl", def: authz.DefaultOptions().TTL},
	{flag: "authz-cache-size", def: authz.DefaultOptions().CacheSize},
	{flag: "cluster-profiles"},
	{flag: "cluster-profiles-providers-file"},
	{flag: "cluster-profiles-namespace"},
	{flag: "cluster-profiles-kubeconfig"},
	{flag: "cluster-api"},
	{flag: "cluster-api-namespace"},
	{flag: "cluster-api-kubeconfig"},
	{flag: "cluster-api-allow-exec-plugins"},
	{flag: "argocd-allow-exec-plugins"},
	{flag: "argocd"},
	{flag: "argocd-namespace"},
	{flag: "argocd-kubeconfig"},
	{flag: "audit-log-path"}, // none
	{flag: "audit-level", def: audit.DefaultOptions().Level},
	{flag: "mcp"}, // on unless false: its usage says so
	{flag: "mcp-result-bytes", def: mcp.DefaultOptions().ResultBytes},
	{flag: "v", def: 0},
	{flag: "log-format", def: "text"},
}

// TestFlagUsageNamesDefault checks that each flag's usage names the default
// of the package that fills it in, and that no usage writes a number of its
// own for a flag whose default lives elsewhere.
func TestFlagUsageNamesDefault(t *testing.T) {
	usages := map[string]string{}
	for _, d := range flagDefs {
		usages[d.name] = d.usage
	}
	for _, tt := range flagDefaults {
		t.Run(tt.flag, func(t *testing.T) {
			usage, ok := usages[tt.flag]
			if !ok {
				t.Fatalf("no flag --%s", tt.flag)
			}
			delete(usages, tt.flag)
			if tt.def == nil {
				if regexp.MustCompile(`\(default [0-9]`).MatchString(usage) {
					t.Errorf("usage %q states a number: take it from the package that fills the default in", usage)
				}
				return
			}
			// The default may be followed by a remark: "(default 4000; with --authn=none: ...)".
			if want := fmt.Sprintf("(default %v", tt.def); !strings.Contains(usage, want) {
				t.Errorf("usage %q does not name the default: want %q", usage, want+")")
			}
		})
	}
	for name := range usages {
		t.Errorf("flag --%s is not in flagDefaults: add it with its default", name)
	}
}

// TestReferenceShowsDefaults checks that the reference of
// docs/configuration.md gives each setting whose flag has a default that
// default (unless it shows an example), and that it loads as a
// configuration file.
func TestReferenceShowsDefaults(t *testing.T) {
	doc, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(doc), "## Reference\n")
	_, after, _ := strings.Cut(section, "```yaml\n")
	reference, _, ok := strings.Cut(after, "```")
	if !ok {
		t.Fatal("docs/configuration.md: no yaml block under ## Reference")
	}
	path := t.TempDir() + "/config.yaml"
	if err := os.WriteFile(path, []byte(reference), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadConfig(path); err != nil {
		t.Errorf("the reference does not load: %v", err)
	}
	// "  key: value   # --flag ..." gives the value shown for --flag.
	shown := map[string]string{}
	line := regexp.MustCompile(`^\s*-?\s*[A-Za-z]+:\s*(\S[^#]*?)\s+#\s*--([a-z-]+)`)
	for l := range strings.Lines(reference) {
		if m := line.FindStringSubmatch(l); m != nil {
			shown[m[2]] = strings.Trim(m[1], `"`)
		}
	}
	for _, tt := range flagDefaults {
		if tt.def == nil || tt.example {
			continue
		}
		t.Run(tt.flag, func(t *testing.T) {
			got, ok := shown[tt.flag]
			if !ok {
				t.Fatalf("the reference has no setting commented with --%s", tt.flag)
			}
			if want := fmt.Sprint(tt.def); got != want {
				t.Errorf("the reference shows %s for --%s; its default is %s", got, tt.flag, want)
			}
		})
	}
}
