package changelog

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestSince(t *testing.T) {
	tests := []struct {
		name      string
		retention int
		appends   int
		after     uint64
		limit     int
		want      []int
		wantErr   error
	}{
		{name: "empty", retention: 3, after: 0},
		{name: "all", retention: 3, appends: 3, after: 0, want: []int{1, 2, 3}},
		{name: "after some", retention: 3, appends: 3, after: 1, want: []int{2, 3}},
		{name: "limited", retention: 3, appends: 3, after: 0, limit: 2, want: []int{1, 2}},
		{name: "up to date", retention: 3, appends: 3, after: 3},
		{name: "wrapped ring", retention: 3, appends: 7, after: 4, want: []int{5, 6, 7}},
		{name: "wrapped ring, limited", retention: 3, appends: 8, after: 5, limit: 1, want: []int{6}},
		{name: "expired", retention: 3, appends: 7, after: 3, wantErr: ErrExpired},
		{name: "future", retention: 3, appends: 2, after: 3, wantErr: ErrFuture},
		{name: "beyond initial growth", retention: 100, appends: 150, after: 140, want: []int{141, 142, 143, 144, 145, 146, 147, 148, 149, 150}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := New[int](tt.retention)
			for i := range tt.appends {
				l.Append(i + 1)
			}
			if got := l.Version(); got != uint64(tt.appends) {
				t.Errorf("Version() = %d, want %d", got, tt.appends)
			}
			got, err := l.Since(tt.after, tt.limit)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Since(%d, %d) error = %v, want %v", tt.after, tt.limit, err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Since(%d, %d) (-want +got):\n%s", tt.after, tt.limit, diff)
			}
		})
	}
}

func TestWait(t *testing.T) {
	l := New[string](4)
	ctx, cancel := context.WithTimeout(t.Context(), time.Millisecond)
	defer cancel()
	if err := l.Wait(ctx, 0); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait with nothing new = %v, want deadline exceeded", err)
	}
	done := make(chan error)
	go func() { done <- l.Wait(t.Context(), 0) }()
	l.Append("a")
	if err := <-done; err != nil {
		t.Errorf("Wait woken by Append = %v", err)
	}
	if err := l.Wait(t.Context(), 0); err != nil {
		t.Errorf("Wait for a past version = %v", err)
	}
}

// TestTrimWhile checks that trimming drops the oldest entries (an age
// limit), that reads from before them expire, and that appends after a
// trim keep the order, through the ring's wrap and growth.
func TestTrimWhile(t *testing.T) {
	tests := []struct {
		name      string
		retention int
		appends   int
		below     int // trim the entries below this value
		more      int // appends after the trim
		after     uint64
		want      []int
		wantErr   error
		dropped   int
	}{
		{name: "nothing to drop", retention: 5, appends: 3, below: 1, after: 0, want: []int{1, 2, 3}},
		{name: "some", retention: 5, appends: 4, below: 3, after: 2, want: []int{3, 4}, dropped: 2},
		{name: "before them expired", retention: 5, appends: 4, below: 3, after: 1, wantErr: ErrExpired, dropped: 2},
		{name: "all", retention: 5, appends: 4, below: 99, after: 4, dropped: 4},
		{name: "all, then more", retention: 5, appends: 4, below: 99, more: 2, after: 4, want: []int{5, 6}, dropped: 4},
		{name: "wrapped ring, then more", retention: 3, appends: 7, below: 6, more: 3, after: 7, want: []int{8, 9, 10}, dropped: 1},
		{name: "wrapped ring, then fewer than the retention", retention: 3, appends: 7, below: 7, more: 1, after: 6, want: []int{7, 8}, dropped: 2},
		{name: "growth after a trim", retention: 200, appends: 70, below: 60, more: 100, after: 160, want: []int{161, 162, 163, 164, 165, 166, 167, 168, 169, 170}, dropped: 59},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := New[int](tt.retention)
			for i := range tt.appends {
				l.Append(i + 1)
			}
			if got := l.TrimWhile(func(v int) bool { return v < tt.below }); got != tt.dropped {
				t.Errorf("TrimWhile dropped %d, want %d", got, tt.dropped)
			}
			for i := range tt.more {
				l.Append(tt.appends + i + 1)
			}
			got, err := l.Since(tt.after, 0)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Since(%d) error = %v, want %v", tt.after, err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Since(%d) (-want +got):\n%s", tt.after, diff)
			}
			if got, want := l.Oldest(), l.Version()-uint64(min(tt.retention, tt.appends+tt.more-tt.dropped))+1; tt.more == 0 && got != want {
				t.Errorf("Oldest() = %d, want %d", got, want)
			}
		})
	}
}

// TestSearch checks the binary search over the retained entries, through
// the ring's wrap and a trim.
func TestSearch(t *testing.T) {
	l := New[int](5)
	if got := l.Search(func(int) bool { return true }); got != 1 {
		t.Errorf("empty log: %d, want 1", got)
	}
	for i := range 8 { // retains 4..8
		l.Append(i + 1)
	}
	l.TrimWhile(func(v int) bool { return v < 5 }) // retains 5..8
	for _, tt := range []struct {
		from int
		want uint64
	}{{0, 5}, {5, 5}, {6, 6}, {8, 8}, {9, 9}, {100, 9}} {
		if got := l.Search(func(v int) bool { return v >= tt.from }); got != tt.want {
			t.Errorf("first entry >= %d: %d, want %d", tt.from, got, tt.want)
		}
	}
}
