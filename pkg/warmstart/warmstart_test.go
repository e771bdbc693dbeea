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
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/snapshot"
	"github.com/fleetcache/fleetcache/pkg/warmstart"
)

var podType, cmType, depType = indextest.PodType, indextest.ConfigMapType, indextest.DeploymentType

// fleet drives an index as the informers do: watch events each followed
// by the stream's clock, relists, clusters removed and added again.
type fleet struct {
	r    *rand.Rand
	ix   *index.Index
	rv   int
	live map[index.Stream]map[string]*object.Object
}

func newObject(t testing.TB, cluster string, typ *object.Type, name string, rv int, uid string) *object.Object {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": typ.APIVersion(), "kind": typ.Kind,
		"metadata": map[string]any{"name": name, "namespace": "ns", "uid": uid,
			"resourceVersion": strconv.Itoa(rv), "labels": map[string]any{"app": "a" + strconv.Itoa(rv%5)}},
		"spec": map[string]any{"n": int64(rv)},
	}}
	o, err := object.NewObject(cluster, typ, u)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func (f *fleet) step(t testing.TB) {
	clusters := []string{"c0", "c1", "c2"}
	types := []*object.Type{podType, cmType, depType}
	cluster, typ := clusters[f.r.IntN(len(clusters))], types[f.r.IntN(len(types))]
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

// state is what a snapshot must keep of an index, comparable.
type state struct {
	Objects []string
	Streams []string
}

func stateOf(ix *index.Index) state {
	cp := ix.ReadAll()
	var s state
	for _, o := range cp.Objects {
		s.Objects = append(s.Objects, fmt.Sprintf("%s uid=%s rv=%s labels=%v %s", o.Key(), o.UID, o.ResourceVersion, o.Labels, o.Raw()))
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
				if _, err := warmstart.Load(store, loaded, nil); err != nil {
					t.Fatalf("round %d: load: %v", round, err)
				}
				if diff := cmp.Diff(want, stateOf(loaded)); diff != "" {
					t.Fatalf("round %d: the loaded index differs (-written +loaded):\n%s", round, diff)
				}
				if r.IntN(2) == 0 {
					// A restart: the store is closed and opened again,
					// and the loaded index goes on.
					if err := store.Close(); err != nil {
						t.Fatal(err)
					}
					store = openStore(t, dir)
					loaded = index.New(opts)
					l, err := warmstart.Load(store, loaded, nil)
					if err != nil {
						t.Fatalf("round %d: load after reopening: %v", round, err)
					}
					f.ix = loaded
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
