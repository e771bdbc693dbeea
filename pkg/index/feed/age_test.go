package feed

import (
	"errors"
	"testing"
	"time"
)

// TestMaxAgeAndRevisionBefore checks, on a clock of its own, that each
// event records its time, that a time is found among the retained events,
// and that events older than the age are dropped as new ones come.
func TestMaxAgeAndRevisionBefore(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	now := t0
	f := NewWithMaxAge[string](100, time.Hour)
	f.now = func() time.Time { return now }
	for i, d := range []time.Duration{0, 10 * time.Minute, 20 * time.Minute, 50 * time.Minute} {
		now = t0.Add(d)
		f.Record(Added, string(rune('a'+i)), "")
	}
	evs, err := f.Events(0, 0)
	if err != nil || len(evs) != 4 || !evs[1].Time.Equal(t0.Add(10*time.Minute)) {
		t.Fatalf("events %+v, %v: want 4, the second at +10m", evs, err)
	}
	for _, tc := range []struct {
		at   time.Duration
		want uint64
	}{{-time.Minute, 0}, {0, 0}, {time.Minute, 1}, {10 * time.Minute, 1}, {15 * time.Minute, 2}, {2 * time.Hour, 4}} {
		if got := f.RevisionBefore(t0.Add(tc.at)); got != tc.want {
			t.Errorf("RevisionBefore(+%s) = %d, want %d", tc.at, got, tc.want)
		}
	}

	// At +75m the events of +0 and +10m are over an hour old.
	now = t0.Add(75 * time.Minute)
	f.Record(Added, "e", "")
	if got := f.Oldest(); got != 3 {
		t.Errorf("Oldest() = %d after the age passed, want 3", got)
	}
	if _, err := f.Events(1, 0); !errors.Is(err, ErrExpired) {
		t.Errorf("events after 1: %v, want ErrExpired", err)
	}
	if got := f.RevisionBefore(t0); got != 2 {
		t.Errorf("RevisionBefore a dropped time = %d, want Oldest()-1 = 2", got)
	}
	// Without an age, nothing is dropped but by count.
	g := New[string](2)
	for range 3 {
		g.Record(Added, "x", "")
	}
	if got := g.Oldest(); got != 2 {
		t.Errorf("Oldest() of a count-bound feed = %d, want 2", got)
	}
}
