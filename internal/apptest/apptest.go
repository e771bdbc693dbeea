// Package apptest runs the application (internal/app) on the test bed of
// internal/testcluster, for the end-to-end tests of several packages: Start
// runs an Aggregator over the test bed's clusters and serves its handler
// on 127.0.0.1, as a Fleet; Informers are informer options that notice
// changes of state quickly. It needs the test bed's API servers.
package apptest

import (
	"context"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/fleetcache/fleetcache/internal/app"
	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/clusters"
	"github.com/fleetcache/fleetcache/pkg/informers"
)

// Fleet is an Aggregator over the test bed's clusters, its handler served
// on 127.0.0.1.
type Fleet struct {
	*app.Aggregator
	// URL is the base URL of the HTTP server: /graphql, /mcp … below it.
	URL string
	// Stop stops the aggregator and the HTTP server and waits for them; it
	// also runs when the test ends, and does nothing the second time.
	Stop func()
}

// Informers returns informer options for resources that probe every
// second and retry discovery often, so that tests observe changes of a
// cluster's state quickly.
func Informers(resources ...string) informers.Options {
	return informers.Options{
		Resources:      resources,
		DiscoveryRetry: 300 * time.Millisecond,
		SyncTimeout:    time.Minute,
		ProbeInterval:  time.Second,
		ProbeTimeout:   time.Second,
	}
}

// Start runs an aggregator with opts over every cluster of env, each
// reached as its administrator, and serves its handler on 127.0.0.1.
func Start(t testing.TB, env *testcluster.Env, opts app.Options) *Fleet {
	t.Helper()
	agg, err := app.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range env.Clusters() {
		if err := agg.Registry.Add(clusters.Cluster{Name: c.Name(), Config: c.AdminConfig()}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- agg.Start(ctx) }()
	srv := httptest.NewServer(agg.Handler)
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("aggregator: %v", err)
			}
			srv.Close()
		})
	}
	t.Cleanup(stop)
	return &Fleet{Aggregator: agg, URL: srv.URL, Stop: stop}
}
