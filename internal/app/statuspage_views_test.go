package app_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/fleetcache/fleetcache/internal/browsertest"
	"github.com/fleetcache/fleetcache/internal/graphiql"
	"github.com/fleetcache/fleetcache/internal/testcluster"
)

// eval runs a script that returns JSON and decodes it into out; it
// returns the JSON for messages.
func eval(t *testing.T, ctx context.Context, script string, out any) string {
	t.Helper()
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[string](script))
	if err != nil {
		t.Fatalf("read the page: %v", err)
	}
	if err := json.Unmarshal([]byte(raw), out); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	return raw
}

// bandsJS defines bands(rects): the statuses of a timeline's bands in the
// order of the history (the page draws SYNCED ones first, under the
// others).
const bandsJS = `const bands = (rects) => Array.from(rects).sort((a, b) => Number(a.dataset.order) - Number(b.dataset.order)).map((r) => r.dataset.status);`

// timelineOf returns the statuses of a cluster's row timeline, oldest
// first (the bands of the last 24 hours).
func timelineOf(t *testing.T, ctx context.Context, cluster string) ([]string, string) {
	t.Helper()
	var got []string
	raw := eval(t, ctx, `(() => { `+bandsJS+` return JSON.stringify(bands(document.querySelectorAll('details[data-cluster="`+cluster+`"] .timeline-cell rect.tl'))); })()`, &got)
	return got, raw
}

// wentDownAndBack reports whether statuses hold DISCONNECTED and, after
// it, SYNCED, which is also the last.
func wentDownAndBack(statuses []string) bool {
	i := slices.Index(statuses, "DISCONNECTED")
	return i >= 0 && slices.Contains(statuses[i:], "SYNCED") && statuses[len(statuses)-1] == "SYNCED"
}

// clusterDetail is what a cluster's drill-down says of it besides types.
type clusterDetail struct {
	Facts     map[string]string `json:"facts"`
	Bands     []string          `json:"bands"`   // the 24 h timeline's statuses
	Windows   []string          `json:"windows"` // the timelines' windows, in hours
	Periods   int               `json:"periods"`
	GraphiQL  string            `json:"graphiql"` // the link to its objects
	Command   string            `json:"command"`
	TypeLinks []string          `json:"typeLinks"` // each type's GraphiQL link
	TypeCmds  []string          `json:"typeCmds"`
}

func readDetail(t *testing.T, ctx context.Context, cluster string) (clusterDetail, string) {
	t.Helper()
	var d clusterDetail
	raw := eval(t, ctx, `(() => {
		`+bandsJS+`
		const d = document.querySelector('details[data-cluster="`+cluster+`"]');
		d.open = true;
		const facts = {};
		for (const dt of d.querySelectorAll('.cluster-facts dt')) facts[dt.textContent] = dt.nextElementSibling.textContent;
		return JSON.stringify({
			facts,
			bands: bands(d.querySelectorAll('.history svg[data-window="24"] rect.tl')),
			windows: Array.from(d.querySelectorAll('.history svg')).map((s) => s.dataset.window),
			periods: d.querySelectorAll('.periods li').length,
			graphiql: d.querySelector('.cluster-links a')?.getAttribute('href') ?? '',
			command: d.querySelector('.cluster-links .cmd')?.textContent ?? '',
			typeLinks: Array.from(d.querySelectorAll('.types .object-links a')).map((a) => a.getAttribute('href')),
			typeCmds: Array.from(d.querySelectorAll('.types .object-links .cmd')).map((c) => c.textContent),
		});
	})()`, &d)
	return d, raw
}

// sidePanels is fleetcache's own panels.
type sidePanels struct {
	Self       map[string]string `json:"self"`
	AxisLabels []string          `json:"axisLabels"`
	Scale      string            `json:"scale"` // the rate chart's: "log" after a burst, else "linear"
	Slowest    []string          `json:"slowest"`
}

const readSide = `JSON.stringify({
	self: Object.fromEntries(Array.from(document.querySelectorAll('#self dt')).map((dt) => [dt.textContent, dt.nextElementSibling.textContent])),
	axisLabels: Array.from(document.querySelectorAll('#rate-chart text')).map((t) => t.textContent),
	scale: document.querySelector('#rate-chart svg')?.dataset.scale ?? '',
	slowest: Array.from(document.querySelectorAll('#slowest li')).map((li) => li.dataset.cluster ?? ''),
})`

// testDashboardViews checks, on the page of TestStatusPageInBrowser after
// c2 went down and came back: c2's timeline in its row and in its detail
// (both statuses, in order), its detail (server, version, source, links
// to its objects that GraphiQL opens with the query filled in),
// fleetcache's own panel, the rate chart's axes, the slowest clusters,
// and the What changed view following a change made now; each view at a
// desktop's and a phone's size, with screenshots.
func testDashboardViews(t *testing.T, ctx context.Context, url string, change func(name string)) {
	testcluster.Eventually(t, 30*time.Second, "c2's row timeline DISCONNECTED, then SYNCED", func() (bool, string) {
		got, raw := timelineOf(t, ctx, "c2")
		return wentDownAndBack(got), raw
	})
	if got, raw := timelineOf(t, ctx, "c1"); slices.Contains(got, "DISCONNECTED") || len(got) == 0 || got[len(got)-1] != "SYNCED" {
		t.Errorf("c1's timeline %s: want SYNCED and never DISCONNECTED", raw)
	}

	var d clusterDetail
	testcluster.Eventually(t, 20*time.Second, "c2's detail", func() (bool, string) {
		var raw string
		d, raw = readDetail(t, ctx, "c2")
		return strings.HasPrefix(d.Facts["API server"], "https://127.0.0.1:") && strings.HasPrefix(d.Facts["Kubernetes"], "v") &&
			d.Facts["Source"] != "" && wentDownAndBack(d.Bands) && slices.Equal(d.Windows, []string{"24", "1"}) && d.Periods >= 3 &&
			len(d.TypeLinks) == 2 && len(d.TypeCmds) == 2, raw
	})
	if !strings.HasPrefix(d.GraphiQL, "/graphql#query=") || !strings.Contains(d.GraphiQL, "c2") {
		t.Errorf("c2's GraphiQL link %q", d.GraphiQL)
	}
	if d.Command != "kubectl fleet get pods -A --clusters c2" || !slices.Contains(d.TypeCmds, "kubectl fleet get configmaps -A --clusters c2") {
		t.Errorf("c2's commands %q, %q", d.Command, d.TypeCmds)
	}
	shot := func(name string) {
		browsertest.Viewport(t, ctx, 1366, 768, false)
		browsertest.Screenshot(t, ctx, filepath.Join(browsertest.ScreenshotDir(t), name+"-desktop.png"))
		checkLayout(t, ctx, name+"-phone", 390, 844, true)
		browsertest.Viewport(t, ctx, 1366, 768, false)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => {
		document.querySelector('details[data-cluster="c2"]').scrollIntoView(); return true; })()`)); err != nil {
		t.Fatal(err)
	}
	shot("status-detail")
	// The detail stays within its column, beside fleetcache's panels.
	var spill []string
	if raw := eval(t, ctx, `(() => {
		const col = document.getElementById('view-clusters').getBoundingClientRect();
		const out = [];
		for (const e of document.querySelectorAll('#view-clusters details[data-cluster="c2"] *')) {
			const r = e.getBoundingClientRect();
			if (r.width > 0 && r.right > col.right + 1) out.push((e.className || e.tagName) + ' ' + Math.round(r.right) + ' > ' + Math.round(col.right));
		}
		return JSON.stringify(out.slice(0, 10));
	})()`, &spill); len(spill) > 0 {
		t.Errorf("c2's detail spills out of its column: %s", raw)
	}

	var side sidePanels
	testcluster.Eventually(t, 20*time.Second, "fleetcache's own panel, the rate chart's axes and the slowest clusters", func() (bool, string) {
		raw := eval(t, ctx, readSide, &side)
		return side.Self["Version"] != "" && strings.Contains(side.Self["Memory"], "B") && strings.Contains(side.Self["List slots"], "in use") &&
			side.Self["Up for"] != "" && slices.Contains(side.AxisLabels, "now") && slices.Contains(side.AxisLabels, "−5 min") &&
			len(side.Slowest) == 3 && (side.Scale == "log") == slices.Contains(side.AxisLabels, "per second, log scale") &&
			(side.Scale == "log" || side.Scale == "linear"), raw
	})

	// GraphiQL opens a type's link with its query filled in.
	if graphiql.Built() {
		if err := chromedp.Do(ctx, chromedp.Navigate(url+d.TypeLinks[0])); err != nil {
			t.Fatal(err)
		}
		testcluster.Eventually(t, 30*time.Second, "GraphiQL with the link's query", func() (bool, string) {
			g, raw := browsertest.ReadGraphiQL(t, ctx)
			return strings.Contains(g.Query, "query Objects(") && strings.Contains(g.Query, "resources(filter: $filter"), raw
		})
		if err := chromedp.Do(ctx, chromedp.Navigate(url+"/#changes")); err != nil {
			t.Fatal(err)
		}
	} else if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { location.hash = '#changes'; return true; })()`)); err != nil {
		t.Fatal(err)
	}

	// What changed: a change made now shows at the top, newest first, and
	// the cluster filter narrows to its cluster.
	change("dashboard-changed")
	type changeRow struct{ Type, Cluster, Name string }
	readChanges := `JSON.stringify(Array.from(document.querySelectorAll('#changes-rows tr')).map((tr) =>
		({type: tr.dataset.type, cluster: tr.dataset.cluster, name: tr.dataset.name})))`
	testcluster.Eventually(t, 30*time.Second, "the new ConfigMap ADDED at the top of What changed", func() (bool, string) {
		var rows []changeRow
		raw := eval(t, ctx, readChanges, &rows)
		return len(rows) > 0 && slices.Contains(rows, changeRow{"ADDED", "c1", "dashboard-changed"}), raw
	})
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { const s = document.getElementById('changes-cluster');
		s.value = 'c3'; s.dispatchEvent(new Event('change')); return true; })()`)); err != nil {
		t.Fatal(err)
	}
	testcluster.Eventually(t, 20*time.Second, "What changed of c3 only", func() (bool, string) {
		var rows []changeRow
		raw := eval(t, ctx, readChanges, &rows)
		for _, r := range rows {
			if r.Cluster != "c3" {
				return false, raw
			}
		}
		var status string
		eval(t, ctx, `JSON.stringify(document.getElementById('changes-status').textContent)`, &status)
		return strings.Contains(status, "changes since 1h ago"), raw + " " + status
	})
	shot("status-changes")
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { location.hash = ''; return true; })()`)); err != nil {
		t.Fatal(err)
	}
}
