package warmstart

import (
	"cmp"
	"errors"
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
)

// Loaded is what Load put into the index.
type Loaded struct {
	// Epoch and Revision are the index's once filled: a Writer goes on
	// from them.
	Epoch    string
	Revision uint64
	// Streams are the streams restored, removed ones included.
	Streams map[index.Stream]Stream
	// Objects counts the objects restored, Tombs the tombs. Rebuilt
	// counts those of them built from their JSON again, as the informers
	// build them, instead of restored as they were held: the snapshot's
	// dictionaries or projected paths were not this process's.
	Objects, Tombs, Rebuilt int
	// Took is how long the load took.
	Took time.Duration

	// codecs are the resources whose dictionaries the store holds, and
	// stale is set when records were built again from their JSON (a
	// dictionary the codecs did not adopt, another derivation): a Writer
	// then rewrites the store instead of going on from it.
	codecs map[string]bool
	stale  bool
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
// stream's objects get a type made from the stream's meta, compressed by
// codecs (nil: none) and with the paths ix indexes projected, as the
// informers make theirs. The codecs adopt the store's dictionaries, so
// that the stored bodies are kept as they are: a load neither parses nor
// compresses JSON, and the objects' records are decoded by a worker per
// CPU while the index takes them in batches (index.Restoring). Where that
// cannot be (a codec with another dictionary, records that kept other
// paths' values), the objects are built from their JSON again, as the
// informers build them. A store with no snapshot loads nothing and returns
// a Loaded with no stream.
//
// An error leaves ix holding part of the snapshot: start cold with a new
// index. A *snapshot.DiscardedError means the store found itself corrupt
// and is now empty.
func Load(store *snapshot.Store, ix *index.Index, codecs *compact.Codecs) (*Loaded, error) {
	start := time.Now()
	l := &Loaded{Streams: map[index.Stream]Stream{}, codecs: map[string]bool{}}
	r, err := ix.Restore()
	if err != nil {
		return nil, fmt.Errorf("load the snapshot: %w", err)
	}
	// Each stored dictionary, in a codec of its own: it decodes the bodies
	// of objects built again.
	dicts := map[string]*compact.Codec{}
	// adopted: the resources whose codec took the stored dictionary.
	adopted := map[string]bool{}
	b := newBuilder(r, runtime.GOMAXPROCS(0))
	_, _, err = store.Load(func(resource string, dict []byte) error {
		own := compact.NewCodec(resource, 0)
		if !own.Adopt(dict) {
			return fmt.Errorf("the dictionary of %s does not decode", resource)
		}
		dicts[resource] = own
		l.codecs[resource] = true
		adopted[resource] = codecs != nil && codecs.For(resource).Adopt(dict)
		l.stale = l.stale || !adopted[resource]
		return nil
	}, func(m snapshot.StreamMeta, objs iter.Seq[snapshot.Object], tombs iter.Seq[snapshot.Tomb]) error {
		k := index.Stream{Cluster: m.Cluster, Resource: m.Resource}
		s := Stream{ResourceVersion: strconv.FormatUint(m.Clock, 10), AsOf: m.AsOf, Removed: m.Removed, Member: m.Member, meta: m}
		if m.Clock == 0 {
			s.ResourceVersion = ""
		}
		rec := recipe{k: k, dict: dicts[m.Resource], adopted: adopted[m.Resource]}
		if m.Kind != "" {
			s.Type = newType(m, codecs, ix.IndexedPaths(m.Resource))
			rec.t, rec.derived = s.Type, m.Derivation == derivation(s.Type)
			l.stale = l.stale || !rec.derived
		}
		st := index.StreamState{Stream: k, Clock: m.Clock, Since: m.Since, Pruned: m.Pruned, Removed: m.Removed}
		var bodies object.BodyReader
		for t := range tombs {
			saved, _, err := rec.build(t.Namespace, t.Name, t.Value, &bodies, false)
			if err != nil {
				return fmt.Errorf("stream %s: a tomb: %w", k, err)
			}
			st.Tombs = append(st.Tombs, index.Tomb{Object: saved.Object, RV: t.RV, At: t.At})
		}
		s.tombs, s.pending = uint64(len(st.Tombs)), uint64(len(st.Tombs))
		for i, t := range st.Tombs {
			if t.RV == 0 {
				s.pending = uint64(i)
				break
			}
		}
		if err := r.Stream(st); err != nil {
			return err
		}
		for obj := range objs {
			if err := b.add(rec, obj); err != nil {
				return err
			}
		}
		l.Streams[k] = s
		l.Tombs += len(st.Tombs)
		return nil
	})
	n, rebuilt, buildErr := b.finish()
	if err = cmp.Or(err, buildErr); err != nil {
		return nil, fmt.Errorf("load the snapshot: %w", err)
	}
	r.Finish()
	l.Epoch, l.Revision, l.Objects, l.Rebuilt = ix.Epoch(), ix.Revision(), n, rebuilt
	l.Took = time.Since(start)
	return l, nil
}

// recipe is how the objects of one stream are built from their records.
type recipe struct {
	k index.Stream
	t *object.Type
	// dict is the store's dictionary of the stream's resource, nil if it
	// holds none; adopted: t's codec took it, so compressed bodies are
	// kept as they are.
	dict    *compact.Codec
	adopted bool
	// derived: the records keep the values of t's projected paths.
	derived bool
}

// build returns the object whose record is value, with its text tokens
// when text is set; r reads the bodies of objects built again.
func (rec recipe) build(namespace, name string, value []byte, r *object.BodyReader, text bool) (saved index.Prepared, rebuilt bool, err error) {
	if rec.t == nil {
		return index.Prepared{}, false, errors.New("no kind in the stream's meta")
	}
	s, tokens, err := decodeRecord(namespace, name, value)
	if err != nil {
		return index.Prepared{}, false, err
	}
	if rec.derived && (!s.Body.Compressed() || rec.adopted) || s.Body.Dropped() {
		// As it was held. A dropped body: its metadata is all there was.
		return index.Prepared{Object: object.Restore(rec.k.Cluster, rec.t, s), Text: tokens}, false, nil
	}
	// Built again from its JSON, as an informer builds it.
	raw, plain := compact.View(s.Body)
	if !plain {
		if rec.dict == nil {
			return index.Prepared{}, false, errors.New("a compressed body but no dictionary in the store")
		}
		if raw, err = rec.dict.Decode(nil, s.Body); err != nil {
			return index.Prepared{}, false, err
		}
	}
	o := object.Build(rec.k.Cluster, rec.t, s.Meta, raw)
	saved = index.Prepared{Object: o}
	if text {
		// Copies: they point into r's buffers, which the next body reuses.
		for _, tok := range index.TextTokens(o, r) {
			saved.Text = append(saved.Text, strings.Clone(tok))
		}
	}
	return saved, true, nil
}

// builder builds objects from their records in batches on its workers,
// and restores each batch.
type builder struct {
	r    *index.Restoring
	jobs chan *buildJob
	// free holds batches built already, whose buffers the next ones
	// reuse: nothing built points into them.
	free       chan *buildJob
	wg         sync.WaitGroup
	pending    *buildJob
	mu         sync.Mutex
	n, rebuilt int
	err        error
}

// buildJob is a batch of one stream's records: their keys, and their
// values copied out of the store's buffers into one.
type buildJob struct {
	rec   recipe
	keys  []snapshot.ObjectKey
	ends  []int
	value []byte
}

const buildBatch = 256

func newBuilder(r *index.Restoring, workers int) *builder {
	b := &builder{r: r, jobs: make(chan *buildJob, 2*workers), free: make(chan *buildJob, 3*workers+1)}
	for range workers {
		b.wg.Go(func() {
			var bodies object.BodyReader
			saved := make([]index.Prepared, 0, buildBatch)
			for j := range b.jobs {
				saved = saved[:0]
				rebuilt := 0
				err := b.failed()
				for i, start := 0, 0; err == nil && i < len(j.keys); i++ {
					s, again, buildErr := j.rec.build(j.keys[i].Namespace, j.keys[i].Name, j.value[start:j.ends[i]], &bodies, true)
					if buildErr != nil {
						err = fmt.Errorf("stream %s: object %s/%s: %w", j.rec.k, j.keys[i].Namespace, j.keys[i].Name, buildErr)
					}
					if again {
						rebuilt++
					}
					saved = append(saved, s)
					start = j.ends[i]
				}
				if err == nil {
					err = b.r.Objects(saved)
				}
				select {
				case b.free <- j:
				default:
				}
				b.mu.Lock()
				b.err = cmp.Or(b.err, err)
				if err == nil {
					b.n += len(saved)
					b.rebuilt += rebuilt
				}
				b.mu.Unlock()
			}
		})
	}
	return b
}

func (b *builder) failed() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// add queues the object o of the stream rec builds; its value is copied.
func (b *builder) add(rec recipe, o snapshot.Object) error {
	if rec.t == nil {
		return fmt.Errorf("stream %s has an object but no kind in its meta", rec.k)
	}
	if b.pending != nil && b.pending.rec.k != rec.k {
		b.flush()
	}
	if b.pending == nil {
		select {
		case j := <-b.free:
			clear(j.keys)
			j.rec, j.keys, j.ends, j.value = rec, j.keys[:0], j.ends[:0], j.value[:0]
			b.pending = j
		default:
			b.pending = &buildJob{rec: rec, keys: make([]snapshot.ObjectKey, 0, buildBatch), ends: make([]int, 0, buildBatch)}
		}
	}
	j := b.pending
	j.keys = append(j.keys, o.ObjectKey)
	j.value = append(j.value, o.Value...)
	j.ends = append(j.ends, len(j.value))
	if len(j.keys) == buildBatch {
		b.flush()
	}
	return b.failed()
}

func (b *builder) flush() {
	if b.pending != nil {
		b.jobs <- b.pending
		b.pending = nil
	}
}

// finish waits for every batch and returns how many objects were
// restored and how many of them built again, or the first error.
func (b *builder) finish() (n, rebuilt int, err error) {
	b.flush()
	close(b.jobs)
	b.wg.Wait()
	return b.n, b.rebuilt, b.err
}

// newType returns the type of the objects of the stream of m.
func newType(m snapshot.StreamMeta, codecs *compact.Codecs, projected []fieldpath.Path) *object.Type {
	plural, _, _ := strings.Cut(m.Resource, ".")
	t := &object.Type{Resource: m.Resource, GVR: schema.GroupVersionResource{Group: m.Group, Version: m.Version, Resource: plural},
		Kind: m.Kind, Namespaced: m.Namespaced, Projected: fieldpath.NewSet(projected)}
	if codecs != nil {
		t.Codec = codecs.For(m.Resource)
	}
	return t
}
