package informers_test

import (
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/clusters"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index"
)

// recoveryRound numbers the namespaces of BenchmarkRecovery's rounds
// across runs (-count), which share the package's clusters.
var recoveryRound int

// BenchmarkRecovery measures how long after a cluster can be reached again
// its data is current: from the moment the proxy accepts again (partition)
// or the restarted API server first answers /readyz (restart) to the
// moment the cluster is reported SYNCED, with the index at that moment
// checked against the server (checkMoment: a difference fails the
// benchmark). Each round seeds a namespace, breaks the connection, changes
// objects meanwhile (an add, an update, a delete, a delete and re-create)
// and restores it; every round is logged with the fleet's requests to the
// server (-v shows them all: go test keeps 10 lines of a benchmark's log
// otherwise), and p50, p99 and max are reported in seconds. Run it with a
// fixed count, as docs/benchmarks.md does: -benchtime=20x.
func BenchmarkRecovery(b *testing.B) {
	env := testbed.Env(b)
	b.Run("partition", func(b *testing.B) {
		benchPartition(b, env, env.Cluster("c1"), false)
	})
	b.Run("partition-compaction", func(b *testing.B) {
		e := noWatchCacheEnv(b)
		benchPartition(b, e, e.Cluster("c1"), true)
	})
	b.Run("restart-compaction", func(b *testing.B) {
		c := env.Cluster("c2")
		// One secondary for every round: it changes the cluster while c's
		// API server is down.
		second, err := c.StartSecondary(b.Context())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = second.Stop() })
		benchRounds(b, c, c.AdminConfig(), func(f *fleet, ns string) recovery {
			return outageRound(b, f, env, c, second, ns, true)
		})
	})
}

// benchPartition runs rounds of partitionRound against c, whose API server
// stays up, through a proxy.
func benchPartition(b *testing.B, e *testcluster.Env, c *testcluster.Cluster, compact bool) {
	proxy, err := c.StartProxy()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(proxy.Close)
	dc := testcluster.Dynamic(b, c.AdminConfig())
	benchRounds(b, c, proxy.Config(c.AdminConfig()), func(f *fleet, ns string) recovery {
		return partitionRound(b, f, e, proxy, c.Name(), dc, ns, compact)
	})
}

// benchRounds starts a fleet of cluster c, reached with cfg, and runs round
// in b.Loop, each time on a namespace of its own that seedOutage seeded and
// the fleet holds. It logs every round with the fleet's requests to the
// server and reports p50, p99 and max of the recovery times.
func benchRounds(b *testing.B, c *testcluster.Cluster, cfg *rest.Config, round func(f *fleet, ns string) recovery) {
	trace := &requestTrace{}
	cfg.Wrap(trace.wrap)
	f := startFleet(b, index.Options{}, testOptions("configmaps"), clusters.Cluster{Name: c.Name(), Config: cfg})
	dc := testcluster.Dynamic(b, c.AdminConfig())
	var rounds []recovery
	for b.Loop() {
		recoveryRound++
		ns := fmt.Sprintf("recovery-%d", recoveryRound)
		seedOutage(b, dc, ns)
		waitConverged(b, f, c.Name(), dc, configMaps, "configmaps")
		waitStatus(b, f, c.Name(), health.Synced)
		trace.reset()
		r := round(f, ns)
		b.Logf("round %d: %s", recoveryRound, trace.timeline(r))
		rounds = append(rounds, r)
	}
	reportRecovery(b, rounds)
}

// reportRecovery reports the p50, p99 and maximum of the rounds' recovery
// times in seconds, by nearest rank: with 20 rounds p99 is the maximum.
func reportRecovery(b *testing.B, rounds []recovery) {
	if len(rounds) == 0 {
		return
	}
	took := make([]time.Duration, len(rounds))
	for i, r := range rounds {
		took[i] = r.took()
	}
	slices.Sort(took)
	rank := func(q float64) time.Duration {
		return took[max(0, int(math.Ceil(q*float64(len(took))))-1)]
	}
	b.ReportMetric(rank(0.5).Seconds(), "p50-s")
	b.ReportMetric(rank(0.99).Seconds(), "p99-s")
	b.ReportMetric(took[len(took)-1].Seconds(), "max-s")
}

// requestTrace records the fleet's requests to one API server, when each
// was sent and answered and with what, so that a slow recovery can be taken
// apart: the probe, the list and client-go's retries of it.
type requestTrace struct {
	mu   sync.Mutex
	reqs []tracedRequest
}

type tracedRequest struct {
	what           string
	sent, answered time.Time
	status         int    // 0: no answer
	retryAfter     string // the answer's Retry-After header
}

func (tr *requestTrace) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		r := tracedRequest{what: req.Method + " " + req.URL.Path, sent: time.Now()}
		if q := req.URL.Query(); q.Get("watch") == "true" || q.Get("watch") == "1" {
			r.what = "WATCH " + req.URL.Path
			if q.Get("sendInitialEvents") == "true" {
				r.what += " (initial events)"
			}
		}
		resp, err := rt.RoundTrip(req)
		r.answered = time.Now()
		if err == nil {
			r.status, r.retryAfter = resp.StatusCode, resp.Header.Get("Retry-After")
		}
		tr.mu.Lock()
		tr.reqs = append(tr.reqs, r)
		tr.mu.Unlock()
		return resp, err
	})
}

func (tr *requestTrace) reset() {
	tr.mu.Lock()
	tr.reqs = nil
	tr.mu.Unlock()
}

// timeline describes r and the requests answered since the last reset,
// with times relative to the moment the server could be reached again.
func (tr *requestTrace) timeline(r recovery) string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	at := func(t time.Time) string { return fmt.Sprintf("%+.3fs", t.Sub(r.reachable).Seconds()) }
	unanswered := 0
	var parts []string
	for _, q := range tr.reqs {
		if q.status == 0 {
			unanswered++
			continue
		}
		s := fmt.Sprintf("%s %s→%d %s", at(q.sent), q.what, q.status, at(q.answered))
		if q.retryAfter != "" {
			s += " (Retry-After " + q.retryAfter + ")"
		}
		parts = append(parts, s)
	}
	return fmt.Sprintf("SYNCED %s after reachable; %d requests unanswered; answered: %s",
		at(r.synced), unanswered, strings.Join(parts, "; "))
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
