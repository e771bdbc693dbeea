package app_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetcache/fleetcache/internal/app"
	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/clusters"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/informers"
)

// probeOptions probe often, so that tests see outages within seconds.
func probeOptions() app.Options {
	return app.Options{Informers: informers.Options{
		Resources:      []string{"namespaces", "configmaps"},
		DiscoveryRetry: 300 * time.Millisecond,
		SyncTimeout:    time.Minute,
		ProbeInterval:  time.Second,
		ProbeTimeout:   time.Second,
	}}
}

// serveClusters starts an aggregator on the named test clusters and serves its
// handler on 127.0.0.1; it returns the server's base URL. Everything stops
// when the test ends.
func serveClusters(t *testing.T, opts app.Options, names ...string) (*app.Aggregator, string) {
	t.Helper()
	env := testbed.Env(t)
	agg, err := app.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if err := agg.Registry.Add(clusters.Cluster{Name: name, Config: env.Cluster(name).AdminConfig()}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- agg.Start(ctx) }()
	srv := httptest.NewServer(agg.Handler)
	t.Cleanup(func() {
		// Stopping the aggregator ends its event streams, so that Close,
		// which waits for every request, returns.
		cancel()
		if err := <-done; err != nil {
			t.Errorf("aggregator: %v", err)
		}
		srv.Close()
	})
	return agg, srv.URL
}

// stopAPIServer stops a test cluster's API server and makes sure it runs
// again when the test ends, for the next tests.
func stopAPIServer(t *testing.T, name string) *testcluster.Cluster {
	t.Helper()
	env := testbed.Env(t)
	c := env.Cluster(name)
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Restart fails if the test restarted it already: that is fine.
		_ = c.Restart(context.Background())
	})
	return c
}

// getBody returns the status code and body of a GET.
func getBody(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// TestReadyz shows /readyz follow the initial sync of real clusters: it
// fails while one has never reached its API server, passes once it synced,
// and keeps passing when that API server goes away afterwards (the cached
// objects are still served, marked stale).
func TestReadyz(t *testing.T) {
	c2 := stopAPIServer(t, "c2")
	agg, url := serveClusters(t, probeOptions(), "c1", "c2")
	_, urlExcluding := serveClusters(t, func() app.Options {
		o := probeOptions()
		o.Readyz = health.ReadyzOptions{Exclude: []string{"c2"}}
		return o
	}(), "c1", "c2")

	if code, body := getBody(t, url+"/healthz"); code != 200 || body != "ok" {
		t.Errorf("/healthz = %d %q, want 200 ok", code, body)
	}

	testcluster.Eventually(t, 60*time.Second, "c1 ready and c2 disconnected", func() (bool, string) {
		code, body := getBody(t, url+"/readyz/cluster:c1")
		s, _ := agg.Health.Cluster("c2")
		return code == 200 && s.Status == health.Disconnected, fmt.Sprintf("/readyz/cluster:c1 = %d %q; c2 %s", code, body, s.Status)
	})
	code, body := getBody(t, url+"/readyz?verbose")
	lines := strings.Split(body, "\n")
	wantPrefix := []string{"[+]ping ok", "[+]cluster:c1 ok"}
	if code != 500 || len(lines) != 5 || !cmp.Equal(lines[:2], wantPrefix) ||
		!strings.HasPrefix(lines[2], "[-]cluster:c2 failed: initial sync not done: DISCONNECTED: api server unreachable") ||
		lines[3] != "readyz check failed" || lines[4] != "" {
		t.Errorf("/readyz?verbose before c2 synced = %d:\n%s", code, body)
	}
	if code, body := getBody(t, url+"/readyz?exclude=cluster:c2"); code != 200 || body != "ok" {
		t.Errorf("/readyz?exclude=cluster:c2 = %d %q, want 200 ok", code, body)
	}
	// The second aggregator syncs c1 on its own time.
	testcluster.Eventually(t, 60*time.Second, "/readyz?verbose with c2 excluded by options", func() (bool, string) {
		code, body := getBody(t, urlExcluding+"/readyz?verbose")
		return code == 200 && body == "[+]ping ok\n[+]cluster:c1 ok\nreadyz check passed\n", fmt.Sprintf("%d %q", code, body)
	})

	if err := c2.Restart(t.Context()); err != nil {
		t.Fatal(err)
	}
	testcluster.Eventually(t, 60*time.Second, "/readyz passing", func() (bool, string) {
		code, body := getBody(t, url+"/readyz")
		return code == 200 && body == "ok", fmt.Sprintf("%d %q", code, body)
	})
	if code, body := getBody(t, url+"/readyz?verbose"); code != 200 || body != "[+]ping ok\n[+]cluster:c1 ok\n[+]cluster:c2 ok\nreadyz check passed\n" {
		t.Errorf("/readyz?verbose after the sync = %d %q", code, body)
	}

	// After the initial sync an outage does not make the aggregator unready.
	stopAPIServer(t, "c2")
	testcluster.Eventually(t, 60*time.Second, "c2 disconnected", func() (bool, string) {
		s, _ := agg.Health.Cluster("c2")
		return s.Status == health.Disconnected && s.Stale, fmt.Sprintf("%s stale=%v", s.Status, s.Stale)
	})
	if code, body := getBody(t, url+"/readyz/cluster:c2"); code != 200 || body != "ok" {
		t.Errorf("/readyz/cluster:c2 while c2 is down after its sync = %d %q, want 200 ok", code, body)
	}
	if code, body := getBody(t, url+"/readyz/cluster:c9"); code != 404 {
		t.Errorf("/readyz/cluster:c9 = %d %q, want 404", code, body)
	}
	if err := c2.Restart(t.Context()); err != nil {
		t.Fatal(err)
	}
}
