package graphql

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetcache/fleetcache/internal/indextest"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/object"
)

// TestResumeOnAnotherReplica follows a subscription on one index, then
// resumes it with its last cursor on another index that applied the same
// member changes in another order (another replica, or this one after a
// restart): the catch-up and the live changes after it bring the
// follower's copy to the second index's objects, deletions included.
func TestResumeOnAnotherReplica(t *testing.T) {
	a, b := index.New(index.Options{}), index.New(index.Options{})
	sa := newServer(t, a, health.NewTracker(a, health.Options{}), Options{})
	sb := newServer(t, b, health.NewTracker(b, health.Options{}), Options{})
	runServer(t, sa)
	runServer(t, sb)
	rv := 100
	pod := func(cluster, name string) *object.Object {
		rv++
		return indextest.Obj(cluster, indextest.PodType, "ns", name, indextest.WithRV(strconv.Itoa(rv)), indextest.WithUID(cluster+name))
	}
	// Both replicas list both clusters.
	for _, ix := range []*index.Index{a, b} {
		for _, c := range []string{"c1", "c2"} {
			ix.Progress(c, "pods", "100")
		}
	}
	apply := func(ixs []*index.Index, cluster string, o *object.Object, deleted bool) {
		for _, ix := range ixs {
			if deleted {
				ix.Delete(o.Key())
			} else {
				ix.Upsert(o)
			}
			ix.Progress(cluster, "pods", strconv.Itoa(rv))
		}
	}
	both := []*index.Index{a, b}
	keep := map[string]*object.Object{}
	for i := range 4 {
		for _, c := range []string{"c1", "c2"} {
			o := pod(c, fmt.Sprintf("p-%d", i))
			keep[c+o.Name] = o
			apply(both, c, o, false)
		}
	}
	sub := subscribe(t, sa, eventsQuery, nil)
	// Changes the follower sees on A; B applies them too.
	apply(both, "c1", pod("c1", "p-4"), false)
	apply(both, "c2", keep["c2p-0"], true)
	var last got
	for range 2 {
		last = next(t, sub)
	}
	if last.Cursor == "" || last.Cursor != last.ExtCursor {
		t.Fatalf("cursor %q, extensions' %q", last.Cursor, last.ExtCursor)
	}
	// A is gone; B goes on: a deletion, a new object, a modification.
	apply([]*index.Index{b}, "c1", keep["c1p-1"], true)
	apply([]*index.Index{b}, "c2", pod("c2", "p-5"), false)
	apply([]*index.Index{b}, "c2", pod("c2", "p-2"), false)

	resumed := subscribe(t, sb, eventsQuery, map[string]any{"since": last.Cursor})
	var seen []string
	for range 4 {
		g := next(t, resumed)
		seen = append(seen, g.String())
		// The catch-up keeps the cursor it resumed from.
		if g.Cursor != last.Cursor {
			t.Errorf("a catch-up change has cursor %q, want the one resumed from", g.Cursor)
		}
	}
	// A cursor's clock holds from the revision after its change, so
	// the last change the follower got (c2's p-0 deleted) comes again:
	// a resume may repeat, never miss (docs/design.md).
	if diff := cmp.Diff([]string{"DELETED p-1", "DELETED p-0", "MODIFIED p-2", "MODIFIED p-5"}, seen); diff != "" {
		t.Fatalf("catch-up (-want +got):\n%s", diff)
	}
	// Then live, with a cursor of B's clocks.
	apply([]*index.Index{b}, "c1", pod("c1", "p-6"), false)
	g := next(t, resumed)
	if g.String() != "ADDED p-6" || g.Cursor == last.Cursor {
		t.Fatalf("live change %s with cursor %q", g, g.Cursor)
	}
	// The same cursor resumes again, with the same catch-up.
	again := subscribe(t, sb, eventsQuery, map[string]any{"since": last.Cursor})
	if g := next(t, again); g.String() != "DELETED p-1" {
		t.Fatalf("a second resume starts with %s", g)
	}
}
