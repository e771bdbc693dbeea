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
