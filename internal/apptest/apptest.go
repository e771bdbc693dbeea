// Package apptest runs the application (internal/app) on the test bed of
// internal/testcluster, for the end-to-end tests of several packages: Start
// runs an Aggregator over the test bed's clusters and serves its handler
// on 127.0.0.1, as a Fleet; Informers are informer options that notice
// changes of state quickly. It needs the test bed's API servers.
package apptest

import (
	"context"
	"encoding/pem"
	"net/http"
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
	// CA is the PEM of the server's certificate, when it serves TLS
	// (Serving.TLS).
	CA []byte
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

// Serving says how StartServing serves the aggregator's handler.
type Serving struct {
	// TLS serves https with a certificate of httptest's (Fleet.CA):
	// kubectl and client-go send bearer tokens over https only.
	TLS bool
	// Wrap, when set, wraps the handler (a test's recorder of requests).
	Wrap func(http.Handler) http.Handler
}

// Start runs an aggregator with opts over every cluster of env, each
// reached as its administrator, and serves its handler on 127.0.0.1.
func Start(t testing.TB, env *testcluster.Env, opts app.Options) *Fleet {
	t.Helper()
	return StartServing(t, env, opts, Serving{})
}

// StartServing is Start, serving as serving says.
func StartServing(t testing.TB, env *testcluster.Env, opts app.Options, serving Serving) *Fleet {
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
	var handler http.Handler = agg.Handler
	if serving.Wrap != nil {
		handler = serving.Wrap(handler)
	}
	srv := httptest.NewUnstartedServer(handler)
	var ca []byte
	if serving.TLS {
		srv.StartTLS()
		ca = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	} else {
		srv.Start()
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("aggregator: %v", err)
			}
			// Long requests (watches) would hold Close until they end.
			srv.CloseClientConnections()
			srv.Close()
		})
	}
	t.Cleanup(stop)
	return &Fleet{Aggregator: agg, URL: srv.URL, CA: ca, Stop: stop}
}
