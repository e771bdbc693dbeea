package snapshot

import (
	"errors"
	"fmt"
	"iter"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// snap is what Load gave, copied.
type snap struct {
	Revision uint64
	Epoch    string
	Codecs   map[string]string
	Streams  []loadedStream
}

type loadedStream struct {
	Meta    StreamMeta
	Objects []Object
	Tombs   []Tomb
}

func openStore(t testing.TB, dir string, opts Options) *Store {
	t.Helper()
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func load(t testing.TB, s *Store) snap {
	t.Helper()
	got, err := loadErr(s)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return got
}

func loadErr(s *Store) (snap, error) {
	var out snap
	codec := func(resource string, dict []byte) error {
		if out.Codecs == nil {
			out.Codecs = map[string]string{}
		}
		out.Codecs[resource] = string(dict)
		return nil
	}
	rev, epoch, err := s.Load(codec, func(m StreamMeta, objects iter.Seq[Object], tombs iter.Seq[Tomb]) error {
		ls := loadedStream{Meta: m}
		for o := range objects {
			o.Value = append([]byte(nil), o.Value...)
			ls.Objects = append(ls.Objects, o)
		}
		for tb := range tombs {
			tb.Value = append([]byte(nil), tb.Value...)
			ls.Tombs = append(ls.Tombs, tb)
		}
		out.Streams = append(out.Streams, ls)
		return nil
	})
	out.Revision, out.Epoch = rev, epoch
	return out, err
}

func diff(want, got snap) string { return cmp.Diff(want, got, cmpopts.EquateEmpty()) }

func meta(cluster, resource string, clock uint64) StreamMeta {
	return StreamMeta{StreamKey: StreamKey{cluster, resource}, Version: "v1", Kind: "Pod", Namespaced: true,
		Clock: clock, Since: 1, Pruned: 0, AsOf: time.Unix(1700000000, 5).UTC()}
}

func obj(cluster, resource, ns, name string, gen int) Object {
	return Object{
		ObjectKey: ObjectKey{cluster, resource, ns, name},
		Value:     fmt.Appendf(nil, `{"metadata":{"name":%q,"namespace":%q,"generation":%d}}`, name, ns, gen),
	}
}

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func tomb(o Object, rv uint64, at time.Duration) Tomb { return Tomb{Object: o, RV: rv, At: t0.Add(at)} }

func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, Options{})
	if got := load(t, s); got.Revision != 0 || len(got.Streams) != 0 {
		t.Fatalf("a new store loads %+v, want nothing", got)
	}
	deploys := StreamMeta{StreamKey: StreamKey{"east", "deployments.apps"}, Group: "apps", Version: "v1",
		Kind: "Deployment", Namespaced: true, Clock: 900, Since: 400, Pruned: 450}
	nodes := StreamMeta{StreamKey: StreamKey{"east", "nodes"}, Version: "v1", Kind: "Node", Clock: 12}
	gone := StreamMeta{StreamKey: StreamKey{"west", "pods"}, Version: "v1", Kind: "Pod", Namespaced: true,
		Clock: 77, Since: 70, Removed: true}
	b := Batch{
		Revision: 42, Epoch: "e1",
		Streams: []StreamMeta{nodes, gone, deploys}, // any order
		Put: []Object{
			obj("east", "deployments.apps", "web", "front", 1),
			obj("east", "deployments.apps", "kube-system", "dns", 3),
			obj("east", "nodes", "", "node-1", 1),
		},
		Tombs: []Tomb{
			tomb(obj("east", "deployments.apps", "web", "old", 2), 850, 0),
			tomb(obj("east", "deployments.apps", "web", "older", 2), 860, time.Second),
			tomb(obj("west", "pods", "a", "p", 1), 1<<64-1, 2*time.Second),
			{Object: obj("east", "nodes", "", "node-0", 4), RV: 11}, // no time
		},
	}
	if err := s.Apply(b); err != nil {
		t.Fatal(err)
	}
	want := snap{Revision: 42, Epoch: "e1", Streams: []loadedStream{
		{Meta: deploys,
			Objects: []Object{b.Put[1], b.Put[0]}, // by namespace, then name
			Tombs:   b.Tombs[:2]},
		{Meta: nodes, Objects: b.Put[2:3], Tombs: b.Tombs[3:4]},
		{Meta: gone, Tombs: b.Tombs[2:3]},
	}}
	if d := diff(want, load(t, s)); d != "" {
		t.Errorf("Load (-want +got):\n%s", d)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, Options{Verify: true})
	if d := diff(want, load(t, s)); d != "" {
		t.Errorf("Load after reopening (-want +got):\n%s", d)
	}
	if s.Discarded() != nil {
		t.Errorf("Discarded() = %v, want nil", s.Discarded())
	}
	if n, err := s.Size(); err != nil || n <= 0 {
		t.Errorf("Size() = %d, %v; want > 0", n, err)
	}
}

func TestApply(t *testing.T) {
	pods := meta("c1", "pods", 10)
	cms := meta("c1", "configmaps", 10)
	c2 := meta("c2", "pods", 5)
	a, b, c := obj("c1", "pods", "ns", "a", 1), obj("c1", "pods", "ns", "b", 1), obj("c1", "pods", "ns", "c", 1)
	a2 := obj("c1", "pods", "ns", "a", 2)
	cm := obj("c1", "configmaps", "ns", "cm", 1)
	x := obj("c2", "pods", "ns", "x", 1)
	t1, t2, t3 := tomb(b, 11, 0), tomb(c, 12, time.Second), tomb(a, 13, 2*time.Second)
	base := Batch{Revision: 1, Epoch: "e", Streams: []StreamMeta{pods, cms, c2}, Put: []Object{a, b, c, cm, x}}

	tests := []struct {
		name    string
		steps   []Batch
		wantErr error // of the last step
		want    snap
	}{
		{
			name:  "puts and deletes",
			steps: []Batch{base, {Revision: 2, Put: []Object{a2}, Delete: []ObjectKey{b.ObjectKey, {"c1", "pods", "ns", "never"}}}},
			want: snap{Revision: 2, Epoch: "e", Streams: []loadedStream{
				{Meta: cms, Objects: []Object{cm}}, {Meta: pods, Objects: []Object{a2, c}}, {Meta: c2, Objects: []Object{x}}}},
		},
		{
			name: "put wins over delete in one batch",
			steps: []Batch{base, {Revision: 2, Epoch: "e2", Delete: []ObjectKey{a.ObjectKey}, Put: []Object{a2},
				Streams: []StreamMeta{meta("c1", "pods", 20)}}},
			want: snap{Revision: 2, Epoch: "e2", Streams: []loadedStream{
				{Meta: cms, Objects: []Object{cm}}, {Meta: meta("c1", "pods", 20), Objects: []Object{a2, b, c}}, {Meta: c2, Objects: []Object{x}}}},
		},
		{
			name: "tombs appended and the oldest dropped",
			steps: []Batch{
				base,
				{Revision: 2, Delete: []ObjectKey{b.ObjectKey}, Tombs: []Tomb{t1}},
				{Revision: 3, Delete: []ObjectKey{c.ObjectKey}, Tombs: []Tomb{t2}},
				{Revision: 4, Delete: []ObjectKey{a.ObjectKey}, Tombs: []Tomb{t3}, DropTombs: []TombDrop{{pods.StreamKey, 1}}},
			},
			want: snap{Revision: 4, Epoch: "e", Streams: []loadedStream{
				{Meta: cms, Objects: []Object{cm}}, {Meta: pods, Tombs: []Tomb{t2, t3}}, {Meta: c2, Objects: []Object{x}}}},
		},
		{
			name: "dropping more tombs than held drops them all, not the batch's",
			steps: []Batch{
				base,
				{Revision: 2, Tombs: []Tomb{t1, t2}},
				{Revision: 3, DropTombs: []TombDrop{{pods.StreamKey, 5}}, Tombs: []Tomb{t3}},
			},
			want: snap{Revision: 3, Epoch: "e", Streams: []loadedStream{
				{Meta: cms, Objects: []Object{cm}}, {Meta: pods, Objects: []Object{a, b, c}, Tombs: []Tomb{t3}}, {Meta: c2, Objects: []Object{x}}}},
		},
		{
			name: "the newest tombs popped and appended again with their rv",
			steps: []Batch{
				base,
				{Revision: 2, Tombs: []Tomb{t1, tomb(c, 0, time.Second)}},
				{Revision: 3, PopTombs: []TombDrop{{pods.StreamKey, 1}}, Tombs: []Tomb{t2, t3}},
			},
			want: snap{Revision: 3, Epoch: "e", Streams: []loadedStream{
				{Meta: cms, Objects: []Object{cm}}, {Meta: pods, Objects: []Object{a, b, c}, Tombs: []Tomb{t1, t2, t3}}, {Meta: c2, Objects: []Object{x}}}},
		},
		{
			name:  "remove a stream",
			steps: []Batch{base, {Revision: 2, Tombs: []Tomb{t1}}, {Revision: 3, RemoveStreams: []StreamKey{pods.StreamKey}}},
			want: snap{Revision: 3, Epoch: "e", Streams: []loadedStream{
				{Meta: cms, Objects: []Object{cm}}, {Meta: c2, Objects: []Object{x}}}},
		},
		{
			name: "remove a stream and add it again in one batch",
			steps: []Batch{base, {Revision: 2, Tombs: []Tomb{t1}},
				{Revision: 3, RemoveStreams: []StreamKey{pods.StreamKey}, Streams: []StreamMeta{pods}, Put: []Object{a2}, Tombs: []Tomb{t3}}},
			want: snap{Revision: 3, Epoch: "e", Streams: []loadedStream{
				{Meta: cms, Objects: []Object{cm}}, {Meta: pods, Objects: []Object{a2}, Tombs: []Tomb{t3}}, {Meta: c2, Objects: []Object{x}}}},
		},
		{
			name: "a removed cluster keeps its tombs",
			steps: []Batch{base, {Revision: 2, DropObjects: []StreamKey{pods.StreamKey},
				Streams: []StreamMeta{{StreamKey: pods.StreamKey, Clock: 10, Removed: true}},
				Tombs:   []Tomb{tomb(a, 1<<64-1, 0), tomb(b, 1<<64-1, 0), tomb(c, 1<<64-1, 0)}}},
			want: snap{Revision: 2, Epoch: "e", Streams: []loadedStream{
				{Meta: cms, Objects: []Object{cm}},
				{Meta: StreamMeta{StreamKey: pods.StreamKey, Clock: 10, Removed: true},
					Tombs: []Tomb{tomb(a, 1<<64-1, 0), tomb(b, 1<<64-1, 0), tomb(c, 1<<64-1, 0)}},
				{Meta: c2, Objects: []Object{x}}}},
		},
		{
			name:    "an object of a stream with no meta is refused, and nothing of its batch stored",
			steps:   []Batch{base, {Revision: 2, Put: []Object{a2, obj("c3", "pods", "ns", "y", 1)}}},
			wantErr: ErrUnknownStream,
			want: snap{Revision: 1, Epoch: "e", Streams: []loadedStream{
				{Meta: cms, Objects: []Object{cm}}, {Meta: pods, Objects: []Object{a, b, c}}, {Meta: c2, Objects: []Object{x}}}},
		},
		{
			name:    "a tomb of a removed stream is refused",
			steps:   []Batch{base, {Revision: 2, RemoveStreams: []StreamKey{c2.StreamKey}, Tombs: []Tomb{tomb(x, 6, 0)}}},
			wantErr: ErrUnknownStream,
			want: snap{Revision: 1, Epoch: "e", Streams: []loadedStream{
				{Meta: cms, Objects: []Object{cm}}, {Meta: pods, Objects: []Object{a, b, c}}, {Meta: c2, Objects: []Object{x}}}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := openStore(t, t.TempDir(), Options{})
			for i, b := range tc.steps {
				err := s.Apply(b)
				if i == len(tc.steps)-1 && tc.wantErr != nil {
					if !errors.Is(err, tc.wantErr) {
						t.Fatalf("last Apply: %v, want %v", err, tc.wantErr)
					}
					continue
				}
				if err != nil {
					t.Fatalf("Apply %d: %v", i, err)
				}
			}
			if d := diff(tc.want, load(t, s)); d != "" {
				t.Errorf("Load (-want +got):\n%s", d)
			}
		})
	}
}

func TestApplyRefusesBadBatches(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{})
	tests := []struct {
		name string
		b    Batch
	}{
		{"no revision outside a rewrite", Batch{Streams: []StreamMeta{meta("c", "pods", 1)}}},
		{"a NUL in a name", Batch{Revision: 1, Streams: []StreamMeta{meta("c\x00", "pods", 1)}}},
		{"no resource", Batch{Revision: 1, Streams: []StreamMeta{meta("c", "", 1)}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := s.Apply(tc.b); err == nil {
				t.Fatal("Apply succeeded")
			}
		})
	}
	if got := load(t, s); got.Revision != 0 || len(got.Streams) != 0 {
		t.Errorf("Load = %+v, want nothing", got)
	}
}

func TestReset(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, Options{})
	old := Batch{Revision: 5, Epoch: "old", Streams: []StreamMeta{meta("c", "pods", 10)},
		Put: []Object{obj("c", "pods", "ns", "a", 1)}, Tombs: []Tomb{tomb(obj("c", "pods", "ns", "z", 1), 9, 0)}}
	if err := s.Apply(old); err != nil {
		t.Fatal(err)
	}
	wantOld := snap{Revision: 5, Epoch: "old", Streams: []loadedStream{{Meta: old.Streams[0], Objects: old.Put, Tombs: old.Tombs}}}

	// A rewrite in two batches: until its last lands, Load gives the old
	// snapshot.
	if err := s.Reset("new"); err != nil {
		t.Fatal(err)
	}
	part := Batch{Streams: []StreamMeta{meta("c", "pods", 20), meta("d", "pods", 3)}, Put: []Object{obj("c", "pods", "ns", "b", 1)}}
	if err := s.Apply(part); err != nil {
		t.Fatal(err)
	}
	if d := diff(wantOld, load(t, s)); d != "" {
		t.Fatalf("Load during a rewrite (-want +got):\n%s", d)
	}

	// A crash (here a Close) mid-rewrite: the old snapshot stays, the
	// rewrite's batches go.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, Options{})
	if d := diff(wantOld, load(t, s)); d != "" {
		t.Fatalf("Load after a rewrite cut short (-want +got):\n%s", d)
	}
	if err := s.Apply(Batch{Put: []Object{obj("c", "pods", "ns", "q", 1)}}); err == nil {
		t.Fatal("a batch with no revision is accepted after the rewrite was dropped")
	}

	// A whole rewrite, restarted once.
	if err := s.Reset("new"); err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(part); err != nil {
		t.Fatal(err)
	}
	if err := s.Reset("newer"); err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(part); err != nil {
		t.Fatal(err)
	}
	last := Batch{Revision: 7, Put: []Object{obj("d", "pods", "", "n", 1)}, Tombs: []Tomb{tomb(obj("d", "pods", "", "m", 1), 2, 0)}}
	if err := s.Apply(last); err != nil {
		t.Fatal(err)
	}
	want := snap{Revision: 7, Epoch: "newer", Streams: []loadedStream{
		{Meta: part.Streams[0], Objects: part.Put},
		{Meta: part.Streams[1], Objects: last.Put, Tombs: last.Tombs},
	}}
	if d := diff(want, load(t, s)); d != "" {
		t.Fatalf("Load after the rewrite (-want +got):\n%s", d)
	}
	// Batches go on on the new snapshot, tombs after the rewrite's.
	next := Batch{Revision: 8, Epoch: "newer", Tombs: []Tomb{tomb(obj("d", "pods", "", "l", 1), 4, 0)}}
	if err := s.Apply(next); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, Options{Verify: true})
	want.Revision = 8
	want.Streams[1].Tombs = append(want.Streams[1].Tombs, next.Tombs...)
	if d := diff(want, load(t, s)); d != "" {
		t.Fatalf("Load after reopening (-want +got):\n%s", d)
	}

	// A rewrite to nothing empties the store in one step.
	if err := s.Reset("empty"); err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(Batch{Revision: 9}); err != nil {
		t.Fatal(err)
	}
	if d := diff(snap{Revision: 9, Epoch: "empty"}, load(t, s)); d != "" {
		t.Fatalf("Load after an empty rewrite (-want +got):\n%s", d)
	}
}

// TestLoadIsAPointInTime applies a batch while Load runs: Load gives the
// snapshot as it was when it began.
func TestLoadIsAPointInTime(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{})
	first := Batch{Revision: 1, Epoch: "e", Streams: []StreamMeta{meta("a", "pods", 1), meta("b", "pods", 1)},
		Put: []Object{obj("a", "pods", "ns", "x", 1), obj("b", "pods", "ns", "y", 1)}}
	if err := s.Apply(first); err != nil {
		t.Fatal(err)
	}
	var got []Object
	applied := false
	rev, _, err := s.Load(nil, func(m StreamMeta, objects iter.Seq[Object], _ iter.Seq[Tomb]) error {
		if !applied {
			applied = true
			done := make(chan error)
			go func() {
				done <- s.Apply(Batch{Revision: 2, Put: []Object{obj("b", "pods", "ns", "y", 2), obj("b", "pods", "ns", "z", 1)},
					RemoveStreams: []StreamKey{{"a", "pods"}}})
			}()
			if err := <-done; err != nil {
				return err
			}
		}
		for o := range objects {
			o.Value = append([]byte(nil), o.Value...)
			got = append(got, o)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if rev != 1 {
		t.Errorf("revision %d, want 1", rev)
	}
	if d := cmp.Diff(first.Put, got); d != "" {
		t.Errorf("objects (-want +got):\n%s", d)
	}
	if got := load(t, s); got.Revision != 2 || len(got.Streams) != 1 || len(got.Streams[0].Objects) != 2 {
		t.Errorf("the next Load gives %+v, want revision 2 with b's two objects", got)
	}
}

func TestLoadStopsOnTheCallersError(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{})
	if err := s.Apply(Batch{Revision: 1, Streams: []StreamMeta{meta("a", "pods", 1), meta("b", "pods", 1)}}); err != nil {
		t.Fatal(err)
	}
	stop := errors.New("stop")
	calls := 0
	_, _, err := s.Load(nil, func(StreamMeta, iter.Seq[Object], iter.Seq[Tomb]) error { calls++; return stop })
	if err != stop || calls != 1 {
		t.Errorf("Load = %v after %d calls, want the caller's error after 1", err, calls)
	}
	if s.Discarded() != nil {
		t.Errorf("the caller's error discarded the store: %v", s.Discarded())
	}
}

func TestClosed(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := s.Apply(Batch{Revision: 1}); !errors.Is(err, ErrClosed) {
		t.Errorf("Apply: %v, want ErrClosed", err)
	}
	if _, _, err := s.Load(nil, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Load: %v, want ErrClosed", err)
	}
	if err := s.Reset("e"); !errors.Is(err, ErrClosed) {
		t.Errorf("Reset: %v, want ErrClosed", err)
	}
	if _, err := s.Size(); !errors.Is(err, ErrClosed) {
		t.Errorf("Size: %v, want ErrClosed", err)
	}
}

// TestCodecs: dictionaries are stored per snapshot, before its streams,
// replaced by resource, kept across a reopen and dropped with the
// generation a rewrite replaces.
func TestCodecs(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, Options{})
	m := meta("a", "pods", 1)
	m.Derivation = "paths status.phase"
	if err := s.Apply(Batch{Revision: 1, Codecs: []Codec{{"pods", []byte("d1")}, {"services", []byte("s1")}},
		Streams: []StreamMeta{m}, Put: []Object{obj("a", "pods", "ns", "x", 1)}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(Batch{Revision: 2, Codecs: []Codec{{"pods", []byte("d2")}},
		Tombs: []Tomb{{Object: obj("a", "pods", "ns", "y", 1), RV: 2, At: time.Unix(1700000000, 0).UTC()}}}); err != nil {
		t.Fatal(err)
	}
	want := snap{Revision: 2, Epoch: "", Codecs: map[string]string{"pods": "d2", "services": "s1"},
		Streams: []loadedStream{{Meta: m, Objects: []Object{obj("a", "pods", "ns", "x", 1)},
			Tombs: []Tomb{{Object: obj("a", "pods", "ns", "y", 1), RV: 2, At: time.Unix(1700000000, 0).UTC()}}}}}
	if d := diff(want, load(t, s)); d != "" {
		t.Fatalf("loaded (-want +got):\n%s", d)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, Options{})
	// The tombs' sequence is found again past the codecs.
	if err := s.Apply(Batch{Revision: 3, Tombs: []Tomb{{Object: obj("a", "pods", "ns", "z", 1), RV: 3, At: time.Unix(1700000001, 0).UTC()}}}); err != nil {
		t.Fatal(err)
	}
	got := load(t, s)
	if d := cmp.Diff(want.Codecs, got.Codecs); d != "" || len(got.Streams) != 1 || len(got.Streams[0].Tombs) != 2 {
		t.Fatalf("after a reopen: %+v", got)
	}
	if err := s.Reset("e2"); err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(Batch{Revision: 4, Streams: []StreamMeta{m}}); err != nil {
		t.Fatal(err)
	}
	if got := load(t, s); len(got.Codecs) != 0 {
		t.Errorf("a rewrite kept the codecs of the old snapshot: %v", got.Codecs)
	}
	if err := s.Apply(Batch{Revision: 5, Codecs: []Codec{{"", []byte("x")}}}); err == nil {
		t.Error("a codec without a resource was stored")
	}
}
