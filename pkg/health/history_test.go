package health

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestHistory checks each cluster's status timeline: a period per status,
// each ending where the next begins, the reason it began, the current one
// open; periods that ended before the window, or over the bound, dropped.
func TestHistory(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	tr := NewTracker(nil, Options{Now: func() time.Time { return now }, HistoryWindow: time.Hour, HistoryPeriods: 4})
	step := func(d time.Duration) { now = now.Add(d) }
	t0 := now
	tr.AddCluster("a")
	tr.ResourceStarting("a", "pods", "Pod")
	step(time.Second)
	tr.ResourceSynced("a", "pods")
	step(10 * time.Minute)
	tr.Probe("a", errors.New("dial tcp: connection refused"))
	step(5 * time.Minute)
	tr.Probe("a", nil)
	tr.ResourceStarting("a", "pods", "Pod")
	step(time.Second)
	tr.ResourceSynced("a", "pods")

	type period struct {
		Status     Status
		Start, End time.Duration // since t0; End -1: open
		Message    string
	}
	read := func() []period {
		var out []period
		for _, p := range tr.History("a") {
			end := time.Duration(-1)
			if !p.End.IsZero() {
				end = p.End.Sub(t0)
			}
			msg := p.Message
			if len(msg) > 24 {
				msg = msg[:24]
			}
			out = append(out, period{p.Status, p.Start.Sub(t0), end, msg})
		}
		return out
	}
	down := 10*time.Minute + time.Second
	up := down + 5*time.Minute
	got := read()
	for _, p := range got {
		if (p.Status == Synced) != (p.Message == "") {
			t.Errorf("period %+v: want a message unless SYNCED", p)
		}
	}
	for i := range got {
		got[i].Message = ""
	}
	// The bound (4) keeps the last four of PENDING, SYNCING, SYNCED,
	// DISCONNECTED, SYNCING, SYNCED.
	want := []period{
		{Synced, time.Second, down, ""},
		{Disconnected, down, up, ""},
		{Syncing, up, up + time.Second, ""},
		{Synced, up + time.Second, -1, ""},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	if tr.History("nope") != nil {
		t.Error("history of an unknown cluster")
	}

	// An hour later the periods that ended before the window are gone; the
	// current one stays, however old.
	step(2 * time.Hour)
	if diff := cmp.Diff([]period{{Synced, up + time.Second, -1, ""}}, read()); diff != "" {
		t.Errorf("history after the window (-want +got):\n%s", diff)
	}
	tr.Identify("a", "https://a:6443", "v1.36.3")
	tr.Identify("a", "", "")
	tr.Identify("nope", "https://x", "")
	if s, _ := tr.Cluster("a"); s.Server != "https://a:6443" || s.Version != "v1.36.3" {
		t.Errorf("server %q version %q", s.Server, s.Version)
	}
	if _, ok := tr.Cluster("nope"); ok {
		t.Error("Identify made a cluster up")
	}
}
