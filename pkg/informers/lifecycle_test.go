package informers

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/rest"

	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/object"
)

// TestRunReportsOutsideItsLock checks that a run's reports of freshness
// run without its lock held: a report calls into the health tracker, which
// takes locks of its own.
func TestRunReportsOutsideItsLock(t *testing.T) {
	r := &typeRun{}
	unlocked := func(what string) func() {
		return func() {
			if !r.mu.TryLock() {
				t.Errorf("%s reported with the run's lock held", what)
				return
			}
			r.mu.Unlock()
		}
	}
	if !r.markSynced(unlocked("sync")) {
		t.Error("markSynced of a fresh run = false, want true")
	}
	if !r.interrupt(unlocked("interruption")) {
		t.Error("the first interrupt = false, want true")
	}
	if r.interrupt(unlocked("second interruption")) {
		t.Error("the second interrupt = true, want false")
	}
	if r.markSynced(unlocked("sync after interruption")) {
		t.Error("markSynced of an interrupted run = true, want false")
	}
}

// TestRunReportsInOrder races a run's sync against its interruption: the
// health tracker must hear of the interruption last, whichever comes
// first, or an interrupted type would show SYNCED.
func TestRunReportsInOrder(t *testing.T) {
	rounds := 2000
	if testing.Short() {
		rounds = 200
	}
	for range rounds {
		r := &typeRun{}
		var mu sync.Mutex
		var got []string
		report := func(what string) func() {
			return func() {
				mu.Lock()
				got = append(got, what)
				mu.Unlock()
			}
		}
		var wg sync.WaitGroup
		wg.Go(func() { r.markSynced(report("synced")) })
		wg.Go(func() { r.interrupt(report("interrupted")) })
		wg.Wait()
		if len(got) == 2 {
			if diff := cmp.Diff([]string{"synced", "interrupted"}, got); diff != "" {
				t.Fatalf("reports (-want +got):\n%s", diff)
			}
		} else if diff := cmp.Diff([]string{"interrupted"}, got); diff != "" {
			t.Fatalf("reports of a run interrupted before its sync (-want +got):\n%s", diff)
		}
	}
}

// TestProberStart checks that a cluster added before the prober starts is
// probed once it does, that Start returns when its context ends, having
// waited for its probes, and that it runs once.
func TestProberStart(t *testing.T) {
	var probes atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/version" {
			probes.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"major":"1","minor":"36","gitVersion":"v1.36.3"}`))
	}))
	defer srv.Close()
	ix := index.New(index.Options{})
	c, err := NewIngester("answers", &rest.Config{Host: srv.URL}, ix, health.NewTracker(ix, health.Options{}), Options{Resources: []string{"configmaps"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.dialer.CloseAll()
	defer c.requests.Close()

	p := newProber()
	target := p.add(t.Context(), c)
	time.Sleep(50 * time.Millisecond)
	if n := probes.Load(); n != 0 {
		t.Fatalf("%d probes before Start, want none", n)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- p.Start(ctx) }()
	testcluster.Eventually(t, 10*time.Second, "the cluster added before Start probed", func() (bool, string) {
		return probes.Load() > 0, "no probe yet"
	})
	p.remove(target)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Start = %v, want nil once its context ended", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Start still running 10s after its context ended")
	}
	if err := p.Start(t.Context()); err == nil {
		t.Error("a second Start = nil, want an error")
	}
}

// TestSyncDeadlineIsTheRuns checks that a run's sync deadline is awaited
// with the run's goroutines: a deadline that fired is waited for until it
// has reported, and one stopped by the sync is not waited for at all.
func TestSyncDeadlineIsTheRuns(t *testing.T) {
	ix := index.New(index.Options{})
	tracker := health.NewTracker(ix, health.Options{})
	c := &Ingester{name: "c1", health: tracker, gate: newListGate(1), opts: Options{SyncTimeout: time.Millisecond}}
	tracker.AddCluster("c1")
	pods := &object.Type{Resource: "pods", Kind: "Pod"}
	t.Run("fired", func(t *testing.T) {
		run := &typeRun{t: pods, ctx: t.Context()}
		c.startDeadline(run)
		run.wg.Wait()
		st, _ := tracker.Cluster("c1")
		if len(st.Resources) != 1 || !strings.Contains(st.Resources[0].LastError, "not synced") {
			t.Fatalf("after the run's wait, health holds %+v: want the deadline's error reported", st.Resources)
		}
	})
	t.Run("stopped by the sync", func(t *testing.T) {
		c.opts.SyncTimeout = time.Hour
		run := &typeRun{t: pods, ctx: t.Context()}
		c.startDeadline(run)
		run.markSynced(func() {})
		done := make(chan struct{})
		go func() { run.wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("the run still waits for a deadline its sync stopped")
		}
	})
	// client-go's list goroutine outlives a reflector whose context ended,
	// and may ask for a slot once the run's goroutines are awaited.
	t.Run("a stopped run takes nothing", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		run := &typeRun{t: pods, ctx: ctx}
		if err := c.takeSlot(ctx, run); err == nil {
			t.Error("takeSlot for a stopped run = nil, want its context's error")
		}
		if run.deadline != nil || run.slotHeld || len(c.gate.slots) != 0 {
			t.Errorf("a stopped run holds deadline %v, slot %v, and %d of the fleet's slots are taken: want none",
				run.deadline != nil, run.slotHeld, len(c.gate.slots))
		}
	})
}
