package deploy_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

const (
	alertsFile    = "prometheus/alerts.yaml"
	dashboardFile = "grafana/fleetcache.json"
)

// chartAlertsFile is the source of the rules; alertsFile is its copy.
var chartAlertsFile = filepath.Join(chartDir, "files", "alerts.yaml")

// metrics are the fleetcache metrics the aggregator serves at /metrics (see
// docs/operations.md); histograms are also queried by their _bucket, _sum and
// _count series.
var metrics = map[string]bool{
	"fleetcache_cluster_status":                          false,
	"fleetcache_resource_status":                         false,
	"fleetcache_cached_objects":                          false,
	"fleetcache_events_total":                            false,
	"fleetcache_watch_restarts_total":                    false,
	"fleetcache_relists_total":                           false,
	"fleetcache_watch_expired_total":                     false,
	"fleetcache_cluster_current_as_of_timestamp_seconds": false,
	"fleetcache_last_event_timestamp_seconds":            false,
	"fleetcache_initial_sync_duration_seconds":           false,
	"fleetcache_graphql_request_duration_seconds":        true, // histogram
	"fleetcache_graphql_subscriptions_open":              false,
	"fleetcache_graphql_subscriptions_overflowed_total":  false,
	"fleetcache_graphql_document_cache_requests_total":   false,
}

var metricName = regexp.MustCompile(`\bfleetcache_[a-z0-9_]+`)

// metricsIn splits the fleetcache metric names expr uses into those the
// aggregator serves (a histogram by its base name, queried through its
// _bucket, _sum or _count series) and unknown ones.
func metricsIn(expr string) (used, unknown []string) {
	for _, name := range metricName.FindAllString(expr, -1) {
		if histogram, ok := metrics[name]; ok && !histogram {
			used = append(used, name)
			continue
		}
		found := false
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(name, suffix); ok && metrics[base] {
				used = append(used, base)
				found = true
				break
			}
		}
		if !found {
			unknown = append(unknown, name)
		}
	}
	return used, unknown
}

// balanced reports whether the brackets of a PromQL expression pair up: a
// cheap guard against the commonest typo without a PromQL parser.
func balanced(expr string) bool {
	var stack []rune
	pairs := map[rune]rune{')': '(', ']': '[', '}': '{'}
	inString := false
	for _, r := range expr {
		switch {
		case r == '"':
			inString = !inString
		case inString:
		case r == '(' || r == '[' || r == '{':
			stack = append(stack, r)
		case pairs[r] != 0:
			if len(stack) == 0 || stack[len(stack)-1] != pairs[r] {
				return false
			}
			stack = stack[:len(stack)-1]
		}
	}
	return len(stack) == 0 && !inString
}

type ruleFile struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Alert       string            `json:"alert"`
			Expr        string            `json:"expr"`
			For         string            `json:"for"`
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
		} `json:"rules"`
	} `json:"groups"`
}

// TestAlertsFileIsTheChartCopy keeps deploy/prometheus/alerts.yaml equal to
// the chart's files/alerts.yaml; FLEETCACHE_UPDATE_DEPLOY=1 rewrites it.
func TestAlertsFileIsTheChartCopy(t *testing.T) {
	src, err := os.ReadFile(chartAlertsFile)
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("FLEETCACHE_UPDATE_DEPLOY") != "" {
		if err := os.WriteFile(alertsFile, src, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cp, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(src, cp) {
		t.Errorf("%s differs from %s: edit the latter and run FLEETCACHE_UPDATE_DEPLOY=1 go test ./deploy/ -run TestAlertsFileIsTheChartCopy", alertsFile, chartAlertsFile)
	}
}

func TestAlertRules(t *testing.T) {
	data, err := os.ReadFile(chartAlertsFile)
	if err != nil {
		t.Fatal(err)
	}
	var f ruleFile
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		t.Fatalf("%s: %v", chartAlertsFile, err)
	}
	forOf := map[string]string{}
	for _, g := range f.Groups {
		if g.Name == "" || len(g.Rules) == 0 {
			t.Errorf("group %q has no name or no rules", g.Name)
		}
		for _, r := range g.Rules {
			forOf[r.Alert] = r.For
			if r.Alert == "" {
				t.Errorf("group %s: a rule with no alert name (expr %q)", g.Name, r.Expr)
			}
			if _, err := time.ParseDuration(r.For); err != nil {
				t.Errorf("%s: for %q: %v", r.Alert, r.For, err)
			}
			if s := r.Labels["severity"]; s != "critical" && s != "warning" {
				t.Errorf("%s: severity %q, want critical or warning", r.Alert, s)
			}
			if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("%s: annotations %v, want summary and description", r.Alert, r.Annotations)
			}
			if !balanced(r.Expr) {
				t.Errorf("%s: unbalanced brackets in %q", r.Alert, r.Expr)
			}
			used, unknown := metricsIn(r.Expr)
			if len(used) == 0 || len(unknown) > 0 {
				t.Errorf("%s: expr %q uses fleetcache metrics %v and unknown ones %v", r.Alert, r.Expr, used, unknown)
			}
		}
	}
	// The alerts the issue asks for, with the durations it names.
	want := map[string]string{
		"FleetcacheClusterDisconnected":   "5m",
		"FleetcacheNoEvents":              "5m",
		"FleetcacheSubscriptionOverflows": "10m",
	}
	for alert, wantFor := range want {
		if got, ok := forOf[alert]; !ok || got != wantFor {
			t.Errorf("alert %s: for %q (present %t), want %q", alert, got, ok, wantFor)
		}
	}
}

type dashboard struct {
	Title  string `json:"title"`
	UID    string `json:"uid"`
	Panels []struct {
		Title   string `json:"title"`
		Type    string `json:"type"`
		Targets []struct {
			Expr  string `json:"expr"`
			RefID string `json:"refId"`
		} `json:"targets"`
	} `json:"panels"`
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			Definition string `json:"definition"`
		} `json:"list"`
	} `json:"templating"`
}

func TestDashboard(t *testing.T) {
	data, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	if d.Title == "" || d.UID == "" {
		t.Errorf("dashboard title %q uid %q, want both", d.Title, d.UID)
	}
	usedAll := map[string]bool{}
	check := func(where, expr string) {
		used, unknown := metricsIn(expr)
		if len(unknown) > 0 || !balanced(expr) {
			t.Errorf("%s: expr %q: unknown metrics %v, balanced %t", where, expr, unknown, balanced(expr))
		}
		for _, m := range used {
			usedAll[m] = true
		}
	}
	var titles []string
	for _, p := range d.Panels {
		titles = append(titles, p.Title)
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			if q.RefID == "" || q.Expr == "" {
				t.Errorf("panel %q: query %+v lacks refId or expr", p.Title, q)
			}
			check("panel "+p.Title, q.Expr)
		}
	}
	for _, v := range d.Templating.List {
		check("variable "+v.Name, v.Definition)
	}
	// Every metric the aggregator serves is on the dashboard.
	var missing []string
	for m := range metrics {
		if !usedAll[m] {
			missing = append(missing, m)
		}
	}
	slices.Sort(missing)
	if diff := cmp.Diff([]string(nil), missing); diff != "" {
		t.Errorf("metrics on no panel of %v (-want +got):\n%s", titles, diff)
	}
}
