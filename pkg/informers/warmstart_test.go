package informers_test

import (
	"context"
	"errors"
	"iter"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/fleetcache/fleetcache/internal/app"
	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/clusters"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/informers"
	"github.com/fleetcache/fleetcache/pkg/snapshot"
	"github.com/fleetcache/fleetcache/pkg/warmstart"
)

// lists returns the list requests (not watches) of path the log saw.
func (l *requestLog) lists(path string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, raw := range l.urls {
		u, err := url.Parse(raw)
		if err == nil && u.Path == path && u.Query().Get("watch") != "true" {
			out = append(out, u.RawQuery)
		}
	}
	return out
}

// startWarm runs an aggregator of cluster c's configmaps with its snapshot
// in dir, the member's requests recorded in log, and returns its fleet and
// the function that stops it (after a last write of the snapshot).
func startWarm(t *testing.T, c *testcluster.Cluster, dir string, log *requestLog, watchTimeout time.Duration) (*fleet, func()) {
	t.Helper()
	opts := testOptions("configmaps")
	opts.WatchTimeout = watchTimeout
	agg, err := app.New(app.Options{Informers: opts, Snapshot: app.SnapshotOptions{Dir: dir, Interval: 200 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	if err := agg.Registry.Add(clusters.Cluster{Name: c.Name(), Config: log.config(c.AdminConfig())}); err != nil {
		t.Fatal(err)
	}
	stop := runAggregator(t, agg)
	// Start loads the snapshot while the cluster starts.
	if err := agg.WaitLoaded(t.Context()); err != nil {
		t.Fatal(err)
	}
	return &fleet{index: agg.Index, health: agg.Health, registry: agg.Registry}, stop
}

// heldLoad is a warm start's load that the test ends (informers.Loading).
type heldLoad struct {
	done chan struct{}
	err  error
}

func (l *heldLoad) Done() <-chan struct{} { return l.done }
func (l *heldLoad) Err() error            { return l.err }

// TestWarmStartWhileLoading starts a cluster while its snapshot is still
// loading, as the aggregator does, with the load held open by the test: the
// resumed watch begins, but nothing reaches the index and nothing is SYNCED
// until the load ends. Then the changes made while fleetcache was down
// arrive as events, without a list, and SYNCED comes with the server's
// truth (checked at the moment it is claimed). A load that fails instead
// leaves the index empty: the type lists, and is SYNCED with the server's
// truth.
func TestWarmStartWhileLoading(t *testing.T) {
	for _, failed := range []bool{false, true} {
		name := map[bool]string{false: "loaded", true: "failed"}[failed]
		t.Run(name, func(t *testing.T) {
			c := testbed.Env(t).Cluster("c1")
			dc := testcluster.Dynamic(t, c.AdminConfig())
			ns := "while-" + name
			dir := filepath.Join(t.TempDir(), "snapshot")
			_, stop := firstRun(t, c, dc, ns, dir)
			stop()
			changeDuringOutage(t, dc, ns)

			store, err := snapshot.Open(dir, snapshot.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = store.Close() })
			opts := testOptions("configmaps")
			ix := index.New(index.Options{})
			loader, err := warmstart.Prepare(store, ix, opts.Codecs)
			if err != nil {
				t.Fatal(err)
			}
			tr := health.NewTracker(ix, health.Options{})
			restored := map[string]informers.Restored{}
			for k, s := range loader.Streams() {
				if k.Cluster == "c1" && !s.Removed {
					restored[k.Resource] = informers.Restored{Type: s.Type, ResourceVersion: s.ResourceVersion, Member: s.Member}
					tr.ResourceRestored(k.Cluster, k.Resource, s.Type.KindName(), s.AsOf)
				}
			}
			if restored["configmaps"].ResourceVersion == "" {
				t.Fatalf("the snapshot holds no configmaps of c1: %v", loader.Streams())
			}
			load := &heldLoad{done: make(chan struct{})}
			opts.Restored = func(string) map[string]informers.Restored { return restored }
			opts.Loading = load
			f, err := informers.NewFleet(ix, tr, opts)
			if err != nil {
				t.Fatal(err)
			}
			registry := clusters.NewRegistry(f, clusters.Options{})
			var log requestLog
			if err := registry.Add(clusters.Cluster{Name: "c1", Config: log.config(c.AdminConfig())}); err != nil {
				t.Fatal(err)
			}
			second := &fleet{index: ix, health: tr, registry: registry}
			synced := syncedMoment(t, second, "c1", 0)
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			wg.Go(func() { _ = f.Start(ctx) })
			wg.Go(func() { _ = registry.Start(ctx) })
			t.Cleanup(func() { cancel(); wg.Wait() })

			testcluster.Eventually(t, 30*time.Second, "the resumed watch of configmaps begun", func() (bool, string) {
				return log.saw("/api/v1/configmaps", "watch=true"), "no watch yet"
			})
			if n := ix.ObjectCount("", ""); n != 0 {
				t.Errorf("the index holds %d objects while the snapshot loads: the informers wrote to it", n)
			}
			if st, _ := tr.Cluster("c1"); st.Status == health.Synced {
				t.Errorf("c1 SYNCED while its snapshot loads: %+v", st)
			}
			if failed {
				loader.Abort()
				load.err = errors.New("the test failed the load")
			} else if _, err := loader.Load(t.Context()); err != nil {
				t.Fatal(err)
			}
			close(load.done)

			m := awaitRecovery(t, synced, "c1", time.Now(), "the load's end")
			checkMoment(t, second, m, "c1", dc)
			listed := slices.ContainsFunc(log.lists("/api/v1/configmaps"), func(l string) bool { q, _ := url.ParseQuery(l); return q.Get("limit") != "1" })
			if listed != failed {
				t.Errorf("listed configmaps: %v, want %v", listed, failed)
			}
			if !failed {
				want := []string{"ADDED new", "MODIFIED change", "DELETED gone", "DELETED recreate", "ADDED recreate"}
				if diff := cmp.Diff(want, eventsFor(eventsAfter(t, ix, 0), "c1", ns)); diff != "" {
					t.Errorf("events after the load (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// TestWarmStart stops fleetcache, changes objects while it is down (an add,
// an update, a delete, a delete and re-create), and starts it again on its
// snapshot: it serves the objects it had at once, stale, resumes its watch
// from the snapshot's resourceVersion without listing, delivers each change
// made meanwhile as an event, and says SYNCED only once its data is the
// server's (checked at the moment it says so).
func TestWarmStart(t *testing.T) {
	c := testbed.Env(t).Cluster("c1")
	dc := testcluster.Dynamic(t, c.AdminConfig())
	const ns = "warm"
	dir := filepath.Join(t.TempDir(), "snapshot")
	first, stop := firstRun(t, c, dc, ns, dir)
	before := indexState(first.index, "c1", "configmaps")
	// A follower's cursor, as a subscription's event carries it.
	c1 := func(s index.Stream) bool { return s.Cluster == "c1" && s.Resource == "configmaps" }
	cursor := first.index.ClocksAt(first.index.Revision(), c1)
	stop()

	changeDuringOutage(t, dc, ns)

	var log requestLog
	log.holdWatches(t)
	started := time.Now()
	second, _ := startWarm(t, c, dir, &log, 0)
	// Before its watch resumed: the objects it had, and it says so.
	if diff := cmp.Diff(before, indexState(second.index, "c1", "configmaps")); diff != "" {
		t.Fatalf("the restarted index does not hold the snapshot's objects (-before the stop +restored):\n%s", diff)
	}
	assertRestoredStale(t, second, "c1")
	log.releaseWatches()
	m := awaitRecovery(t, syncedMoment(t, second, "c1", 0), "c1", started, "its restart on a snapshot")
	checkMoment(t, second, m, "c1", dc)

	// The follower resumes its cursor on the restarted index and has the
	// server's truth: the tombs and clocks came back with the snapshot.
	catchUp, _, err := second.index.Since(cursor, c1, nil)
	if err != nil {
		t.Fatalf("resuming a cursor from before the restart: %v", err)
	}
	if diff := cmp.Diff(serverState(t, dc, configMaps), replay(before, catchUp, "c1", "configmaps")); diff != "" {
		t.Errorf("a follower resumed across the restart differs from the server (-server +follower):\n%s", diff)
	}
	// Each change made while it was down, as an event, in the member's
	// order, and nothing for what did not change.
	want := []string{"ADDED new", "MODIFIED change", "DELETED gone", "DELETED recreate", "ADDED recreate"}
	if diff := cmp.Diff(want, eventsFor(eventsAfter(t, second.index, 0), "c1", ns)); diff != "" {
		t.Errorf("events after the warm start (-want +got):\n%s", diff)
	}
	// No list: one object's worth, to read the member's resourceVersion.
	lists := log.lists("/api/v1/configmaps")
	if len(lists) == 0 {
		t.Fatal("no request to the member recorded: the test's recorder is not in the informers' transport")
	}
	for _, l := range lists {
		if q, _ := url.ParseQuery(l); q.Get("limit") != "1" {
			t.Errorf("the warm start listed configmaps: ?%s", l)
		}
	}
}

// TestWarmStartQuiet restarts on a snapshot of a type nothing changed in
// while the member's etcd moved on (a Secret, which fleetcache does not
// cache, was written): no event moves the type's clock, so it is SYNCED
// by the bookmark the watch cache sends before its first resumed watch's
// timeout, within seconds, still without a list.
func TestWarmStartQuiet(t *testing.T) {
	c := testbed.Env(t).Cluster("c3")
	dc := testcluster.Dynamic(t, c.AdminConfig())
	dir := filepath.Join(t.TempDir(), "snapshot")
	_, stop := firstRun(t, c, dc, "quiet", dir)
	configMaps := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	current := func() uint64 {
		t.Helper()
		l, err := dc.Resource(configMaps).List(t.Context(), metav1.ListOptions{Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		rv, _ := index.ParseResourceVersion(l.GetResourceVersion())
		return rv
	}
	before := current() // at or past the snapshot's clock: no configmap changes
	stop()
	secret := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "moves-etcd-on", "namespace": "quiet"}}}
	if _, err := dc.Resource(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}).Namespace("quiet").
		Create(t.Context(), secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if after := current(); after <= before {
		t.Fatalf("the member's resourceVersion is %d after a write, %d before: the test needs it to move on", after, before)
	}

	var log requestLog
	log.holdWatches(t)
	started := time.Now()
	second, _ := startWarm(t, c, dir, &log, 0)
	assertRestoredStale(t, second, "c3")
	log.releaseWatches()
	var m moment
	select {
	case m = <-syncedMoment(t, second, "c3", 0):
	case <-time.After(30 * time.Second):
		t.Fatal("c3 not SYNCED within 30s of a warm start on a quiet snapshot (the first resumed watch's bookmark comes after 3 s)")
	}
	t.Logf("c3 current %s after its warm start", m.at.Sub(started))
	checkMoment(t, second, m, "c3", dc)
	for _, l := range log.lists("/api/v1/configmaps") {
		if q, _ := url.ParseQuery(l); q.Get("limit") != "1" {
			t.Errorf("the quiet warm start listed configmaps: ?%s", l)
		}
	}
}

// TestWarmStartAfterCompaction restarts on a snapshot whose resourceVersion
// the member compacted away while fleetcache was down (its API server runs
// without a watch cache, so the watch goes to etcd): the member answers 410
// Gone, which the test sees counted, fleetcache lists, and the changes made
// meanwhile arrive as events, deletions included.
func TestWarmStartAfterCompaction(t *testing.T) {
	e := noWatchCacheEnv(t)
	c := e.Cluster("c1")
	dc := testcluster.Dynamic(t, c.AdminConfig())
	const ns = "compacted"
	dir := filepath.Join(t.TempDir(), "snapshot")
	_, stop := firstRun(t, c, dc, ns, dir)
	stop()

	changeDuringOutage(t, dc, ns)
	if _, err := e.Compact(t.Context()); err != nil {
		t.Fatal(err)
	}

	var log requestLog
	log.holdWatches(t)
	started := time.Now()
	second, _ := startWarm(t, c, dir, &log, 0)
	assertRestoredStale(t, second, "c1")
	log.releaseWatches()
	m := awaitRecovery(t, syncedMoment(t, second, "c1", 0), "c1", started, "its restart on a compacted snapshot")
	checkMoment(t, second, m, "c1", dc)
	if r := resourceStatus(t, second, "c1", "configmaps"); r.WatchExpired == 0 {
		t.Errorf("no 410 Gone counted: the watch from the snapshot was not refused (%+v)", r)
	}
	if !slices.ContainsFunc(log.lists("/api/v1/configmaps"), func(l string) bool { q, _ := url.ParseQuery(l); return q.Get("limit") != "1" }) {
		t.Error("no list after 410 Gone")
	}
	got := eventsFor(eventsAfter(t, second.index, 0), "c1", ns)
	slices.Sort(got)
	want := []string{"ADDED new", "ADDED recreate", "DELETED gone", "DELETED recreate", "MODIFIED change"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events after the relist (-want +got):\n%s", diff)
	}
}

// firstRun seeds namespace ns of c with the objects changeDuringOutage
// changes and starts fleetcache with its snapshot in dir, until it holds
// them all.
func firstRun(t *testing.T, c *testcluster.Cluster, dc dynamic.Interface, ns, dir string) (*fleet, func()) {
	t.Helper()
	seedOutage(t, dc, ns)
	f, stop := startWarm(t, c, dir, &requestLog{}, 0)
	waitStatus(t, f, c.Name(), health.Synced)
	waitConverged(t, f, c.Name(), dc, configMaps, "configmaps")
	return f, stop
}

// TestWarmStartOnAnotherMember restarts on a snapshot of a cluster whose
// name now leads to another member (a cluster rebuilt under the same name,
// with another etcd): the snapshot's resourceVersions mean nothing there,
// so fleetcache lists, and at SYNCED it holds the new member's objects and
// none of the old one's.
func TestWarmStartOnAnotherMember(t *testing.T) {
	env := testbed.Env(t)
	old, rebuilt := env.Cluster("c1"), env.Cluster("c2")
	dir := filepath.Join(t.TempDir(), "snapshot")
	first, stop := firstRun(t, old, testcluster.Dynamic(t, old.AdminConfig()), "member-old", dir)
	oldID, _ := first.health.Cluster("c1")
	stop()
	if oldID.MemberID == "" {
		t.Fatal("the first run did not read the member's identity")
	}

	var log requestLog
	agg, err := app.New(app.Options{Informers: testOptions("configmaps"), Snapshot: app.SnapshotOptions{Dir: dir}})
	if err != nil {
		t.Fatal(err)
	}
	// The name c1, the other server.
	if err := agg.Registry.Add(clusters.Cluster{Name: "c1", Config: log.config(rebuilt.AdminConfig())}); err != nil {
		t.Fatal(err)
	}
	second := &fleet{index: agg.Index, health: agg.Health, registry: agg.Registry}
	synced := syncedMoment(t, second, "c1", 0)
	runAggregator(t, agg)
	var m moment
	select {
	case m = <-synced:
	case <-time.After(90 * time.Second):
		t.Fatal("c1 not SYNCED within 90s of its start on another member")
	}
	dc := testcluster.Dynamic(t, rebuilt.AdminConfig())
	if diff := cmp.Diff(serverState(t, dc, configMaps), m.state); diff != "" {
		t.Errorf("at SYNCED the index differs from the new member (-member +index):\n%s", diff)
	}
	if !slices.ContainsFunc(log.lists("/api/v1/configmaps"), func(l string) bool { q, _ := url.ParseQuery(l); return q.Get("limit") != "1" }) {
		t.Error("no list of the new member: the snapshot's resourceVersion was resumed on another history")
	}
	if s, _ := second.health.Cluster("c1"); s.MemberID == oldID.MemberID {
		t.Errorf("the new member has the old one's identity %s", s.MemberID)
	}
}

// assertRestoredStale checks that a cluster restored from a snapshot is not
// SYNCED, says why, and says since when its data is not known current.
func assertRestoredStale(t *testing.T, f *fleet, cluster string) {
	t.Helper()
	st, ok := f.health.Cluster(cluster)
	if !ok || st.Status == health.Synced || st.CurrentAsOf.IsZero() || !strings.Contains(st.Message, "snapshot") {
		t.Errorf("restored cluster %s before its watch resumed: %+v; want not SYNCED, a currentAsOf, and a message about the snapshot", cluster, st)
	}
}

// TestWarmStartBehindTheMember restarts on a snapshot whose resourceVersion
// the member has not reached (as after the member was restored from a
// backup): the resume's consistent read finds the member behind, and the
// type lists instead of resuming on another history.
func TestWarmStartBehindTheMember(t *testing.T) {
	c := testbed.Env(t).Cluster("c2")
	dc := testcluster.Dynamic(t, c.AdminConfig())
	dir := filepath.Join(t.TempDir(), "snapshot")
	_, stop := firstRun(t, c, dc, "behind", dir)
	stop()
	// The snapshot's clocks moved far past the member's.
	store, err := snapshot.Open(dir, snapshot.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var metas []snapshot.StreamMeta
	rev, _, err := store.Load(nil, func(m snapshot.StreamMeta, _ iter.Seq[snapshot.Object], _ iter.Seq[snapshot.Tomb]) error {
		if m.Cluster == "c2" && m.Clock != 0 {
			m.Clock += 1_000_000
			metas = append(metas, m)
		}
		return nil
	})
	if err != nil || len(metas) == 0 {
		t.Fatalf("the snapshot holds %d streams of c2 (%v)", len(metas), err)
	}
	if err := store.Apply(snapshot.Batch{Revision: rev + 1, Streams: metas}); err != nil {
		t.Fatal(err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}

	var log requestLog
	second, _ := startWarm(t, c, dir, &log, 0)
	var m moment
	select {
	case m = <-syncedMoment(t, second, "c2", 0):
	case <-time.After(60 * time.Second):
		t.Fatal("c2 not SYNCED within 60s of a start on a snapshot ahead of it")
	}
	checkMoment(t, second, m, "c2", dc)
	if !slices.ContainsFunc(log.lists("/api/v1/configmaps"), func(l string) bool { q, _ := url.ParseQuery(l); return q.Get("limit") != "1" }) {
		t.Error("no list of the member: a resourceVersion it has not reached was resumed")
	}
}
