package health

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

type counts map[string]int

func (c counts) ObjectCount(cluster, resource string) int { return c[cluster+"/"+resource] }

var (
	t0           = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	errForbidden = errors.New(`configmaps is forbidden: User "alice" cannot list resource "configmaps"`)
	errRefused   = errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")
)

func newTracker(retention int) *Tracker {
	return NewTracker(counts{"c1/": 3, "c1/pods": 2, "c1/configmaps": 1}, Options{Retention: retention, Now: func() time.Time { return t0 }})
}

// summary keeps what the table compares: cluster status and each type's status.
type summary struct {
	Status    Status
	Stale     bool
	Resources map[string]Status
}

func summarize(s ClusterStatus) summary {
	out := summary{Status: s.Status, Stale: s.Stale, Resources: map[string]Status{}}
	for _, r := range s.Resources {
		out.Resources[r.Resource] = r.Status
	}
	return out
}

func TestStatusDerivation(t *testing.T) {
	tests := []struct {
		name  string
		steps func(tr *Tracker)
		want  summary
	}{
		{
			name:  "registered",
			steps: func(tr *Tracker) { tr.AddCluster("c1") },
			want:  summary{Status: Pending, Resources: map[string]Status{}},
		},
		{
			name: "one type listing",
			steps: func(tr *Tracker) {
				tr.ResourceStarting("c1", "pods", "Pod")
				tr.ResourceStarting("c1", "configmaps", "ConfigMap")
				tr.ResourceSynced("c1", "pods")
			},
			want: summary{Status: Syncing, Resources: map[string]Status{"pods": Synced, "configmaps": Syncing}},
		},
		{
			name: "all synced",
			steps: func(tr *Tracker) {
				tr.ResourceStarting("c1", "pods", "Pod")
				tr.ResourceSynced("c1", "pods")
			},
			want: summary{Status: Synced, Resources: map[string]Status{"pods": Synced}},
		},
		{
			name: "waiting for a list slot",
			steps: func(tr *Tracker) {
				tr.ResourceStarting("c1", "pods", "Pod")
				tr.ResourceQueued("c1", "pods", "waiting for a list slot")
			},
			want: summary{Status: Pending, Resources: map[string]Status{"pods": Pending}},
		},
		{
			name: "one type listing, one waiting",
			steps: func(tr *Tracker) {
				tr.ResourceStarting("c1", "pods", "Pod")
				tr.ResourceStarting("c1", "configmaps", "ConfigMap")
				tr.ResourceQueued("c1", "pods", "waiting for a list slot")
			},
			want: summary{Status: Syncing, Resources: map[string]Status{"pods": Pending, "configmaps": Syncing}},
		},
		{
			name: "listing after the wait",
			steps: func(tr *Tracker) {
				tr.ResourceStarting("c1", "pods", "Pod")
				tr.ResourceQueued("c1", "pods", "waiting for a list slot")
				tr.ResourceListing("c1", "pods")
			},
			want: summary{Status: Syncing, Resources: map[string]Status{"pods": Syncing}},
		},
		{
			name: "relist waiting for a list slot",
			steps: func(tr *Tracker) {
				tr.ResourceStarting("c1", "pods", "Pod")
				tr.ResourceSynced("c1", "pods")
				tr.ResourceInterrupted("c1", "pods", "watch ended before its timeout", t0)
				tr.ResourceStarting("c1", "pods", "Pod")
				tr.ResourceQueued("c1", "pods", "waiting for a list slot")
			},
			want: summary{Status: Syncing, Resources: map[string]Status{"pods": Syncing}},
		},
		{
			name: "slow server",
			steps: func(tr *Tracker) {
				tr.ResourceStarting("c1", "pods", "Pod")
				tr.ResourceSlow("c1", "pods", errors.New("the server has received too many requests"))
			},
			want: summary{Status: Syncing, Resources: map[string]Status{"pods": Syncing}},
		},
		{
			name: "slow server, then synced",
			steps: func(tr *Tracker) {
				tr.ResourceStarting("c1", "pods", "Pod")
				tr.ResourceSlow("c1", "pods", errors.New("the server has received too many requests"))
				tr.ResourceSynced("c1", "pods")
			},
			want: summary{Status: Synced, Resources: map[string]Status{"pods": Synced}},
		},
		{
			name: "forbidden type",
			steps: func(tr *Tracker) {
				tr.ResourceStarting("c1", "pods", "Pod")
				tr.ResourceSynced("c1", "pods")
				tr.ResourceStarting("c1", "configmaps", "ConfigMap")
				tr.ResourceError("c1", "configmaps", "ConfigMap", errForbidden)
			},
			want: summary{Status: Degraded, Resources: map[string]Status{"pods": Synced, "configmaps": Degraded}},
		},
		{
			name: "forbidden type allowed later",
			steps: func(tr *Tracker) {
				tr.ResourceStarting("c1", "configmaps", "ConfigMap")
				tr.ResourceError("c1", "configmaps", "ConfigMap", errForbidden)
				tr.ResourceRequestOK("c1", "configmaps")
			},
			want: summary{Status: Syncing, Resources: map[string]Status{"configmaps": Syncing}},
		},
		{
			name: "sync deadline holds until synced",
			steps: func(tr *Tracker) {
				tr.ResourceStarting("c1", "pods", "Pod")
				tr.ResourceError("c1", "pods", "Pod", fmt.Errorf("%w: not synced after 2m", ErrSyncDeadline))
				tr.ResourceRequestOK("c1", "pods")
			},
			want: summary{Status: Degraded, Resources: map[string]Status{"pods": Degraded}},
		},
		{
			name: "unreachable after sync is stale",
			steps: func(tr *Tracker) {
				tr.ResourceStarting("c1", "pods", "Pod")
				tr.ResourceSynced("c1", "pods")
				tr.ResourceUnreachable("c1", "pods", errRefused)
			},
			want: summary{Status: Disconnected, Stale: true, Resources: map[string]Status{"pods": Disconnected}},
		},
		{
			name: "unreachable before any sync",
			steps: func(tr *Tracker) {
				tr.ResourceStarting("c1", "pods", "Pod")
				tr.ResourceUnreachable("c1", "pods", errRefused)
			},
			want: summary{Status: Disconnected, Resources: map[string]Status{"pods": Disconnected}},
		},
		{
			name: "probe fails while watches look fine",
			steps: func(tr *Tracker) {
				tr.ResourceStarting("c1", "pods", "Pod")
				tr.ResourceSynced("c1", "pods")
				tr.Probe("c1", errRefused)
			},
			want: summary{Status: Disconnected, Stale: true, Resources: map[string]Status{"pods": Disconnected}},
		},
		{
			name: "reachable again, relist not applied yet",
			steps: func(tr *Tracker) {
				tr.ResourceStarting("c1", "pods", "Pod")
				tr.ResourceSynced("c1", "pods")
				tr.Probe("c1", errRefused)
				tr.ResourceUnreachable("c1", "pods", errRefused)
				tr.Probe("c1", nil)
				tr.ResourceRequestOK("c1", "pods")
			},
			want: summary{Status: Syncing, Resources: map[string]Status{"pods": Syncing}},
		},
		{
			name: "reconnected and relisted",
			steps: func(tr *Tracker) {
				tr.ResourceStarting("c1", "pods", "Pod")
				tr.ResourceSynced("c1", "pods")
				tr.Probe("c1", errRefused)
				tr.ResourceUnreachable("c1", "pods", errRefused)
				tr.Probe("c1", nil)
				tr.ResourceStarting("c1", "pods", "Pod")
				tr.ResourceRequestOK("c1", "pods")
				tr.ResourceSynced("c1", "pods")
			},
			want: summary{Status: Synced, Resources: map[string]Status{"pods": Synced}},
		},
		{
			name: "watch interrupted while reachable",
			steps: func(tr *Tracker) {
				tr.ResourceStarting("c1", "pods", "Pod")
				tr.ResourceSynced("c1", "pods")
				tr.ResourceInterrupted("c1", "pods", "410 Gone", t0)
				tr.ResourceRequestOK("c1", "pods")
			},
			want: summary{Status: Syncing, Resources: map[string]Status{"pods": Syncing}},
		},
		{
			name: "probe back but a watch not yet resumed",
			steps: func(tr *Tracker) {
				tr.ResourceStarting("c1", "pods", "Pod")
				tr.ResourceSynced("c1", "pods")
				tr.ResourceUnreachable("c1", "pods", errRefused)
				tr.Probe("c1", nil)
			},
			want: summary{Status: Disconnected, Stale: true, Resources: map[string]Status{"pods": Disconnected}},
		},
		{
			name: "removed type",
			steps: func(tr *Tracker) {
				tr.ResourceStarting("c1", "pods", "Pod")
				tr.ResourceError("c1", "pods", "Pod", errForbidden)
				tr.ResourceStarting("c1", "configmaps", "ConfigMap")
				tr.ResourceSynced("c1", "configmaps")
				tr.RemoveResource("c1", "pods")
			},
			want: summary{Status: Synced, Resources: map[string]Status{"configmaps": Synced}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := newTracker(0)
			tt.steps(tr)
			got, ok := tr.Cluster("c1")
			if !ok {
				t.Fatal("cluster c1 unknown")
			}
			if diff := cmp.Diff(tt.want, summarize(got)); diff != "" {
				t.Errorf("status (-want +got):\n%s\nmessage: %s", diff, got.Message)
			}
			if (got.Status == Synced) != (got.Message == "") {
				t.Errorf("status %s with message %q: only SYNCED has none", got.Status, got.Message)
			}
		})
	}
}

func TestStatusDetails(t *testing.T) {
	tr := newTracker(0)
	tr.ResourceStarting("c1", "pods", "Pod")
	tr.ResourceList("c1", "pods") // initial list: not a relist
	tr.ResourceWatch("c1", "pods")
	tr.ResourceSynced("c1", "pods")
	tr.ResourceWatch("c1", "pods") // resumed watch
	tr.ResourceWatch("c1", "pods") // resumed again
	tr.ResourceList("c1", "pods")  // relist (410)
	tr.ResourceWatch("c1", "pods") // follows the relist
	tr.EventCounter("c1", "pods").Record(EventModified, t0.Add(time.Minute))
	tr.ResourceStarting("c1", "configmaps", "ConfigMap")
	tr.ResourceError("c1", "configmaps", "ConfigMap", errForbidden)

	got, _ := tr.Cluster("c1")
	want := ClusterStatus{
		Name:          "c1",
		Status:        Degraded,
		Message:       "1 resource types failing: [configmaps: " + errForbidden.Error() + "]",
		LastSyncTime:  t0,
		LastEventTime: t0.Add(time.Minute),
		ObjectCount:   3,
		CurrentAsOf:   t0, // configmaps is forbidden: it holds no data to be stale
		Resources: []ResourceStatus{
			{Resource: "configmaps", Kind: "ConfigMap", Status: Degraded, ObjectCount: 1, LastError: errForbidden.Error(), LastErrorTime: t0, SyncStartTime: t0},
			{Resource: "pods", Kind: "Pod", Status: Synced, ObjectCount: 2, LastSyncTime: t0, LastEventTime: t0.Add(time.Minute), WatchRestarts: 2, Relists: 1,
				SyncStartTime: t0, Events: EventCounts{Modified: 1}, CurrentAsOf: t0},
		},
		ChangeRate: make([]float64, 30), // the event is after now
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
}

func TestChanges(t *testing.T) {
	tr := newTracker(0)
	_, v0 := tr.Clusters()
	tr.AddCluster("c1")
	tr.ResourceStarting("c1", "pods", "Pod")
	tr.EventCounter("c1", "pods").Record(EventAdded, t0) // not a status change
	tr.ResourceWatch("c1", "pods")                       // not a status change
	tr.ResourceStarting("c1", "pods", "Pod")             // same status again
	tr.ResourceSynced("c1", "pods")
	tr.ResourceUnreachable("c1", "pods", errRefused)
	tr.ResourceRequestOK("c1", "pods") // reachable, not current yet
	tr.ResourceStarting("c1", "pods", "Pod")
	tr.ResourceSynced("c1", "pods")
	tr.RemoveCluster("c1")

	changes, err := tr.Changes(v0)
	if err != nil {
		t.Fatal(err)
	}
	type step struct {
		Status  Status
		Removed bool
	}
	var got []step
	for i, c := range changes {
		if c.Version != v0+uint64(i)+1 {
			t.Errorf("change %d has version %d, want %d", i, c.Version, v0+uint64(i)+1)
		}
		got = append(got, step{c.Cluster.Status, c.Removed})
	}
	want := []step{{Pending, false}, {Syncing, false}, {Synced, false}, {Disconnected, false}, {Syncing, false}, {Synced, false}, {Synced, true}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	if _, ok := tr.Cluster("c1"); ok {
		t.Error("removed cluster still known")
	}
	if rest, err := tr.Changes(changes[len(changes)-1].Version); err != nil || len(rest) != 0 {
		t.Errorf("Changes at the current version = %v, %v; want none", rest, err)
	}
}

func TestChangesExpire(t *testing.T) {
	tr := newTracker(2)
	tr.AddCluster("c1")
	tr.ResourceStarting("c1", "pods", "Pod")
	tr.ResourceSynced("c1", "pods")
	if _, err := tr.Changes(0); !errors.Is(err, ErrExpired) {
		t.Errorf("Changes(0) with retention 2 after 3 changes: err = %v, want ErrExpired", err)
	}
	if got, err := tr.Changes(1); err != nil || len(got) != 2 {
		t.Errorf("Changes(1) = %d changes, %v; want 2, nil", len(got), err)
	}
}

func TestWait(t *testing.T) {
	tr := newTracker(0)
	_, v := tr.Clusters()
	ctx, cancel := context.WithTimeout(t.Context(), time.Millisecond)
	defer cancel()
	if err := tr.Wait(ctx, v); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait without a change = %v, want deadline exceeded", err)
	}
	done := make(chan error)
	go func() { done <- tr.Wait(t.Context(), v) }()
	tr.AddCluster("c1")
	if err := <-done; err != nil {
		t.Errorf("Wait after a change = %v", err)
	}
	if err := tr.Wait(t.Context(), v); err != nil {
		t.Errorf("Wait for a past version = %v", err)
	}
}

// TestCurrentAsOf checks the freshness a Tracker reports: the time of
// reading while a type is current, frozen at the last sign of it once it is
// not, and the earliest of its types for a cluster.
func TestCurrentAsOf(t *testing.T) {
	now := t0
	tr := NewTracker(nil, Options{Now: func() time.Time { return now }})
	tr.AddCluster("c1")
	tr.ResourceStarting("c1", "pods", "Pod")
	tr.ResourceStarting("c1", "configmaps", "ConfigMap")
	tr.ResourceSynced("c1", "pods")
	asOf := func() (cluster, pods, configmaps time.Time) {
		s, _ := tr.Cluster("c1")
		for _, r := range s.Resources {
			switch r.Resource {
			case "pods":
				pods = r.CurrentAsOf
			case "configmaps":
				configmaps = r.CurrentAsOf
			}
		}
		return s.CurrentAsOf, pods, configmaps
	}
	check := func(step string, wantCluster, wantPods, wantConfigMaps time.Time) {
		t.Helper()
		c, p, cm := asOf()
		if !c.Equal(wantCluster) || !p.Equal(wantPods) || !cm.Equal(wantConfigMaps) {
			t.Errorf("%s: currentAsOf cluster %v, pods %v, configmaps %v; want %v, %v, %v", step, c, p, cm, wantCluster, wantPods, wantConfigMaps)
		}
	}
	check("configmaps in its initial list", time.Time{}, t0, time.Time{})

	now = t0.Add(time.Minute)
	tr.ResourceSynced("c1", "configmaps")
	tr.Probe("c1", nil)
	now = t0.Add(2 * time.Minute)
	check("both current", now, now, now)

	tr.EventCounter("c1", "pods").Record(EventModified, t0.Add(90*time.Second))
	now = t0.Add(3 * time.Minute)
	tr.Probe("c1", errRefused)
	// The last signs: pods' last event at 1m30s, configmaps' sync and the
	// successful probe at 1m.
	check("probe failed", t0.Add(time.Minute), t0.Add(90*time.Second), t0.Add(time.Minute))

	now = t0.Add(4 * time.Minute)
	tr.Probe("c1", nil)
	tr.ResourceRequestOK("c1", "pods")
	check("reachable, not relisted", t0.Add(time.Minute), t0.Add(90*time.Second), t0.Add(time.Minute))
	if s, _ := tr.Cluster("c1"); s.Status != Syncing || !strings.Contains(s.Message, "API server does not answer") {
		t.Errorf("reachable, not relisted: %s %q, want SYNCING with the reason", s.Status, s.Message)
	}

	tr.ResourceStarting("c1", "pods", "Pod")
	tr.ResourceSynced("c1", "pods")
	check("pods relisted", t0.Add(time.Minute), now, t0.Add(time.Minute))

	now = t0.Add(5 * time.Minute)
	tr.ResourceInterrupted("c1", "pods", "watch ended early", now)
	tr.ResourceStarting("c1", "configmaps", "ConfigMap")
	tr.ResourceSynced("c1", "configmaps")
	now = t0.Add(6 * time.Minute)
	check("pods interrupted", t0.Add(5*time.Minute), t0.Add(5*time.Minute), now)
	tr.ResourceInterrupted("c1", "pods", "later", now)
	check("a second interruption keeps the first", t0.Add(5*time.Minute), t0.Add(5*time.Minute), now)
}

func TestQueuedAndSlowMessages(t *testing.T) {
	tr := newTracker(0)
	tr.ResourceStarting("c1", "pods", "Pod")
	tr.ResourceStarting("c1", "configmaps", "ConfigMap")
	tr.ResourceQueued("c1", "pods", "waiting for a list slot (4 lists at once)")
	tr.ResourceQueued("c1", "configmaps", "waiting for a list slot (4 lists at once)")
	got, _ := tr.Cluster("c1")
	if want := "waiting for a list slot (4 lists at once): [configmaps pods]"; got.Status != Pending || got.Message != want {
		t.Errorf("both waiting: %s %q, want PENDING %q", got.Status, got.Message, want)
	}
	tr.ResourceListing("c1", "configmaps")
	tr.ResourceSlow("c1", "configmaps", errors.New("the server has received too many requests"))
	got, _ = tr.Cluster("c1")
	want := "initial sync in progress: [configmaps]; API server slow to answer, retrying: [configmaps: the server has received too many requests]; waiting for a list slot (4 lists at once): [pods]"
	if got.Status != Syncing || got.Message != want {
		t.Errorf("one slow, one waiting: %s %q, want SYNCING %q", got.Status, got.Message, want)
	}
	for _, r := range got.Resources {
		if r.Resource == "configmaps" && r.LastError != "the server has received too many requests" {
			t.Errorf("configmaps lastError %q", r.LastError)
		}
	}
}

// TestConcurrentClusters reports for many clusters at once, as the
// informers of a fleet do, while a reader takes snapshots and follows the
// changes: run with -race. Every snapshot must hold each cluster in the
// status of its last change up to the snapshot's version.
func TestConcurrentClusters(t *testing.T) {
	tr := NewTracker(nil, Options{Retention: 1 << 16})
	const clusters, rounds = 16, 50
	var wg sync.WaitGroup
	for i := range clusters {
		name := fmt.Sprintf("c%d", i)
		wg.Go(func() {
			for range rounds {
				tr.ResourceStarting(name, "pods", "Pod")
				ev := tr.EventCounter(name, "pods")
				ev.Record(EventAdded, t0)
				tr.ResourceSynced(name, "pods")
			}
		})
	}
	stop := make(chan struct{})
	var reader sync.WaitGroup
	reader.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			states, v := tr.Clusters()
			changes, err := tr.Changes(0)
			if err != nil {
				t.Error(err)
				return
			}
			last := map[string]Status{}
			for _, ch := range changes {
				if ch.Version <= v {
					last[ch.Cluster.Name] = ch.Cluster.Status
				}
			}
			for _, s := range states {
				if want := last[s.Name]; s.Status != want {
					t.Errorf("snapshot at version %d: %s is %s, its last change up to there says %s", v, s.Name, s.Status, want)
				}
			}
		}
	})
	wg.Wait()
	close(stop)
	reader.Wait()
	states, _ := tr.Clusters()
	for _, s := range states {
		if s.Status != Synced || s.Resources[0].Events.Added != rounds {
			t.Errorf("%s: %s, %d added, want SYNCED, %d", s.Name, s.Status, s.Resources[0].Events.Added, rounds)
		}
	}
	changes, err := tr.Changes(0)
	if err != nil {
		t.Fatal(err)
	}
	for i, ch := range changes {
		if ch.Version != uint64(i+1) {
			t.Fatalf("change %d has version %d", i, ch.Version)
		}
	}
}
