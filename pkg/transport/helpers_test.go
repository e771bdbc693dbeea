package transport

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/fleetcache/fleetcache/internal/graphqltest"
	"github.com/fleetcache/fleetcache/internal/webasset"
	"github.com/fleetcache/fleetcache/pkg/graphql"
	"github.com/fleetcache/fleetcache/pkg/graphql/cursor"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/views"
)

// The fixtures of internal/graphqltest, by the names these tests use.
var (
	version      = graphqltest.Version
	waitFor      = graphqltest.WaitFor
	benchObjects = graphqltest.BenchObjects
	memory       = graphqltest.Memory
)

const (
	eventsQuery   = graphqltest.EventsQuery
	benchQuery    = graphqltest.BenchQuery
	pageQuery     = graphqltest.PageQuery
	clustersQuery = `{ clusters { name } }`
)

type latencies = graphqltest.Latencies

// fixture is graphqltest.Fixture.
type fixture struct {
	ix      *index.Index
	tracker *health.Tracker
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	f := graphqltest.NewFixture(t)
	return &fixture{ix: f.Index, tracker: f.Tracker}
}

// testServer is a transport Server and the engine it serves.
type testServer struct {
	*Server
	engine *graphql.Server
	ix     *index.Index
	// hub reads the engine's subscriptions.
	hub engineStats
}

// engineStats reads the engine's resourceEvents subscriptions.
type engineStats struct{ e *graphql.Server }

func (h engineStats) Subscribers() int { n, _ := h.e.Subscriptions(); return n }
func (h engineStats) Queued() int      { _, q := h.e.Subscriptions(); return q }

// newServer returns a transport with opts over an engine with the engine
// options, if any, reading ix and h.
func newServer(t testing.TB, ix *index.Index, h graphql.Health, opts Options, engine ...graphql.Options) *testServer {
	t.Helper()
	var eo graphql.Options
	if len(engine) > 0 {
		eo = engine[0]
	}
	if opts.BrowserPage == nil {
		// A page with an asset, as internal/app serves GraphiQL's, built or not.
		opts.BrowserPage, opts.IsBrowserAsset = browserPage(), webasset.IsAssetRequest
	}
	e, err := graphql.New(views.Of(ix), h, eo)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(e, opts)
	if err != nil {
		t.Fatal(err)
	}
	return &testServer{Server: s, engine: e, ix: ix, hub: engineStats{e}}
}

// startServer is newServer, running until the test ends.
func startServer(t testing.TB, ix *index.Index, h graphql.Health, opts Options, engine ...graphql.Options) *testServer {
	t.Helper()
	s := newServer(t, ix, h, opts, engine...)
	runServer(t, s)
	return s
}

// runServer runs the engine's and the transport's Start until stop,
// which returns the transport's error; the test's cleanup stops them
// too, and reports the error.
func runServer(t testing.TB, s *testServer) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	go func() { done <- s.engine.Start(ctx) }()
	go func() { done <- s.Server.Start(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			err = <-done
			if e := <-done; err == nil {
				err = e
			}
		})
		return err
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("Start: %v", err)
		}
	})
	return stop
}

// epochCursor is the since cursor of revision rev of s's index.
func epochCursor(s *testServer, rev uint64) string {
	return cursor.EncodeRevision(cursor.Revision{Epoch: s.ix.Epoch(), Revision: rev})
}

// mustJSON encodes v.
func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// browserPage is a page linking one script, served as internal/app serves
// GraphiQL's page and bundle.
func browserPage() *webasset.Page {
	assets := map[string]webasset.File{"page.js": webasset.New([]byte("document.title = 'fleetcache';\n"), "text/javascript; charset=utf-8")}
	link, _ := webasset.AssetLink(assets, "page.js") // it is in assets
	page := `<!doctype html><html><head><title>fleetcache</title><script src="` + link + `"></script></head></html>`
	return &webasset.Page{Page: webasset.New([]byte(page), "text/html; charset=utf-8"), Assets: assets,
		CSP: "default-src 'none'; script-src 'self'", What: "the test page"}
}
