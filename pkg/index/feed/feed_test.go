package feed_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/fleetcache/fleetcache/internal/indextest"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/feed"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// fillIndex applies n modifications of one object (after adding it), so
// that revision r is the object at ResourceVersion r.
func fillIndex(ix *index.Index, n int) {
	o := indextest.Obj("c1", indextest.PodType, "ns", "a")
	for i := 1; i <= n; i++ {
		ix.Upsert(indextest.Modified(o, fmt.Sprint(i)))
	}
}

func TestEvents(t *testing.T) {
	tests := []struct {
		name      string
		retention int
		changes   int
		after     uint64
		limit     int
		wantRevs  []uint64
		wantErr   error
	}{
		{name: "all", changes: 5, after: 0, wantRevs: []uint64{1, 2, 3, 4, 5}},
		{name: "limit", changes: 5, after: 0, limit: 2, wantRevs: []uint64{1, 2}},
		{name: "after", changes: 5, after: 3, limit: 10, wantRevs: []uint64{4, 5}},
		{name: "nothing new", changes: 5, after: 5},
		{name: "empty index", changes: 0, after: 0},
		{name: "future", changes: 5, after: 6, wantErr: feed.ErrFutureRevision},
		{name: "future of an empty index", changes: 0, after: 1, wantErr: feed.ErrFutureRevision},
		{name: "expired", retention: 3, changes: 5, after: 0, wantErr: feed.ErrExpired},
		{name: "oldest retained is next", retention: 3, changes: 5, after: 1, wantErr: feed.ErrExpired},
		{name: "just retained", retention: 3, changes: 5, after: 2, wantRevs: []uint64{3, 4, 5}},
		{name: "ring wrapped many times", retention: 7, changes: 100, after: 95, wantRevs: []uint64{96, 97, 98, 99, 100}},
		{name: "ring wrapped, oldest", retention: 7, changes: 100, after: 93, limit: 3, wantRevs: []uint64{94, 95, 96}},
		{name: "ring wrapped, expired", retention: 7, changes: 100, after: 92, wantErr: feed.ErrExpired},
		{name: "ring exactly full", retention: 5, changes: 5, after: 0, wantRevs: []uint64{1, 2, 3, 4, 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix := index.New(index.Options{Retention: tt.retention})
			fillIndex(ix, tt.changes)
			evs, err := ix.Events(tt.after, tt.limit)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			var revs []uint64
			for _, e := range evs {
				revs = append(revs, e.Revision)
				if e.Object.ResourceVersion != fmt.Sprint(e.Revision) {
					t.Errorf("event %d carries version %s", e.Revision, e.Object.ResourceVersion)
				}
			}
			if diff := cmp.Diff(tt.wantRevs, revs, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("revisions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWait(t *testing.T) {
	tests := []struct {
		name    string
		changes int // before Wait
		after   uint64
		write   bool // write while waiting
		timeout time.Duration
		wantErr error
	}{
		{name: "already past", changes: 2, after: 1, timeout: time.Hour},
		{name: "wakes on a write", changes: 2, after: 2, write: true, timeout: time.Hour},
		{name: "wakes on a write from zero", after: 0, write: true, timeout: time.Hour},
		{name: "deadline", changes: 2, after: 2, timeout: 20 * time.Millisecond, wantErr: context.DeadlineExceeded},
		{name: "canceled", changes: 2, after: 5, wantErr: context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix := index.New(index.Options{})
			fillIndex(ix, tt.changes)
			ctx, cancel := context.WithCancel(t.Context())
			if tt.timeout > 0 {
				ctx, cancel = context.WithTimeout(t.Context(), tt.timeout)
			} else {
				cancel()
			}
			defer cancel()
			const waiters = 3
			errs := make(chan error, waiters)
			var wg sync.WaitGroup
			for range waiters {
				wg.Go(func() { errs <- ix.Wait(ctx, tt.after) })
			}
			if tt.write {
				// Let the waiters block (not needed for correctness).
				time.Sleep(10 * time.Millisecond)
				ix.Upsert(indextest.Obj("c1", indextest.PodType, "ns", "b"))
			}
			wg.Wait()
			for range waiters {
				if err := <-errs; !errors.Is(err, tt.wantErr) {
					t.Errorf("Wait = %v, want %v", err, tt.wantErr)
				}
			}
		})
	}
}

// TestListThenFollow checks that a consumer who lists at Page.Revision and
// then follows the feed from it sees every change once, with no gap: the
// state it rebuilds equals the index's.
func TestListThenFollow(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	fleet := indextest.RandomFleet(r, 1000)
	ix := index.New(index.Options{})
	for _, o := range fleet[:500] {
		ix.Upsert(o)
	}
	ctx, cancel := context.WithCancel(t.Context())
	// The writer applies a bounded number of changes, fewer than the
	// retention, so that the follower cannot fall out of the window.
	steps := indextest.Scale(20000, 4000)
	writerDone := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() {
		defer close(writerDone)
		c := &indextest.Churn{R: rand.New(rand.NewPCG(23, 24)), Stable: map[object.Key]bool{}}
		for i := range steps {
			if ctx.Err() != nil {
				return
			}
			c.Step(ix, fleet)
			if i%1000 == 0 {
				ix.RemoveResource("c1", "configmaps")
			}
		}
	})

	// List in pages at one revision is not a snapshot, so take one page.
	page := planner.List(ix, planner.Filter{}, nil, 0)
	state := map[object.Key]*object.Object{}
	for _, o := range page.Objects {
		state[o.Key()] = o
	}
	rev := page.Revision
	follow := func() {
		evs, err := ix.Events(rev, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			if e.Revision != rev+1 {
				t.Fatalf("event %d after %d", e.Revision, rev)
			}
			rev = e.Revision
			k := e.Object.Key()
			switch e.Type {
			case feed.Added:
				if state[k] != nil {
					t.Fatalf("revision %d: %v added twice", rev, k)
				}
				state[k] = e.Object
			case feed.Modified:
				if state[k] != e.Old {
					t.Fatalf("revision %d: %v modified from an unknown version", rev, k)
				}
				state[k] = e.Object
			case feed.Deleted:
				if state[k] != e.Object {
					t.Fatalf("revision %d: %v deleted in an unknown version", rev, k)
				}
				delete(state, k)
			}
		}
	}
tail:
	for {
		follow()
		select {
		case <-writerDone:
			// The revision is final.
			if rev == ix.Revision() {
				break tail
			}
			continue
		default:
		}
		waitCtx, waitCancel := context.WithTimeout(ctx, 10*time.Millisecond)
		_ = ix.Wait(waitCtx, rev) // a timeout only means no change yet
		waitCancel()
	}
	final := planner.List(ix, planner.Filter{}, nil, 0)
	if final.Revision != rev {
		t.Fatalf("final revision %d, followed to %d", final.Revision, rev)
	}
	if len(final.Objects) != len(state) {
		t.Errorf("rebuilt %d objects, index has %d", len(state), len(final.Objects))
	}
	for _, o := range final.Objects {
		if state[o.Key()] != o {
			t.Errorf("%v: rebuilt state differs", o.Key())
		}
	}
}

func TestEventTypeString(t *testing.T) {
	got := []string{feed.Added.String(), feed.Modified.String(), feed.Deleted.String(), feed.EventType(0).String()}
	if diff := cmp.Diff([]string{"ADDED", "MODIFIED", "DELETED", "EventType(0)"}, got); diff != "" {
		t.Error(diff)
	}
}
