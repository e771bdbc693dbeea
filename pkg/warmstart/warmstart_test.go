package warmstart_test

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fleetcache/fleetcache/internal/indextest"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/compact"
	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/snapshot"
	"github.com/fleetcache/fleetcache/pkg/warmstart"
)

var podType, cmType, depType = indextest.PodType, indextest.ConfigMapType, indextest.DeploymentType

// fleet drives an index as the informers do: watch events each followed
// by the stream's clock, relists, clusters removed and added again.
type fleet struct {
	r     *rand.Rand
	ix    *index.Index
	types []*object.Type
	rv    int
	live  map[index.Stream]map[string]*object.Object
}

// informerTypes returns the fleet's types as the informers make them:
// compressed by codecs (nil: not compressed), with the paths ix indexes
// projected.
func informerTypes(ix *index.Index, codecs *compact.Codecs) []*object.Type {
	var out []*object.Type
	for _, t := range []*object.Type{podType, cmType, depType} {
		c := *t
		if codecs != nil {
			c.Codec = codecs.For(t.Resource)
		}
		c.Projected = fieldpath.NewSet(ix.IndexedPaths(t.Resource))
		out = append(out, &c)
	}
	return out
}

// testCodecs returns codecs that train on a few objects.
func testCodecs() *compact.Codecs { return &compact.Codecs{TrainBytes: 2048} }

func newObject(t testing.TB, cluster string, typ *object.Type, name string, rv int, uid string) *object.Object {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": typ.APIVersion(), "kind": typ.Kind,
		"metadata": map[string]any{"name": name, "namespace": "ns", "uid": uid,
			"resourceVersion": strconv.Itoa(rv), "labels": map[string]any{"app": "a" + strconv.Itoa(rv%5)},
			"annotations": map[string]any{"note": fmt.Sprintf("Owned by team-%d, see wiki page %d", rv%3, rv%7)}},
		"spec": map[string]any{"n": int64(rv), "nodeName": fmt.Sprintf("node-%d", rv%4),
			"containers": []any{map[string]any{"name": "app", "image": fmt.Sprintf("registry.example.com/app-%d:v1.%d", rv%3, rv%2)}},
			"template":   map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"image": fmt.Sprintf("example.org/web:%d", rv%5)}}}}},
		"status": map[string]any{"phase": []string{"Running", "Pending"}[rv%2]},
	}}
	o, err := object.NewObject(cluster, typ, u)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func (f *fleet) step(t testing.TB) {
	clusters := []string{"c0", "c1", "c2"}
	cluster, typ := clusters[f.r.IntN(len(clusters))], f.types[f.r.IntN(len(f.types))]
	k := index.Stream{Cluster: cluster, Resource: typ.Resource}
	live := f.live[k]
	if live == nil {
		live = map[string]*object.Object{}
		f.live[k] = live
	}
	f.rv++
	rv := strconv.Itoa(f.rv)
	name := fmt.Sprintf("o-%d", f.r.IntN(8))
	switch n := f.r.IntN(100); {
	case n < 2:
		// The cluster leaves the fleet; it may come back later.
		f.ix.RemoveCluster(cluster)
		for s := range f.live {
			if s.Cluster == cluster {
				delete(f.live, s)
			}
		}
		return
	case n < 8:
		// A relist: the objects at rv, a few deleted meanwhile.
		for name, o := range live {
			if f.r.IntN(4) == 0 {
				delete(live, name)
				continue
			}
			f.ix.Upsert(o)
		}
		for _, o := range f.ix.Objects(cluster, typ.Resource) {
			if live[o.Name] == nil {
				f.ix.DeleteObject(o)
			}
		}
	case n < 12:
		// A bookmark.
	case live[name] != nil && n < 40:
		f.ix.Delete(live[name].Key())
		delete(live, name)
	case n < 45:
		// A deletion whose clock comes with a later event.
		if o := live[name]; o != nil {
			f.ix.Delete(o.Key())
			delete(live, name)
			return
		}
		fallthrough
	default:
		uid := fmt.Sprintf("%s-%s-%s-%d", cluster, typ.Resource, name, f.rv)
		if old := live[name]; old != nil {
			uid = string(old.UID)
		}
		o := newObject(t, cluster, typ, name, f.rv, uid)
		live[name] = o
		f.ix.Upsert(o)
	}
	f.ix.Progress(cluster, typ.Resource, rv)
}

// newCodecs returns new codecs, as a new process has, if codecs is not
// nil.
func newCodecs(codecs *compact.Codecs) *compact.Codecs {
	if codecs == nil {
		return nil
	}
	return testCodecs()
}

// state is what a snapshot must keep of an index, comparable.
type state struct {
	Objects []string
	Streams []string
}

func stateOf(ix *index.Index) state {
	cp := ix.ReadAll()
	var s state
	for _, o := range cp.Objects {
		s.Objects = append(s.Objects, fmt.Sprintf("%s uid=%s rv=%s labels=%v owners=%v created=%d %s",
			o.Key(), o.UID, o.ResourceVersion, o.Labels, o.Owners, o.Created().UnixNano(), o.Raw()))
	}
	for _, st := range cp.Streams {
		line := fmt.Sprintf("%s clock=%d since=%d pruned=%d removed=%v tombs:", st.Stream, st.Clock, st.Since, st.Pruned, st.Removed)
		for _, tb := range st.Tombs {
			line += fmt.Sprintf(" [%s rv=%d at=%d %s]", tb.Object.Key(), tb.RV, tb.At.UnixNano(), tb.Object.Raw())
		}
		s.Streams = append(s.Streams, line)
	}
	return s
}

// bodiesOf lists how each object's body is held.
func bodiesOf(ix *index.Index) []string {
	var out []string
	for _, o := range ix.ReadAll().Objects {
		out = append(out, fmt.Sprintf("%s compressed=%v bytes=%d", o.Key(), o.Compressed(), o.BodySize()))
	}
	return out
}

func openStore(t testing.TB, dir string) *snapshot.Store {
	t.Helper()
	s, err := snapshot.Open(dir, snapshot.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestSnapshotIsTheIndex drives an index at random (changes, deletions
// covered by a later clock, relists, clusters removed and back, tombs
// pruned, the feed outrun so that the writer rewrites) and, after each
// write, loads the store into a new index: it must hold what the first
// held at that moment. Half the time the test then goes on from the loaded
// index, as a restarted replica does, with a writer that goes on from the
// store it loaded.
func TestSnapshotIsTheIndex(t *testing.T) {
	opts := index.Options{Retention: 200, MaxTombstones: 15}
	for seed := range uint64(8) {
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 7))
			dir := filepath.Join(t.TempDir(), "snapshot")
			store := openStore(t, dir)
			f := &fleet{r: r, ix: index.New(opts), live: map[index.Stream]map[string]*object.Object{}}
			// Half the seeds compress, as the informers do by default.
			codecs := testCodecs()
			if seed%2 == 1 {
				codecs = nil
			}
			f.types = informerTypes(f.ix, codecs)
			w := warmstart.NewWriter(f.ix, store, nil, warmstart.Options{RewriteBatch: 7})
			restarts := 0
			for round := range 25 {
				steps := r.IntN(60)
				if r.IntN(6) == 0 {
					steps = 300 // past the feed's retention: a rewrite
				}
				for range steps {
					f.step(t)
				}
				if err := w.Write(); err != nil {
					t.Fatalf("round %d: write: %v", round, err)
				}
				want := stateOf(f.ix)
				loaded := index.New(opts)
				l, err := warmstart.Load(store, loaded, newCodecs(codecs))
				if err != nil {
					t.Fatalf("round %d: load: %v", round, err)
				}
				if l.Rebuilt != 0 {
					t.Fatalf("round %d: %d of %d objects were built again from their JSON", round, l.Rebuilt, l.Objects)
				}
				if diff := cmp.Diff(bodiesOf(f.ix), bodiesOf(loaded)); diff != "" {
					t.Fatalf("round %d: the loaded index holds other bodies (-written +loaded):\n%s", round, diff)
				}
				if diff := cmp.Diff(want, stateOf(loaded)); diff != "" {
					t.Fatalf("round %d: the loaded index differs (-written +loaded):\n%s", round, diff)
				}
				if err := loaded.Verify(); err != nil {
					t.Fatalf("round %d: the loaded index: %v", round, err)
				}
				if r.IntN(2) == 0 {
					// A restart: the store is closed and opened again,
					// and the loaded index goes on.
					if err := store.Close(); err != nil {
						t.Fatal(err)
					}
					store = openStore(t, dir)
					loaded = index.New(opts)
					codecs = newCodecs(codecs)
					l, err := warmstart.Load(store, loaded, codecs)
					if err != nil {
						t.Fatalf("round %d: load after reopening: %v", round, err)
					}
					f.ix, f.types = loaded, informerTypes(loaded, codecs)
					w = warmstart.NewWriter(loaded, store, l, warmstart.Options{RewriteBatch: 7})
					restarts++
				}
			}
			if err := store.Close(); err != nil {
				t.Fatal(err)
			}
			if restarts == 0 {
				t.Fatal("no restart: the test did not check a writer going on from a load")
			}
		})
	}
}

// TestLoadEmpty: a new store loads nothing.
func TestLoadEmpty(t *testing.T) {
	store := openStore(t, t.TempDir())
	defer store.Close()
	ix := index.New(index.Options{})
	l, err := warmstart.Load(store, ix, nil)
	if err != nil || len(l.Streams) != 0 || l.Objects != 0 {
		t.Fatalf("Load of a new store = %+v, %v; want nothing", l, err)
	}
}

// TestLoadBuildsAgain loads a snapshot into a process that indexes other
// paths, or whose codecs hold another dictionary, or that compresses
// nothing: each object is built again from its JSON, as the informers
// build it, and the writer then rewrites the store in this process's
// form, which the next load restores as it is.
func TestLoadBuildsAgain(t *testing.T) {
	for _, c := range []struct {
		name   string
		opts   index.Options
		codecs func() *compact.Codecs
	}{
		{"other paths", index.Options{Indexes: map[string][]fieldpath.Path{"pods": {fieldpath.MustParse("spec.n")}}}, testCodecs},
		{"another dictionary", index.Options{}, func() *compact.Codecs {
			codecs := testCodecs()
			for i := 0; !codecs.For("pods").Trained(); i++ {
				codecs.For("pods").Encode(fmt.Appendf(nil, `{"other":"bodies %d"}`, i))
			}
			return codecs
		}},
		{"no compression", index.Options{}, func() *compact.Codecs { return nil }},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "snapshot")
			store := openStore(t, dir)
			defer func() { _ = store.Close() }()
			f := &fleet{r: rand.New(rand.NewPCG(1, 2)), ix: index.New(index.Options{}), live: map[index.Stream]map[string]*object.Object{}}
			f.types = informerTypes(f.ix, testCodecs())
			for range 300 {
				f.step(t)
			}
			if err := warmstart.NewWriter(f.ix, store, nil, warmstart.Options{}).Write(); err != nil {
				t.Fatal(err)
			}
			want := stateOf(f.ix)

			ix := index.New(c.opts)
			codecs := c.codecs()
			l, err := warmstart.Load(store, ix, codecs)
			if err != nil {
				t.Fatal(err)
			}
			pods := len(ix.Objects("c0", "pods")) + len(ix.Objects("c1", "pods")) + len(ix.Objects("c2", "pods"))
			if l.Rebuilt < pods || pods == 0 {
				t.Fatalf("%d of %d objects built again, want at least the %d Pods", l.Rebuilt, l.Objects, pods)
			}
			if diff := cmp.Diff(want, stateOf(ix)); diff != "" {
				t.Fatalf("the loaded index differs (-written +loaded):\n%s", diff)
			}
			if err := ix.Verify(); err != nil {
				t.Fatal(err)
			}

			// The writer rewrites the store as this process holds it.
			if err := warmstart.NewWriter(ix, store, l, warmstart.Options{}).Write(); err != nil {
				t.Fatal(err)
			}
			again := index.New(c.opts)
			l, err = warmstart.Load(store, again, newCodecs(codecs))
			if err != nil {
				t.Fatal(err)
			}
			if l.Rebuilt != 0 {
				t.Errorf("after the rewrite, %d of %d objects were built again", l.Rebuilt, l.Objects)
			}
			if diff := cmp.Diff(want, stateOf(again)); diff != "" {
				t.Fatalf("after the rewrite, the loaded index differs (-written +loaded):\n%s", diff)
			}
		})
	}
}
