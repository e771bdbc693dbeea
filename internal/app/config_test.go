package app_test

import (
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetcache/fleetcache/internal/app"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/transport"
)

func writeConfig(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestParseArgs(t *testing.T) {
	file := writeConfig(t, `
kubeconfigs: [/etc/a, /etc/b]
contexts: [one]
resources: [pods, configmaps]
addr: 0.0.0.0:9000
watchTimeout: 4m
clusterSecrets: {namespace: fleet}
readyz: {exclude: [slow]}
limits:
  maxPageSize: 500
  requestTimeout: 3s
  eventRetention: 5000
log: {level: 2, format: json}
`)
	fromFile := app.Config{
		Kubeconfigs:    []string{"/etc/a", "/etc/b"},
		Contexts:       []string{"one"},
		Resources:      []string{"pods", "configmaps"},
		Addr:           "0.0.0.0:9000",
		WatchTimeout:   metav1.Duration{Duration: 4 * time.Minute},
		ClusterSecrets: app.ClusterSecretsConfig{Namespace: "fleet"},
		Readyz:         app.ReadyzConfig{Exclude: []string{"slow"}},
		Limits:         app.LimitsConfig{MaxPageSize: 500, RequestTimeout: metav1.Duration{Duration: 3 * time.Second}, EventRetention: 5000},
		Log:            app.LogConfig{Level: 2, Format: "json"},
	}
	tests := []struct {
		name string
		args []string
		want func(c *app.Config)
	}{
		{name: "no flags, no file", args: nil},
		{name: "file only", args: []string{"--config", file}, want: func(c *app.Config) { *c = fromFile }},
		{
			name: "flags win, lists replaced then extended",
			args: []string{"--config=" + file, "--kubeconfig", "/x", "--kubeconfig=/y,z", "--resources", "nodes", "--max-page-size", "50", "--request-timeout", "1m", "--v", "4", "--addr", "127.0.0.1:1", "--watch-timeout", "50s"},
			want: func(c *app.Config) {
				*c = fromFile
				c.Kubeconfigs = []string{"/x", "/y,z"}
				c.Resources = []string{"nodes"}
				c.Limits.MaxPageSize = 50
				c.Limits.RequestTimeout.Duration = time.Minute
				c.Log.Level = 4
				c.Addr = "127.0.0.1:1"
				c.WatchTimeout.Duration = 50 * time.Second
			},
		},
		{
			name: "flags without a file",
			args: []string{"--contexts", "a, b", "--kubeconfig-dir", "/d", "--cluster-secrets-namespace", "ns", "--readyz-exclude", "c1", "--log-format", "json", "--max-body-bytes", "2048"},
			want: func(c *app.Config) {
				c.Contexts = []string{"a", "b"}
				c.KubeconfigDir = "/d"
				c.ClusterSecrets.Namespace = "ns"
				c.Readyz.Exclude = []string{"c1"}
				c.Log.Format = "json"
				c.Limits.MaxBodyBytes = 2048
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := app.ParseArgs(tt.args, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			var want app.Config
			if tt.want != nil {
				tt.want(&want)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSnapshotDirFromEnv: the environment names the snapshot's directory
// (as the Helm chart does) unless the file or a flag does.
func TestSnapshotDirFromEnv(t *testing.T) {
	t.Setenv(app.SnapshotDirEnv, "/from/env")
	file := writeConfig(t, "snapshot: {dir: /from/file}\n")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{nil, "/from/env"},
		{[]string{"--config", file}, "/from/file"},
		{[]string{"--config", file, "--snapshot-dir", "/from/flag"}, "/from/flag"},
	} {
		got, err := app.ParseArgs(tt.args, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if got.Snapshot.Dir != tt.want {
			t.Errorf("ParseArgs(%q): snapshot.dir = %q, want %q", tt.args, got.Snapshot.Dir, tt.want)
		}
	}
}

func TestParseArgsErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "unknown flag", args: []string{"--nope"}, want: "unknown flag: --nope"},
		{name: "bad number", args: []string{"--max-depth", "deep"}, want: `invalid argument "deep" for "--max-depth" flag`},
		{name: "bad duration", args: []string{"--request-timeout", "soon"}, want: `invalid argument "soon"`},
		{name: "argument", args: []string{"extra"}, want: `unexpected argument "extra"`},
		{name: "missing file", args: []string{"--config", "/nonexistent/fleetcache.yaml"}, want: "/nonexistent/fleetcache.yaml"},
		{name: "unknown field", args: []string{"--config", writeConfig(t, "limits: {maxPageSzie: 3}\n")}, want: `unknown field "limits.maxPageSzie"`},
		{name: "unknown fields", args: []string{"--config", writeConfig(t, "authz: {rules: [{users: [a]}, {grups: [b]}]}\nadress: x\n")}, want: `unknown field "adress", "authz.rules[1].grups"`},
		{name: "wrong type", args: []string{"--config", writeConfig(t, "limits: {maxDepth: deep}\n")}, want: "maxDepth"},
		{name: "not yaml", args: []string{"--config", writeConfig(t, "{{{")}, want: "config file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := app.ParseArgs(tt.args, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ParseArgs error %v, want one containing %q", err, tt.want)
			}
		})
	}
	if _, err := app.ParseArgs([]string{"-h"}, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v, want flag.ErrHelp", err)
	}
}

func TestConfigValidate(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name   string
		config app.Config
		want   []string // each error names its field
	}{
		{name: "zero is valid", config: app.Config{}},
		{name: "full and valid", config: app.Config{
			Kubeconfigs: []string{"/k"}, Contexts: []string{"a"}, KubeconfigDir: dir, Resources: []string{"pods", "deployments.apps"},
			ClusterSecrets: app.ClusterSecretsConfig{Namespace: "fleet", Kubeconfig: "/home"}, Addr: ":8080",
			Limits: app.LimitsConfig{DefaultPageSize: 10, MaxPageSize: 20}, Log: app.LogConfig{Level: 3, Format: "text"},
		}},
		{name: "everything wrong", config: app.Config{
			Kubeconfigs:    []string{""},
			KubeconfigDir:  filepath.Join(dir, "missing"),
			ClusterSecrets: app.ClusterSecretsConfig{Namespace: "Not_A_Namespace"},
			Resources:      []string{"Pods!"},
			Addr:           "localhost",
			WatchTimeout:   metav1.Duration{Duration: 500 * time.Millisecond},
			Limits: app.LimitsConfig{
				MaxDepth: -1, RequestTimeout: metav1.Duration{Duration: -time.Second},
				DefaultPageSize: 100, MaxPageSize: 10,
			},
			Log: app.LogConfig{Level: -1, Format: "xml"},
		}, want: []string{
			"kubeconfigs[0]: empty path", "kubeconfigDir:", "clusterSecrets.namespace:", "resources:", "addr:", "watchTimeout: 500ms: must be at least 1s",
			"limits.maxDepth: must not be negative", "limits.requestTimeout: must not be negative",
			"limits.defaultPageSize: 100 is above limits.maxPageSize 10", "log.level:", `log.format: must be text or json, not "xml"`,
		}},
		{name: "dir is a file", config: app.Config{KubeconfigDir: writeConfig(t, "")}, want: []string{"kubeconfigDir:", "is not a directory"}},
		{name: "secrets kubeconfig alone", config: app.Config{ClusterSecrets: app.ClusterSecretsConfig{Kubeconfig: "/k"}}, want: []string{"clusterSecrets.kubeconfig: set without clusterSecrets.namespace"}},
		{name: "inventories", config: app.Config{
			ClusterProfiles: app.InventorySourceConfig{Enabled: true, AllowExecPlugins: true},
			ClusterAPI:      app.InventorySourceConfig{Namespace: "Bad_NS"},
			ArgoCD:          app.InventorySourceConfig{Enabled: true, ProvidersFile: "/p"},
			Clusters:        map[string]app.ClusterConfig{"prod": {Labels: map[string]string{"bad key!": "v", "env": "not valid!"}}},
		}, want: []string{
			"clusterProfiles.providersFile: required", "clusterProfiles.allowExecPlugins: applies to clusterAPI and argoCD",
			`clusterAPI.namespace: "Bad_NS"`, "clusterAPI.enabled: other fields are set but the source is not enabled",
			"argoCD.providersFile: applies to clusterProfiles only",
			`clusters["prod"].labels["bad key!"]: bad key`, `clusters["prod"].labels["env"]: bad value`,
		}},
		{name: "contexts without files", config: app.Config{KubeconfigDir: dir, Contexts: []string{"a"}}, want: []string{"contexts: applies to kubeconfigs"}},
		{name: "bad port", config: app.Config{Addr: "127.0.0.1:http"}, want: []string{`addr: bad port "http"`}},
		{name: "audit", config: app.Config{Audit: app.AuditConfig{LogPath: "-", Level: "metadata"}}},
		{name: "bad audit level", config: app.Config{Audit: app.AuditConfig{LogPath: "-", Level: "RequestResponse"}},
			want: []string{`audit.level: unknown audit level "RequestResponse": use None or Metadata`}},
		{name: "indexes", config: app.Config{Indexes: map[string][]string{
			"pods": {"status.phase", `metadata.annotations["a/b"]`}, "nodes": {}, "widgets.example.com": {"spec.size"}}}},
		{name: "bad indexes", config: app.Config{Indexes: map[string][]string{
			"pods":  {"status.phase", "status..phase", "cluster", "status.phase", "spec.containers[0].image"},
			"Pods!": {"spec.x"},
		}}, want: []string{
			`indexes["pods"][1]: invalid path "status..phase": expected a key, found`, `indexes["pods"][2]: the path cluster needs no index`,
			`indexes["pods"][3]: status.phase listed twice`, `indexes["pods"][4]: invalid path "spec.containers[0].image"`, `indexes["Pods!"]: resource type "Pods!"`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkValidate(t, tt.config.Validate(), tt.want)
		})
	}
}

// checkValidate checks Validate's error: none when want is empty, else one
// that contains each of want.
func checkValidate(t *testing.T, err error, want []string) {
	t.Helper()
	if len(want) == 0 {
		if err != nil {
			t.Fatalf("Validate: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatal("Validate accepted it")
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
}

// TestConfigRateLimits checks the rate limits the command applies: per
// user with authentication, enough for a portal backend at 2,000 queries a
// second; none by default without it.
func TestConfigRateLimits(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want transport.RateLimit
	}{
		{name: "authenticated: the defaults", args: nil,
			want: transport.RateLimit{QueriesPerSecond: 4000, QueryBurst: 8000, SubscriptionsPerSecond: 50, SubscriptionBurst: 100}},
		{name: "authenticated: one set, the others default", args: []string{"--rate-limit-queries-per-second", "10"},
			want: transport.RateLimit{QueriesPerSecond: 10, QueryBurst: 8000, SubscriptionsPerSecond: 50, SubscriptionBurst: 100}},
		{name: "unauthenticated: no limit", args: []string{"--authn=none"}, want: transport.RateLimit{}},
		{name: "unauthenticated: only what is set", args: []string{"--authn=none", "--rate-limit-subscriptions-per-second", "2"},
			want: transport.RateLimit{SubscriptionsPerSecond: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := app.ParseArgs(tt.args, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			got := c.Options().Transport.RateLimit
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("rate limits (-want +got):\n%s", diff)
			}
		})
	}
	// The main user: one identity at 2,000 queries a second, which may
	// also send a second's worth at once.
	if l := (app.Config{}).Options().Transport.RateLimit; l.QueriesPerSecond < 2000 || l.QueryBurst < 2000 {
		t.Errorf("default query limit %v/s in bursts of %d throttles a user at 2,000 queries/s", l.QueriesPerSecond, l.QueryBurst)
	}
}

// TestConfigCostLimits checks limits.maxCost and limits.maxResponseBytes:
// from the file and the flags (which win) to graphql.Options, and refused
// when negative.
func TestConfigCostLimits(t *testing.T) {
	file := writeConfig(t, "limits: {maxCost: 2000, maxResponseBytes: 1048576}\n")
	for _, tt := range []struct {
		name      string
		args      []string
		cost      int
		respBytes int64
	}{
		{name: "defaults", args: nil},
		{name: "file", args: []string{"--config", file}, cost: 2000, respBytes: 1 << 20},
		{name: "flags win", args: []string{"--config", file, "--max-cost", "500", "--max-response-bytes", "4096"}, cost: 500, respBytes: 4096},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := parseValid(t, tt.args...).Options().GraphQL
			if got.MaxCost != tt.cost || got.MaxResponseBytes != tt.respBytes {
				t.Errorf("MaxCost %d, MaxResponseBytes %d; want %d, %d (0: graphql's default)", got.MaxCost, got.MaxResponseBytes, tt.cost, tt.respBytes)
			}
		})
	}
	err := app.Config{Limits: app.LimitsConfig{MaxCost: -1, MaxResponseBytes: -1}}.Validate()
	for _, want := range []string{"limits.maxCost: must not be negative", "limits.maxResponseBytes: must not be negative"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v, want %q", err, want)
		}
	}
}

// TestConfigProfiling checks serving.profiling and --profiling: unset
// (nil: the default follows the address), on, off, flags winning.
func TestConfigProfiling(t *testing.T) {
	on, off := true, false
	file := writeConfig(t, "serving: {profiling: true}\n")
	for _, tt := range []struct {
		name string
		args []string
		want *bool
	}{
		{name: "unset", args: nil, want: nil},
		{name: "flag", args: []string{"--profiling"}, want: &on},
		{name: "flag off", args: []string{"--profiling=false"}, want: &off},
		{name: "file", args: []string{"--config", file}, want: &on},
		{name: "flag wins", args: []string{"--config", file, "--profiling=false"}, want: &off},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := app.ParseArgs(tt.args, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, c.Options().Profiling); diff != "" {
				t.Errorf("Profiling (-want +got):\n%s", diff)
			}
		})
	}
}

// TestConfigWatchTimeout checks that watchTimeout reaches the informers.
func TestConfigWatchTimeout(t *testing.T) {
	c, err := app.ParseArgs([]string{"--watch-timeout", "4m"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Options().Informers.WatchTimeout; got != 4*time.Minute {
		t.Errorf("informers' WatchTimeout %v, want 4m", got)
	}
}

// TestConfigFleet checks that the fleet's settings reach the informers.
func TestConfigFleet(t *testing.T) {
	c, err := app.ParseArgs([]string{"--max-concurrent-lists", "7", "--member-qps", "5.5", "--member-burst", "11", "--disconnect-after", "1m"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	got := c.Options().Informers
	if got.MaxConcurrentLists != 7 || got.ClientQPS != 5.5 || got.ClientBurst != 11 || got.DisconnectAfter != time.Minute {
		t.Errorf("informers' options %+v, want 7 lists, 5.5 QPS, burst 11, disconnect after 1m", got)
	}
	bad, err := app.ParseArgs([]string{"--max-concurrent-lists", "-1", "--member-qps", "-1"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "maxConcurrentLists") || !strings.Contains(err.Error(), "memberQPS") {
		t.Errorf("Validate = %v, want errors for maxConcurrentLists and memberQPS", err)
	}
}

// parseValid parses a command line that must be valid.
func parseValid(t *testing.T, args ...string) app.Config {
	t.Helper()
	c, err := app.ParseArgs(args, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestConfigOpenAPIInterval checks that openAPIInterval reaches the
// follower of the members' OpenAPI schemas, from the file and from the
// flag, which wins, and that a too short one is refused.
func TestConfigOpenAPIInterval(t *testing.T) {
	file := writeConfig(t, "openAPIInterval: 30s\n")
	for _, tt := range []struct {
		name string
		args []string
		want time.Duration
	}{
		{name: "default", want: 0}, // openapi.Options fills it in
		{name: "file", args: []string{"--config", file}, want: 30 * time.Second},
		{name: "flag over file", args: []string{"--config", file, "--openapi-interval", "2s"}, want: 2 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := parseValid(t, tt.args...).Options().Schemas.Interval; got != tt.want {
				t.Errorf("openapi.Options.Interval %v, want %v", got, tt.want)
			}
		})
	}
	c, err := app.ParseArgs([]string{"--openapi-interval", "10ms"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	checkValidate(t, c.Validate(), []string{"openAPIInterval: 10ms: must be at least 100ms"})
}

// TestConfigIndexes checks that indexes reach index.Options from the file:
// a resource listed replaces its defaults, [] turns them off, the others
// keep theirs.
func TestConfigIndexes(t *testing.T) {
	file := writeConfig(t, "indexes:\n  pods: [status.phase, 'metadata.labels[\"app\"]']\n  nodes: []\n")
	c, err := app.ParseArgs([]string{"--config", file}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	ix := index.New(c.Options().Index)
	got := map[string][]string{}
	for _, r := range []string{"pods", "nodes", "services"} {
		got[r] = []string{}
		for _, p := range ix.IndexedPaths(r) {
			got[r] = append(got[r], p.String())
		}
	}
	// The relation paths are indexed whatever the configuration says.
	want := map[string][]string{"pods": {"status.phase", "metadata.labels.app"}, "nodes": {}, "services": {"spec.type"}}
	for _, p := range index.RelationPaths["pods"] {
		want["pods"] = append(want["pods"], p.String())
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("indexed paths (-want +got):\n%s", diff)
	}
}
