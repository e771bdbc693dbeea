package index_test

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetcache/fleetcache/internal/indextest"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/feed"
	"github.com/fleetcache/fleetcache/pkg/index/object"
)

// member is one stream's truth as its API server has it: objects by
// name and the resourceVersion counter, and what it did, in order.
type member struct {
	cluster string
	t       *object.Type
	live    map[string]*object.Object
	ops     []memberOp
}

// memberOp is a change as a watch delivers it (o, deleted), or a relist
// (list: the objects at rv).
type memberOp struct {
	o       *object.Object
	deleted bool
	relist  bool
	list    []*object.Object
	rv      int
}

func (m *member) step(r *rand.Rand, rvs *int) {
	*rvs++
	rv := strconv.Itoa(*rvs)
	name := fmt.Sprintf("o-%d", r.IntN(12))
	old := m.live[name]
	switch {
	case r.IntN(12) == 0:
		// The reflector relists (after a 410): the state at rv.
		m.ops = append(m.ops, memberOp{relist: true, list: slices.Collect(maps.Values(m.live)), rv: *rvs})
		return
	case old != nil && r.IntN(3) == 0:
		delete(m.live, name)
		m.ops = append(m.ops, memberOp{o: indextest.Modified(old, rv), deleted: true, rv: *rvs})
		return
	case old != nil:
		m.live[name] = indextest.Modified(old, rv, indextest.WithLabels("v", rv))
	default:
		m.live[name] = indextest.Obj(m.cluster, m.t, "ns", name, indextest.WithRV(rv), indextest.WithUID(m.cluster+name+rv))
	}
	m.ops = append(m.ops, memberOp{o: m.live[name], rv: *rvs})
}

// apply applies op as the informers' store does: the change, then the
// clock.
func apply(ix *index.Index, m *member, op memberOp) {
	rv := strconv.Itoa(op.rv)
	switch {
	case op.relist:
		keep := map[object.Key]bool{}
		for _, o := range op.list {
			keep[o.Key()] = true
			ix.Upsert(o)
		}
		for _, o := range ix.Objects(m.cluster, m.t.Resource) {
			if !keep[o.Key()] {
				ix.DeleteObject(o)
			}
		}
	case op.deleted:
		ix.Delete(op.o.Key())
	default:
		ix.Upsert(op.o)
	}
	ix.Progress(m.cluster, m.t.Resource, rv)
}

// view is a follower's copy: objects by key.
type view map[object.Key]string

func (v view) apply(evs []feed.Event[*object.Object]) {
	for _, ev := range evs {
		if ev.Type == feed.Deleted {
			delete(v, ev.Object.Key())
		} else {
			v[ev.Object.Key()] = ev.Object.ResourceVersion
		}
	}
}

func viewOf(ix *index.Index) view {
	v := view{}
	for _, c := range []string{"c0", "c1", "c2"} {
		for _, o := range ix.Objects(c, "") {
			v[o.Key()] = o.ResourceVersion
		}
	}
	return v
}

// TestResumeOnAnotherIndex follows index A from the start to a random
// revision, takes the clocks at it as the cursor, and resumes on index B,
// which applied the same streams in another interleaving and further:
// the follower's copy must then be B's, with nothing missing, nothing
// deleted that lives, and no object older than B's.
func TestResumeOnAnotherIndex(t *testing.T) {
	skipped := 0
	for seed := range uint64(40) {
		r := rand.New(rand.NewPCG(seed, 99))
		var members []*member
		for _, c := range []string{"c0", "c1", "c2"} {
			for _, typ := range []*object.Type{indextest.PodType, indextest.ConfigMapType} {
				members = append(members, &member{cluster: c, t: typ, live: map[string]*object.Object{}})
			}
		}
		rvs := 0
		for range 300 {
			members[r.IntN(len(members))].step(r, &rvs)
		}
		// Each index applies each stream in order, the streams
		// interleaved at random; A stops part way.
		feedOf := func(stop float64) *index.Index {
			ix := index.New(index.Options{Retention: 1 << 20})
			next := make([]int, len(members))
			for {
				var open []int
				for i, m := range members {
					if next[i] < int(float64(len(m.ops))*stop) {
						open = append(open, i)
					}
				}
				if len(open) == 0 {
					return ix
				}
				i := open[r.IntN(len(open))]
				apply(ix, members[i], members[i].ops[next[i]])
				next[i]++
			}
		}
		a, b := feedOf(0.3+0.6*r.Float64()), feedOf(1)
		rev := uint64(r.IntN(int(a.Revision()) + 1))
		evs, err := a.Events(0, int(rev))
		if err != nil {
			t.Fatal(err)
		}
		follower := view{}
		follower.apply(evs[:min(len(evs), int(rev))])
		clocks := a.ClocksAt(rev, nil)
		catchUp, at, err := b.Since(clocks, nil, nil)
		if err != nil {
			// A stream A had not listed by rev is named at 0 when it
			// has objects: only an index as young resumes it.
			if errors.Is(err, index.ErrHistoryGone) && slices.ContainsFunc(clocks, func(c index.Clock) bool { return c.RV == 0 }) {
				skipped++
				continue
			}
			t.Fatalf("seed %d: resume at %v: %v", seed, clocks, err)
		}
		if at != b.Revision() {
			t.Fatalf("seed %d: resumed at revision %d, the index is at %d", seed, at, b.Revision())
		}
		follower.apply(catchUp)
		if diff := cmp.Diff(viewOf(b), follower); diff != "" {
			t.Fatalf("seed %d: after resuming from %v (-index +follower):\n%s", seed, clocks, diff)
		}
	}
	if skipped > 10 {
		t.Fatalf("%d of 40 resumes refused for a stream named at 0", skipped)
	}
	t.Logf("%d of 40 resumes refused for a stream named at 0", skipped)
}

// TestSinceRefusesWhatItCannotKnow: a cursor ahead of the index waits
// (ErrBehind); one from before the index's first list, or before a
// dropped tomb, expires (ErrHistoryGone).
func TestSinceRefusesWhatItCannotKnow(t *testing.T) {
	ix := index.New(index.Options{MaxTombstones: 2})
	pod := func(name, rv string) *object.Object {
		return indextest.Obj("c0", indextest.PodType, "ns", name, indextest.WithRV(rv), indextest.WithUID(name))
	}
	ix.Upsert(pod("a", "10"))
	ix.Progress("c0", "pods", "10")
	s := index.Stream{Cluster: "c0", Resource: "pods"}
	if _, _, err := ix.Since([]index.Clock{{Stream: s, RV: 11}}, nil, nil); !errors.Is(err, index.ErrBehind) {
		t.Fatalf("a cursor ahead: %v, want ErrBehind", err)
	}
	if _, _, err := ix.Since([]index.Clock{{Stream: s, RV: 9}}, nil, nil); !errors.Is(err, index.ErrHistoryGone) {
		t.Fatalf("a cursor from before the first list: %v, want ErrHistoryGone", err)
	}
	for i, name := range []string{"b", "c", "d"} {
		rv := strconv.Itoa(11 + 2*i)
		ix.Upsert(pod(name, rv))
		ix.Progress("c0", "pods", rv)
		ix.Delete(pod(name, "").Key())
		ix.Progress("c0", "pods", strconv.Itoa(12+2*i))
	}
	// Three deletions at 12, 14 and 16; two tombs kept: 12 is gone.
	if _, _, err := ix.Since([]index.Clock{{Stream: s, RV: 11}}, nil, nil); !errors.Is(err, index.ErrHistoryGone) {
		t.Fatalf("a cursor from before a dropped tomb: %v, want ErrHistoryGone", err)
	}
	evs, _, err := ix.Since([]index.Clock{{Stream: s, RV: 12}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"DELETED c0/pods/ns/c", "DELETED c0/pods/ns/d"}, changes(evs)); diff != "" {
		t.Fatalf("resume from 12 (-want +got):\n%s", diff)
	}
	// A removed cluster: a cursor that names it gets every deletion.
	ix.RemoveCluster("c0")
	evs, _, err = ix.Since([]index.Clock{{Stream: s, RV: 16}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"DELETED c0/pods/ns/a"}, changes(evs)); diff != "" {
		t.Fatalf("resume after the cluster's removal (-want +got):\n%s", diff)
	}
	if err := ix.Verify(); err != nil {
		t.Fatal(err)
	}
}

// changes returns each event's type and key.
func changes(evs []feed.Event[*object.Object]) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.Type.String() + " " + ev.Object.Key().String()
	}
	return out
}

// TestClock: a stream's clock is the last Progress, at once (ClocksAt holds
// it from the next revision), and none before the first list, for
// resourceVersions that are not integers, or once the cluster is removed.
func TestClock(t *testing.T) {
	ix := index.New(index.Options{})
	s := index.Stream{Cluster: "c0", Resource: "pods"}
	if rv, ok := ix.Clock(s); ok {
		t.Fatalf("before any list: %d", rv)
	}
	ix.Upsert(indextest.Obj("c0", indextest.PodType, "ns", "a", indextest.WithRV("10"), indextest.WithUID("a")))
	for _, rv := range []string{"10", "15", "12"} {
		ix.Progress("c0", "pods", rv)
	}
	if rv, ok := ix.Clock(s); !ok || rv != 15 {
		t.Errorf("after Progress 10, 15, 12: %d %v, want 15", rv, ok)
	}
	ix.Progress("c0", "pods.odd", "x1")
	if rv, ok := ix.Clock(index.Stream{Cluster: "c0", Resource: "pods.odd"}); ok {
		t.Errorf("resourceVersions that are not integers: %d", rv)
	}
	ix.RemoveCluster("c0")
	if rv, ok := ix.Clock(s); ok {
		t.Errorf("a removed cluster: %d", rv)
	}
}

// TestRestoreRefuses checks that a restore refuses an object of a stream
// it was not given and an object given twice, and that a restore whose
// batches are whole verifies.
func TestRestoreRefuses(t *testing.T) {
	restore := func(objs ...*object.Object) (*index.Index, error) {
		ix := index.New(index.Options{})
		r, err := ix.Restore()
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Stream(index.StreamState{Stream: index.Stream{Cluster: "c0", Resource: "pods"}, Clock: 10}); err != nil {
			t.Fatal(err)
		}
		var batch []index.Prepared
		for _, o := range objs {
			batch = append(batch, index.Prepared{Object: o})
		}
		if err := r.Objects(batch); err != nil {
			return ix, err
		}
		r.Finish()
		return ix, nil
	}
	a := indextest.Obj("c0", indextest.PodType, "ns", "a", indextest.WithRV("5"), indextest.WithLabels("app", "web"))
	b := indextest.Obj("c0", indextest.PodType, "ns", "b", indextest.WithRV("6"))
	ix, err := restore(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.Verify(); err != nil {
		t.Fatal(err)
	}
	if n := ix.ObjectCount("c0", "pods"); n != 2 {
		t.Errorf("restored %d objects, want 2", n)
	}
	if _, err := restore(a, b, indextest.Obj("c0", indextest.PodType, "ns", "a", indextest.WithRV("7"))); err == nil || !strings.Contains(err.Error(), "given twice") {
		t.Errorf("an object given twice: %v, want an error", err)
	}
	if _, err := restore(a, indextest.Obj("c1", indextest.PodType, "ns", "x")); err == nil || !strings.Contains(err.Error(), "of no stream given") {
		t.Errorf("an object of no stream: %v, want an error", err)
	}
}

// TestRestoreAbort: a restore that failed half-way leaves, once aborted, an
// index as empty as a new one, which takes objects and restores again.
func TestRestoreAbort(t *testing.T) {
	ix := index.New(index.Options{MemoryBudget: 1 << 30})
	r, err := ix.Restore()
	if err != nil {
		t.Fatal(err)
	}
	st := index.StreamState{Stream: index.Stream{Cluster: "c0", Resource: "pods"}, Clock: 10}
	if err := r.Stream(st); err != nil {
		t.Fatal(err)
	}
	a := indextest.Obj("c0", indextest.PodType, "ns", "a", indextest.WithRV("5"), indextest.WithLabels("app", "web"))
	if err := r.Objects([]index.Prepared{{Object: a}, {Object: indextest.Obj("c1", indextest.PodType, "ns", "x")}}); err == nil {
		t.Fatal("an object of no stream restored")
	}
	r.Abort()
	if err := ix.Verify(); err != nil {
		t.Fatal(err)
	}
	_, stream := ix.Clock(st.Stream)
	if n, used := ix.ObjectCount("", ""), ix.Budget().Used; n != 0 || stream || used != 0 {
		t.Fatalf("after Abort: %d objects, the stream held %v, %d bytes of the budget; want none", n, stream, used)
	}
	if got := ix.Lookup("c0", "ns", "a"); len(got) != 0 {
		t.Errorf("after Abort the index finds %d objects named a", len(got))
	}
	if r, err = ix.Restore(); err != nil {
		t.Fatalf("restore after Abort: %v", err)
	}
	if err := r.Stream(st); err != nil {
		t.Fatal(err)
	}
	if err := r.Objects([]index.Prepared{{Object: a}}); err != nil {
		t.Fatal(err)
	}
	r.Finish()
	ix.Upsert(indextest.Obj("c0", indextest.PodType, "ns", "b", indextest.WithRV("11")))
	if err := ix.Verify(); err != nil {
		t.Fatal(err)
	}
	if n := ix.ObjectCount("c0", "pods"); n != 2 {
		t.Errorf("%d Pods after the second restore and an upsert, want 2", n)
	}
}
