package app_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/fleetcache/fleetcache/internal/app"
	"github.com/fleetcache/fleetcache/internal/browsertest"
	"github.com/fleetcache/fleetcache/internal/testcluster"
)

// browser starts a headless chromium (see internal/browsertest).
func browser(t *testing.T) (context.Context, func() []string) { return browsertest.New(t) }

// pageRow is what the status page shows for one cluster.
type pageRow struct {
	Cluster   string            `json:"cluster"`
	Status    string            `json:"status"`
	Objects   string            `json:"objects"`
	Message   string            `json:"message"`
	Resources map[string]string `json:"resources"` // resource → count shown
}

// readRows is the script that reads the table as the user sees it.
const readRows = `JSON.stringify(Array.from(document.querySelectorAll('#clusters tbody tr')).map((tr) => ({
	cluster: tr.querySelector('th').textContent,
	status: tr.querySelector('td.status .badge').textContent,
	objects: tr.querySelector('td.objects').textContent,
	message: tr.querySelector('td.message').textContent,
	resources: Object.fromEntries(Array.from(tr.querySelectorAll('.resources li')).map(
		(li) => [li.querySelector('.resource').textContent, li.querySelector('.count').textContent])),
})))`

func rows(t *testing.T, ctx context.Context) (map[string]pageRow, string) {
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
	for _, r := range list {
		byName[r.Cluster] = r
	}
	return byName, out
}

// synced reports whether the page shows r SYNCED with a positive object
// count for each type.
func synced(r pageRow) bool {
	ok := r.Status == "SYNCED" && r.Objects != "0" && len(r.Resources) == 2
	for _, n := range r.Resources {
		ok = ok && n != "" && n != "0"
	}
	return ok
}

// TestStatusPageInBrowser opens the status page in headless chromium and
// watches it, without a reload, show a cluster turn DISCONNECTED when its
// API server stops and SYNCED again when it is back.
func TestStatusPageInBrowser(t *testing.T) {
	ctx, problems := browser(t)
	_, url := serveClusters(t, probeOptions(), "c1", "c2")

	if err := chromedp.Do(ctx, chromedp.Navigate(url+"/")); err != nil {
		t.Fatalf("open the status page: %v", err)
	}
	testcluster.Eventually(t, 60*time.Second, "the page showing c1 and c2 SYNCED with object counts", func() (bool, string) {
		got, raw := rows(t, ctx)
		return len(got) == 2 && synced(got["c1"]) && synced(got["c2"]), raw
	})
	// A reload would drop this mark: the updates below must come without one.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.fleetcacheTestMark = true`)); err != nil {
		t.Fatal(err)
	}
	live, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('live').textContent`))
	if err != nil || !strings.HasPrefix(live, "Live") {
		t.Errorf("the page does not say it is live: %q %v", live, err)
	}

	c2 := stopAPIServer(t, "c2")
	testcluster.Eventually(t, 60*time.Second, "the page showing c2 DISCONNECTED", func() (bool, string) {
		got, raw := rows(t, ctx)
		c := got["c2"]
		return c.Status == "DISCONNECTED" && strings.Contains(c.Message, "unreachable") && synced(got["c1"]), raw
	})
	if mark, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.fleetcacheTestMark === true`)); err != nil || !mark {
		t.Errorf("the page was reloaded (mark %v, %v)", mark, err)
	}

	if err := c2.Restart(t.Context()); err != nil {
		t.Fatal(err)
	}
	testcluster.Eventually(t, 60*time.Second, "the page showing c2 SYNCED again", func() (bool, string) {
		got, raw := rows(t, ctx)
		return synced(got["c2"]), raw
	})
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
	if got, raw := rows(t, ctx); len(got) != 0 {
		t.Errorf("the page shows clusters without a token: %s", raw)
	}

	enterToken(t, ctx, "not-a-token")
	testcluster.Eventually(t, 30*time.Second, "the page refusing the wrong token", func() (bool, string) {
		f, raw := tokenForm(t, ctx)
		return f.Shown && strings.Contains(f.Message, "did not accept this token"), raw
	})
	if got, raw := rows(t, ctx); len(got) != 0 {
		t.Errorf("the page shows clusters with a wrong token: %s", raw)
	}

	alice := token("alice")
	enterToken(t, ctx, alice)
	testcluster.Eventually(t, 60*time.Second, "the page showing c1 SYNCED with alice's token", func() (bool, string) {
		got, raw := rows(t, ctx)
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
