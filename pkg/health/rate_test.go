package health

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestChangeRate follows a cluster's change rates as events arrive and the
// clock moves: complete intervals only, oldest first, per second, and
// intervals older than the window forgotten even when their slot is reused
// late.
func TestChangeRate(t *testing.T) {
	now := t0 // t0 starts an interval of 10 s
	tr := NewTracker(nil, Options{Now: func() time.Time { return now }, ChangeRateIntervals: 3})
	tr.AddCluster("c1")
	tr.ResourceStarting("c1", "pods", "Pod")
	tr.ResourceStarting("c1", "configmaps", "ConfigMap")
	events := func(resource string, n int, at time.Time) {
		for range n {
			tr.EventCounter("c1", resource).Record(EventModified, at)
		}
	}
	rates := func() []float64 {
		s, _ := tr.Cluster("c1")
		all, _ := tr.Clusters()
		if diff := cmp.Diff(s.ChangeRate, all[0].ChangeRate); diff != "" {
			t.Errorf("Cluster and Clusters disagree (-Cluster +Clusters):\n%s", diff)
		}
		return s.ChangeRate
	}
	steps := []struct {
		name string
		do   func()
		want []float64
	}{
		{name: "no event yet", do: func() {}, want: []float64{0, 0, 0}},
		{name: "events of the interval in progress are not shown", do: func() {
			events("pods", 20, t0.Add(time.Second))
			events("configmaps", 5, t0.Add(9*time.Second))
		}, want: []float64{0, 0, 0}},
		{name: "the interval ends", do: func() { now = t0.Add(10 * time.Second) }, want: []float64{0, 0, 2.5}},
		{name: "a quiet interval", do: func() { now = t0.Add(20 * time.Second) }, want: []float64{0, 2.5, 0}},
		{name: "one more", do: func() {
			events("pods", 1, t0.Add(25*time.Second))
			now = t0.Add(30 * time.Second)
		}, want: []float64{2.5, 0, 0.1}},
		{name: "the first interval leaves the window", do: func() { now = t0.Add(40 * time.Second) }, want: []float64{0, 0.1, 0}},
		{name: "a slot reused after more than a window", do: func() {
			events("pods", 3, t0.Add(95*time.Second)) // the slot of t0+5s and t0+35s
			now = t0.Add(100 * time.Second)
		}, want: []float64{0, 0, 0.3}},
		{name: "long quiet", do: func() { now = t0.Add(time.Hour) }, want: []float64{0, 0, 0}},
	}
	for _, s := range steps {
		s.do()
		if diff := cmp.Diff(s.want, rates()); diff != "" {
			t.Errorf("%s: rates (-want +got):\n%s", s.name, diff)
		}
	}
}

// TestChangeRateDefaults: five minutes of 10 s intervals.
func TestChangeRateDefaults(t *testing.T) {
	o := DefaultOptions()
	if o.ChangeRateInterval != 10*time.Second || o.ChangeRateIntervals != 30 {
		t.Errorf("defaults %v × %d, want 10s × 30", o.ChangeRateInterval, o.ChangeRateIntervals)
	}
}
