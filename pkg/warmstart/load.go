package warmstart

import (
	"bytes"
	"cmp"
	"fmt"
	"iter"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/compact"
	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/snapshot"
	"github.com/fleetcache/fleetcache/pkg/wire"
)

// Loaded is what Load put into the index.
type Loaded struct {
	// Epoch and Revision are the index's once filled: a Writer goes on
	// from them.
	Epoch    string
	Revision uint64
	// Streams are the streams restored, removed ones included.
	Streams map[index.Stream]Stream
	// Objects counts the objects restored, Tombs the tombs.
	Objects, Tombs int
	// Took is how long the load took.
	Took time.Duration
}

// Stream is what a stream was restored at.
type Stream struct {
	// Type is the type of its objects, as the member served it when the
	// snapshot was written; nil when the stream held no object or tomb.
	Type *object.Type
	// ResourceVersion is the member resourceVersion the stream's changes
	// are applied up to: its watch resumes from it.
	ResourceVersion string
	// AsOf is when its data was last known current, zero if never.
	AsOf time.Time
	// Removed: its cluster or type had left the index; only its tombs
	// were kept.
	Removed bool
	// Member identifies the member cluster it was read from, empty when
	// unknown: ResourceVersion means something only there.
	Member string

	// What the store holds of it, for a Writer: its meta, its tombs
	// counted from 0, and the first of them with RV 0.
	meta           snapshot.StreamMeta
	tombs, pending uint64
}

// Load fills ix, which must be empty, from the store's snapshot. Each
// stream's objects are built from their stored JSON with a type made from
// the stream's meta, compressed by codecs (nil: none) and with the paths ix
// indexes projected, as the informers build theirs. A store with no
// snapshot loads nothing and returns a Loaded with no stream.
//
// An error leaves ix holding part of the snapshot: start cold with a new
// index. A *snapshot.DiscardedError means the store found itself corrupt
// and is now empty.
func Load(store *snapshot.Store, ix *index.Index, codecs *compact.Codecs) (*Loaded, error) {
	start := time.Now()
	l := &Loaded{Streams: map[index.Stream]Stream{}}
	var states []index.StreamState
	// The objects are decoded and compressed by a worker per CPU while the
	// store is read: that is most of a load's work.
	b := newBuilder(runtime.GOMAXPROCS(0))
	_, _, err := store.Load(func(m snapshot.StreamMeta, objs iter.Seq[snapshot.Object], tombs iter.Seq[snapshot.Tomb]) error {
		k := index.Stream{Cluster: m.Cluster, Resource: m.Resource}
		s := Stream{ResourceVersion: strconv.FormatUint(m.Clock, 10), AsOf: m.AsOf, Removed: m.Removed, Member: m.Member, meta: m}
		if m.Clock == 0 {
			s.ResourceVersion = ""
		}
		if m.Kind != "" {
			s.Type = newType(m, codecs, ix.IndexedPaths(m.Resource))
		}
		st := index.StreamState{Stream: k, Clock: m.Clock, Since: m.Since, Pruned: m.Pruned, Removed: m.Removed}
		for t := range tombs {
			o, err := decode(k, s.Type, wire.NewDecoder(m.Cluster, s.Type, false), "a tomb", t.Raw)
			if err != nil {
				return err
			}
			st.Tombs = append(st.Tombs, index.Tomb{Object: o, RV: t.RV, At: t.At})
		}
		s.tombs, s.pending = uint64(len(st.Tombs)), uint64(len(st.Tombs))
		for i, t := range st.Tombs {
			if t.RV == 0 {
				s.pending = uint64(i)
				break
			}
		}
		for obj := range objs {
			if err := b.add(k, s.Type, obj.Raw); err != nil {
				return err
			}
		}
		states = append(states, st)
		l.Streams[k] = s
		l.Tombs += len(st.Tombs)
		return nil
	})
	objects, buildErr := b.finish()
	if err = cmp.Or(err, buildErr); err != nil {
		return nil, fmt.Errorf("load the snapshot: %w", err)
	}
	if err := ix.Restore(states, func(yield func(*object.Object) bool) {
		for _, o := range objects {
			if !yield(o) {
				return
			}
		}
	}); err != nil {
		return nil, fmt.Errorf("load the snapshot: %w", err)
	}
	l.Epoch, l.Revision, l.Objects = ix.Epoch(), ix.Revision(), len(objects)
	l.Took = time.Since(start)
	return l, nil
}

// decode builds the object of stream k's type t from its stored JSON.
func decode(k index.Stream, t *object.Type, dec *wire.Decoder, what string, raw []byte) (*object.Object, error) {
	if t == nil {
		return nil, fmt.Errorf("stream %s has %s but no kind in its meta", k, what)
	}
	o, err := dec.Object(raw)
	if err != nil {
		return nil, fmt.Errorf("stream %s: %s: %w", k, what, err)
	}
	return o, nil
}

// builder decodes objects in batches on its workers.
type builder struct {
	jobs    chan *buildJob
	wg      sync.WaitGroup
	pending *buildJob
	mu      sync.Mutex
	done    []*buildJob
}

// buildJob is a batch of one stream's objects: their JSON, copied out of
// the store's buffers, and once built the objects or the first error.
type buildJob struct {
	k       index.Stream
	t       *object.Type
	raws    [][]byte
	objects []*object.Object
	err     error
}

const buildBatch = 256

func newBuilder(workers int) *builder {
	b := &builder{jobs: make(chan *buildJob, 2*workers)}
	for range workers {
		b.wg.Go(func() {
			for j := range b.jobs {
				dec := wire.NewDecoder(j.k.Cluster, j.t, false)
				for _, raw := range j.raws {
					o, err := decode(j.k, j.t, dec, "an object", raw)
					if err != nil {
						j.err = err
						break
					}
					j.objects = append(j.objects, o)
				}
				j.raws = nil
				b.mu.Lock()
				b.done = append(b.done, j)
				b.mu.Unlock()
			}
		})
	}
	return b
}

// add queues an object of stream k; raw is copied.
func (b *builder) add(k index.Stream, t *object.Type, raw []byte) error {
	if t == nil {
		return fmt.Errorf("stream %s has an object but no kind in its meta", k)
	}
	if b.pending != nil && b.pending.k != k {
		b.flush()
	}
	if b.pending == nil {
		b.pending = &buildJob{k: k, t: t, raws: make([][]byte, 0, buildBatch)}
	}
	b.pending.raws = append(b.pending.raws, bytes.Clone(raw))
	if len(b.pending.raws) == buildBatch {
		b.flush()
	}
	return nil
}

func (b *builder) flush() {
	if b.pending != nil {
		b.jobs <- b.pending
		b.pending = nil
	}
}

// finish waits for every batch and returns the objects built, or the
// first error.
func (b *builder) finish() ([]*object.Object, error) {
	b.flush()
	close(b.jobs)
	b.wg.Wait()
	n := 0
	for _, j := range b.done {
		if j.err != nil {
			return nil, j.err
		}
		n += len(j.objects)
	}
	out := make([]*object.Object, 0, n)
	for _, j := range b.done {
		out = append(out, j.objects...)
	}
	return out, nil
}

// newType returns the type of the objects of the stream of m.
func newType(m snapshot.StreamMeta, codecs *compact.Codecs, projected []fieldpath.Path) *object.Type {
	plural, _, _ := strings.Cut(m.Resource, ".")
	t := &object.Type{Resource: m.Resource, GVR: schema.GroupVersionResource{Group: m.Group, Version: m.Version, Resource: plural},
		Kind: m.Kind, Namespaced: m.Namespaced, Projected: projected}
	if codecs != nil {
		t.Codec = codecs.For(m.Resource)
	}
	return t
}
