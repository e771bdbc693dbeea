package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/fleetcache/fleetcache/internal/app"
	"github.com/fleetcache/fleetcache/internal/browsertest"
	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/clusters"
	"github.com/fleetcache/fleetcache/pkg/inventory"
)

// browser starts a headless chromium (see internal/browsertest).
func browser(t *testing.T) (context.Context, func() []string) { return browsertest.New(t) }

// pageRow is what the status page shows for one cluster.
type pageRow struct {
	Cluster   string            `json:"cluster"`
	Status    string            `json:"status"`
	Fresh     string            `json:"fresh"`
	Objects   string            `json:"objects"`
	Rate      string            `json:"rate"`
	Message   string            `json:"message"`   // the last error, in full
	Hidden    bool              `json:"hidden"`    // left out by the filter
	Resources map[string]string `json:"resources"` // resource → count shown in the drill-down
}

// readRows is the script that reads the clusters as the user sees them, in
// their order on the page. After openDrillDowns it opens each cluster's
// drill-down, as a click would, so that a later read sees its types.
const readRows = `JSON.stringify(Array.from(document.querySelectorAll('#clusters details.cluster')).map((d) => {
	if (!d.open && window.fleetcacheTestOpen) d.open = true;
	return {
		cluster: d.querySelector('.name').textContent,
		status: d.querySelector('.status .badge').textContent,
		fresh: d.querySelector('.fresh').textContent,
		objects: d.querySelector('.objects').textContent,
		rate: d.querySelector('.rate-now').textContent,
		message: d.querySelector('.error').title,
		hidden: d.hidden,
		resources: Object.fromEntries(Array.from(d.querySelectorAll('.types tbody tr')).map(
			(tr) => [tr.querySelector('.resource').textContent, tr.querySelector('.count').textContent])),
	};
}))`

// rows returns the clusters the page shows, by name, and their names in
// the page's order.
func rows(t *testing.T, ctx context.Context) (map[string]pageRow, []string, string) {
	t.Helper()
	out, err := chromedp.Run(ctx, chromedp.Evaluate[string](readRows))
	if err != nil {
		t.Fatalf("read the page: %v", err)
	}
	var list []pageRow
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("decode %s: %v", out, err)
	}
	byName := map[string]pageRow{}
	var order []string
	for _, r := range list {
		byName[r.Cluster] = r
		order = append(order, r.Cluster)
	}
	return byName, order, out
}

// synced reports whether the page shows r SYNCED and current, with a
// positive object count for each type.
func synced(r pageRow) bool {
	ok := r.Status == "SYNCED" && r.Fresh == "current" && r.Objects != "0" && len(r.Resources) == 2
	for _, n := range r.Resources {
		ok = ok && n != "" && n != "0"
	}
	return ok
}

// openDrillDowns makes readRows open every cluster's drill-down.
func openDrillDowns(t *testing.T, ctx context.Context) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.fleetcacheTestOpen = true`)); err != nil {
		t.Fatal(err)
	}
}

// summaryState is the page's fleet summary.
type summaryState struct {
	Clusters string   `json:"clusters"`
	Statuses []string `json:"statuses"` // the chips: "2 SYNCED"
	Objects  string   `json:"objects"`
	Rate     string   `json:"rate"`
	Stalest  string   `json:"stalest"`
	Detail   string   `json:"detail"`
}

const readSummary = `JSON.stringify({
	clusters: document.getElementById('sum-clusters').textContent,
	statuses: Array.from(document.querySelectorAll('#sum-statuses button')).map((b) => b.textContent),
	objects: document.getElementById('sum-objects').textContent,
	rate: document.getElementById('sum-rate').textContent,
	stalest: document.getElementById('sum-stalest').textContent,
	detail: document.getElementById('sum-stalest-detail').textContent,
})`

func summary(t *testing.T, ctx context.Context) (summaryState, string) {
	t.Helper()
	out, err := chromedp.Run(ctx, chromedp.Evaluate[string](readSummary))
	if err != nil {
		t.Fatalf("read the summary: %v", err)
	}
	var s summaryState
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("decode %s: %v", out, err)
	}
	return s, out
}

// layout is what the layout checks read: the page's width against the
// viewport's, elements wider than the viewport, and where the summary ends.
type layout struct {
	InnerWidth     float64  `json:"innerWidth"` // the window, a vertical scroll bar included
	ViewportWidth  float64  `json:"viewportWidth"`
	ViewportHeight float64  `json:"viewportHeight"`
	ScrollWidth    float64  `json:"scrollWidth"`
	Overflowing    []string `json:"overflowing"`
	SummaryBottom  float64  `json:"summaryBottom"`
	SummaryRight   float64  `json:"summaryRight"`
}

const readLayout = `(() => {
	window.scrollTo(0, 0);
	const vw = document.documentElement.clientWidth;
	const overflowing = [];
	for (const e of document.querySelectorAll('body *')) {
		const r = e.getBoundingClientRect();
		if (r.width === 0 && r.height === 0) continue;
		if (r.left < -1 || r.right > vw + 1) overflowing.push((e.className || e.tagName) + ' ' + Math.round(r.left) + '..' + Math.round(r.right));
		if (overflowing.length > 10) break;
	}
	const s = document.getElementById('summary').getBoundingClientRect();
	return JSON.stringify({
		innerWidth: window.innerWidth,
		viewportWidth: vw,
		viewportHeight: window.innerHeight,
		scrollWidth: document.documentElement.scrollWidth,
		overflowing,
		summaryBottom: s.bottom,
		summaryRight: s.right,
	});
})()`

// checkLayout sets the viewport, saves a screenshot named name, and checks
// that nothing overflows the viewport horizontally and that the whole
// summary shows without scrolling.
func checkLayout(t *testing.T, ctx context.Context, name string, width, height int64, mobile bool) {
	t.Helper()
	browsertest.Viewport(t, ctx, width, height, mobile)
	var l layout
	var raw string
	// The page lays out again after the resize: poll until it settled.
	testcluster.Eventually(t, 10*time.Second, "the page laid out at "+name, func() (bool, string) {
		out, err := chromedp.Run(ctx, chromedp.Evaluate[string](readLayout))
		if err != nil {
			t.Fatalf("read the layout: %v", err)
		}
		raw = out
		if err := json.Unmarshal([]byte(out), &l); err != nil {
			t.Fatalf("decode %s: %v", out, err)
		}
		return l.InnerWidth == float64(width), out
	})
	browsertest.Screenshot(t, ctx, filepath.Join(browsertest.ScreenshotDir(t), name+".png"))
	if l.ScrollWidth > l.ViewportWidth || len(l.Overflowing) > 0 {
		t.Errorf("%s: the page overflows horizontally: %s", name, raw)
	}
	if l.SummaryBottom > l.ViewportHeight || l.SummaryBottom <= 0 {
		t.Errorf("%s: the summary does not show whole without scrolling: %s", name, raw)
	}
}

// TestStatusPageInBrowser opens the status page in headless chromium on
// three clusters and follows it, without a reload: the summary, the
// clusters' change rates once objects change, a cluster turning
// DISCONNECTED when its API server stops (it moves to the top, stale, and
// is named the stalest), the filter, the per-type drill-down, the layout at
// a desktop's and a phone's size, and the cluster SYNCED again when its
// API server is back.
func TestStatusPageInBrowser(t *testing.T) {
	env := testbed.Env(t)
	ctx, problems := browser(t)
	browsertest.Viewport(t, ctx, 1366, 768, false)
	_, url := serveClusters(t, probeOptions(), "c1", "c2", "c3")

	if err := chromedp.Do(ctx, chromedp.Navigate(url+"/")); err != nil {
		t.Fatalf("open the status page: %v", err)
	}
	openDrillDowns(t, ctx)
	testcluster.Eventually(t, 60*time.Second, "the page showing c1, c2 and c3 SYNCED with object counts", func() (bool, string) {
		got, _, raw := rows(t, ctx)
		return len(got) == 3 && synced(got["c1"]) && synced(got["c2"]) && synced(got["c3"]), raw
	})
	// A reload would drop this mark: the updates below must come without one.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.fleetcacheTestMark = true`)); err != nil {
		t.Fatal(err)
	}
	live, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('live').textContent`))
	if err != nil || !strings.HasPrefix(live, "Live") {
		t.Errorf("the page does not say it is live: %q %v", live, err)
	}
	testcluster.Eventually(t, 30*time.Second, "the summary of three current clusters", func() (bool, string) {
		s, raw := summary(t, ctx)
		return s.Clusters == "3" && slices.Equal(s.Statuses, []string{"3 SYNCED"}) && s.Objects != "0" &&
			s.Stalest == "none" && s.Detail == "every cluster is current", raw
	})

	// Changes in c1 show as its change rate once their 10 s interval ends
	// and the page refreshes. The rate shown is the last complete
	// interval's, so the changes go on (one a poll) until the page shows it.
	kube := kubernetes.NewForConfigOrDie(env.Cluster("c1").AdminConfig())
	cm, err := kube.CoreV1().ConfigMaps("default").Create(t.Context(),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dashboard-rate", Namespace: "default"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = kube.CoreV1().ConfigMaps("default").Delete(context.Background(), cm.Name, metav1.DeleteOptions{})
	})
	changes := 0
	testcluster.Eventually(t, 60*time.Second, "c1's change rate above zero, and the fleet's", func() (bool, string) {
		changes++
		cm.Data = map[string]string{"n": fmt.Sprint(changes)}
		if cm, err = kube.CoreV1().ConfigMaps("default").Update(t.Context(), cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		got, _, raw := rows(t, ctx)
		s, _ := summary(t, ctx)
		return got["c1"].Rate != "0/s" && s.Rate != "0/s", raw
	})

	c2 := stopAPIServer(t, "c2")
	testcluster.Eventually(t, 60*time.Second, "c2 DISCONNECTED and stale, at the top, named the stalest", func() (bool, string) {
		got, order, raw := rows(t, ctx)
		c := got["c2"]
		s, _ := summary(t, ctx)
		return c.Status == "DISCONNECTED" && strings.HasPrefix(c.Fresh, "stale for ") && strings.Contains(c.Message, "unreachable") &&
			len(order) == 3 && order[0] == "c2" && synced(got["c1"]) &&
			s.Stalest == "c2" && strings.HasPrefix(s.Detail, "stale for ") && slices.Equal(s.Statuses, []string{"1 DISCONNECTED", "2 SYNCED"}), raw
	})
	if mark, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.fleetcacheTestMark === true`)); err != nil || !mark {
		t.Errorf("the page was reloaded (mark %v, %v)", mark, err)
	}

	// The drill-down of c2 lists its types, each stale.
	types, err := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify(Array.from(
		document.querySelectorAll('details[data-cluster="c2"] .types tbody tr')).map((tr) => tr.textContent))`))
	if err != nil || !strings.Contains(types, "configmaps") || !strings.Contains(types, "namespaces") || !strings.Contains(types, "stale for") {
		t.Errorf("c2's drill-down: %s %v", types, err)
	}

	// The fleet by type: each type current in two clusters of three.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById('by-type').open = true`)); err != nil {
		t.Fatal(err)
	}
	testcluster.Eventually(t, 20*time.Second, "each type current in 2 of 3 clusters", func() (bool, string) {
		out, err := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify(Object.fromEntries(Array.from(
			document.querySelectorAll('#by-type-rows tr')).map((tr) => [tr.dataset.resource, tr.children[2].textContent])))`))
		if err != nil {
			t.Fatal(err)
		}
		var byType map[string]string
		if err := json.Unmarshal([]byte(out), &byType); err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"configmaps": "2 of 3 clusters", "namespaces": "2 of 3 clusters"}
		return cmp.Equal(byType, want), out
	})

	// The filter: by name, and by status with the summary's chip.
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#filter"), "c3")); err != nil {
		t.Fatal(err)
	}
	testcluster.Eventually(t, 10*time.Second, "only c3 shown", func() (bool, string) {
		got, _, raw := rows(t, ctx)
		return !got["c3"].Hidden && got["c1"].Hidden && got["c2"].Hidden, raw
	})
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#sum-statuses button[data-status="DISCONNECTED"]`))); err != nil {
		t.Fatal(err)
	}
	testcluster.Eventually(t, 10*time.Second, "only the DISCONNECTED c2 shown", func() (bool, string) {
		got, _, raw := rows(t, ctx)
		return !got["c2"].Hidden && got["c1"].Hidden && got["c3"].Hidden, raw
	})
	checkLayout(t, ctx, "status-3-filtered-desktop", 1366, 768, false)
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { const f = document.getElementById('filter');
		f.value = ''; f.dispatchEvent(new Event('input')); return true; })()`)); err != nil {
		t.Fatal(err)
	}
	testcluster.Eventually(t, 10*time.Second, "every cluster shown again", func() (bool, string) {
		got, _, raw := rows(t, ctx)
		return !got["c1"].Hidden && !got["c2"].Hidden && !got["c3"].Hidden, raw
	})
	checkLayout(t, ctx, "status-3-desktop", 1366, 768, false)
	checkLayout(t, ctx, "status-3-phone", 390, 844, true)
	browsertest.Viewport(t, ctx, 1366, 768, false)

	if err := c2.Restart(t.Context()); err != nil {
		t.Fatal(err)
	}
	testcluster.Eventually(t, 60*time.Second, "the page showing c2 SYNCED again", func() (bool, string) {
		got, _, raw := rows(t, ctx)
		return synced(got["c2"]), raw
	})
	testDashboardViews(t, ctx, url, func(name string) {
		if _, err := kube.CoreV1().ConfigMaps("default").Create(t.Context(),
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = kube.CoreV1().ConfigMaps("default").Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	})
	for _, p := range problems() {
		t.Errorf("page: %s", p)
	}
}

// TestStatusPageAt300Clusters registers 300 clusters, a hundred aliases of
// each of the three test API servers, and checks that the page shows them
// all, that when one API server stops its hundred clusters come first,
// stale, and that the layout holds at a desktop's and a phone's size.
func TestStatusPageAt300Clusters(t *testing.T) {
	env := testbed.Env(t)
	ctx, problems := browser(t)
	browsertest.Viewport(t, ctx, 1366, 768, false)
	agg, url := serveClusters(t, probeOptions())
	labels := map[string]inventory.Info{}
	for i := range 300 {
		server := []string{"c1", "c2", "c3"}[i%3]
		name := fmt.Sprintf("%s-alias-%03d", server, i/3)
		if err := agg.Registry.Add(clusters.Cluster{Name: name, Config: env.Cluster(server).AdminConfig()}); err != nil {
			t.Fatal(err)
		}
		labels[name] = inventory.Info{Labels: map[string]string{"server": server}}
	}
	agg.Inventory.Set(labels)
	// The page opens once the fleet is SYNCED. Under the race detector the
	// 300 starts take seconds of CPU, during which the page's first query
	// (25 ms for 1,000 clusters in a normal build: BenchmarkStatusPageQuery)
	// can outlast the server's request timeout on a shared CI machine. The
	// page's life while clusters start is TestStatusPageInBrowser's.
	testcluster.Eventually(t, 4*time.Minute, "300 SYNCED clusters in the API", func() (bool, string) {
		var d struct{ Clusters []struct{ Status string } }
		if err := gql(strings.TrimPrefix(url, "http://"), `{ clusters { status } }`, &d); err != nil {
			return false, err.Error()
		}
		n := 0
		for _, c := range d.Clusters {
			if c.Status == "SYNCED" {
				n++
			}
		}
		return n == 300, fmt.Sprintf("%d of %d SYNCED", n, len(d.Clusters))
	})
	if err := chromedp.Do(ctx, chromedp.Navigate(url+"/")); err != nil {
		t.Fatalf("open the status page: %v", err)
	}
	testcluster.Eventually(t, time.Minute, "300 SYNCED clusters in the summary", func() (bool, string) {
		s, raw := summary(t, ctx)
		return s.Clusters == "300" && slices.Equal(s.Statuses, []string{"300 SYNCED"}), raw
	})
	checkLayout(t, ctx, "status-300-desktop", 1366, 768, false)
	checkLayout(t, ctx, "status-300-phone", 390, 844, true)
	browsertest.Viewport(t, ctx, 1366, 768, false)

	stopAPIServer(t, "c3")
	testcluster.Eventually(t, 90*time.Second, "c3's hundred aliases first, DISCONNECTED and stale", func() (bool, string) {
		got, order, raw := rows(t, ctx)
		if len(order) != 300 {
			return false, raw
		}
		for i, name := range order {
			c3 := strings.HasPrefix(name, "c3-")
			r := got[name]
			if c3 != (i < 100) || c3 != (r.Status == "DISCONNECTED" && strings.HasPrefix(r.Fresh, "stale for ")) {
				return false, fmt.Sprintf("row %d: %+v", i, r)
			}
		}
		s, _ := summary(t, ctx)
		return slices.Equal(s.Statuses, []string{"100 DISCONNECTED", "200 SYNCED"}) && strings.HasPrefix(s.Stalest, "c3-"), raw
	})
	// The filter on a label: c3's hundred aliases.
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#filter"), "server=c3")); err != nil {
		t.Fatal(err)
	}
	testcluster.Eventually(t, 10*time.Second, "only the clusters labelled server=c3 shown", func() (bool, string) {
		got, _, raw := rows(t, ctx)
		n := 0
		for name, r := range got {
			if r.Hidden == strings.HasPrefix(name, "c3-") {
				return false, name + ": " + raw
			}
			if !r.Hidden {
				n++
			}
		}
		return n == 100, raw
	})
	checkLayout(t, ctx, "status-300-filtered-phone", 390, 844, true)
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { const f = document.getElementById('filter');
		f.value = ''; f.dispatchEvent(new Event('input')); return true; })()`)); err != nil {
		t.Fatal(err)
	}
	checkLayout(t, ctx, "status-300-disconnected-desktop", 1366, 768, false)
	checkLayout(t, ctx, "status-300-disconnected-phone", 390, 844, true)
	for _, p := range problems() {
		t.Errorf("page: %s", p)
	}
}

// tokenFormState is what the status page shows of its token form.
type tokenFormState struct {
	Shown   bool   `json:"shown"`
	Message string `json:"message"`
	Stored  string `json:"stored"` // the token in sessionStorage
	Local   int    `json:"local"`  // how many localStorage entries
}

const readTokenForm = `JSON.stringify({
	shown: !document.getElementById('token-form').hidden,
	message: document.getElementById('token-message').textContent,
	stored: sessionStorage.getItem('fleetcache.status.token') ?? '',
	local: localStorage.length,
})`

func tokenForm(t *testing.T, ctx context.Context) (tokenFormState, string) {
	t.Helper()
	out, err := chromedp.Run(ctx, chromedp.Evaluate[string](readTokenForm))
	if err != nil {
		t.Fatalf("read the token form: %v", err)
	}
	var s tokenFormState
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("decode %s: %v", out, err)
	}
	return s, out
}

// enterToken types tok into the page's token form and submits it.
func enterToken(t *testing.T, ctx context.Context, tok string) {
	t.Helper()
	if err := chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS("#token"), tok),
		chromedp.Click(chromedp.CSS("#token-form button[type=submit]")),
	); err != nil {
		t.Fatalf("enter a token: %v", err)
	}
}

// TestStatusPageWithAuthentication opens the status page of an aggregator
// that authenticates callers: the page, served without a token, asks for
// one, keeps asking while the token is wrong, and shows the clusters once a
// valid token is entered, without a reload.
func TestStatusPageWithAuthentication(t *testing.T) {
	env := testbed.Env(t)
	ctx, problems := browser(t)
	opts := probeOptions()
	opts.Auth = app.AuthOptions{Authn: app.AuthnTokenReview, AuthnConfig: env.Cluster("c1").AdminConfig()}
	_, url := serveClusters(t, opts, "c1")

	if err := chromedp.Do(ctx, chromedp.Navigate(url+"/")); err != nil {
		t.Fatalf("open the status page: %v", err)
	}
	testcluster.Eventually(t, 30*time.Second, "the page asking for a token", func() (bool, string) {
		f, raw := tokenForm(t, ctx)
		return f.Shown && strings.Contains(f.Message, "needs a bearer token"), raw
	})
	if got, _, raw := rows(t, ctx); len(got) != 0 {
		t.Errorf("the page shows clusters without a token: %s", raw)
	}

	enterToken(t, ctx, "not-a-token")
	testcluster.Eventually(t, 30*time.Second, "the page refusing the wrong token", func() (bool, string) {
		f, raw := tokenForm(t, ctx)
		return f.Shown && strings.Contains(f.Message, "did not accept this token"), raw
	})
	if got, _, raw := rows(t, ctx); len(got) != 0 {
		t.Errorf("the page shows clusters with a wrong token: %s", raw)
	}

	alice := token(t, "alice")
	openDrillDowns(t, ctx)
	enterToken(t, ctx, alice)
	testcluster.Eventually(t, 60*time.Second, "the page showing c1 SYNCED with alice's token", func() (bool, string) {
		got, _, raw := rows(t, ctx)
		f, _ := tokenForm(t, ctx)
		return len(got) == 1 && synced(got["c1"]) && !f.Shown, raw
	})
	testcluster.Eventually(t, 30*time.Second, "the page live with alice's token", func() (bool, string) {
		live, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('live').textContent`))
		return err == nil && strings.HasPrefix(live, "Live"), live
	})
	if f, raw := tokenForm(t, ctx); f.Stored != alice || f.Local != 0 {
		t.Errorf("the token is not kept in sessionStorage only: %s", raw)
	}
	for _, p := range problems() {
		t.Errorf("page: %s", p)
	}
}
