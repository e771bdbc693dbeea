package warmstart

import (
	"cmp"
	"context"
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

// A Loader fills an index from a store's snapshot in two steps, so that
// the clusters can start while the objects load: Prepare reads, at once,
// what they start from (each stream's meta: its type, resourceVersion and
// member), and the codecs adopt the stored dictionaries; Load then fills
// the index, which nothing else may read or write until it returns.
type Loader struct {
	store *snapshot.Store
	ix    *index.Index
	r     *index.Restoring
	// prepared holds the streams Prepare read, their types the ones the
	// clusters take; Load fills in the rest of l.
	prepared map[index.Stream]Stream
	l        *Loaded
	// dicts holds each stored dictionary in a codec of its own (it decodes
	// the bodies of objects built again); adopted, the resources whose
	// codec took the stored dictionary.
	dicts    map[string]*compact.Codec
	adopted  map[string]bool
	revision uint64
	epoch    string
	start    time.Time
}

// Prepare begins a load of the store's snapshot into ix, which must be
// empty: it reads the stored dictionaries, which codecs (nil: none) adopt,
// and each stream's meta, and makes each stream's type as the informers
// make theirs (compressed by codecs, with the paths ix indexes projected).
// An error leaves ix as it was; a *snapshot.DiscardedError means the store
// found itself corrupt and is now empty.
func Prepare(store *snapshot.Store, ix *index.Index, codecs *compact.Codecs) (*Loader, error) {
	p := &Loader{store: store, ix: ix, start: time.Now(), prepared: map[index.Stream]Stream{},
		l: &Loaded{Streams: map[index.Stream]Stream{}, codecs: map[string]bool{}}, dicts: map[string]*compact.Codec{}, adopted: map[string]bool{}}
	r, err := ix.Restore()
	if err != nil {
		return nil, fmt.Errorf("load the snapshot: %w", err)
	}
	p.r = r
	p.revision, p.epoch, err = store.Load(func(resource string, dict []byte) error {
		own := compact.NewCodec(resource, 0)
		if !own.Adopt(dict) {
			return fmt.Errorf("the dictionary of %s does not decode", resource)
		}
		p.dicts[resource] = own
		p.l.codecs[resource] = true
		p.adopted[resource] = codecs != nil && codecs.For(resource).Adopt(dict)
		p.l.stale = p.l.stale || !p.adopted[resource]
		return nil
	}, func(m snapshot.StreamMeta, _ iter.Seq[snapshot.Object], _ iter.Seq[snapshot.Tomb]) error {
		// The objects and tombs are not read: the store skips them.
		k := index.Stream{Cluster: m.Cluster, Resource: m.Resource}
		s := Stream{ResourceVersion: strconv.FormatUint(m.Clock, 10), AsOf: m.AsOf, Removed: m.Removed, Member: m.Member, meta: m}
		if m.Clock == 0 {
			s.ResourceVersion = ""
		}
		if m.Kind != "" {
			s.Type = newType(m, codecs, ix.IndexedPaths(m.Resource))
		}
		p.prepared[k] = s
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load the snapshot: %w", err)
	}
	return p, nil
}

// Streams returns the streams Prepare read, removed ones included: what
// the clusters resume from.
func (p *Loader) Streams() map[index.Stream]Stream { return p.prepared }

// Load fills the index with the snapshot's objects and tombs. The
// objects' records are decoded by a worker per CPU while the index takes
// them in batches (index.Restoring): a load neither parses nor compresses
// JSON, the stored bodies kept as they are. Where that cannot be (a codec
// with another dictionary, records that kept other paths' values), the
// objects are built from their JSON again, as the informers build them.
// A store with no snapshot loads nothing and returns a Loaded with no
// stream.
//
// An error (ctx's among them) leaves the index holding part of the
// snapshot: Abort empties it. A *snapshot.DiscardedError means the store
// found itself corrupt and is now empty.
func (p *Loader) Load(ctx context.Context) (*Loaded, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("load the snapshot: %w", err)
	}
	l, ix := p.l, p.ix
	b := newBuilder(p.r, runtime.GOMAXPROCS(0))
	revision, epoch, err := p.store.Load(nil, func(m snapshot.StreamMeta, objs iter.Seq[snapshot.Object], tombs iter.Seq[snapshot.Tomb]) error {
		k := index.Stream{Cluster: m.Cluster, Resource: m.Resource}
		s, ok := p.prepared[k]
		if !ok || s.meta != m {
			return fmt.Errorf("stream %s is not the one prepared: the store changed", k)
		}
		rec := recipe{k: k, dict: p.dicts[m.Resource], adopted: p.adopted[m.Resource], t: s.Type}
		if s.Type != nil {
			rec.derived = m.Derivation == derivation(s.Type)
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
		if err := p.r.Stream(st); err != nil {
			return err
		}
		n := 0
		for obj := range objs {
			if n++; n%buildBatch == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			if err := b.add(rec, obj); err != nil {
				return err
			}
		}
		l.Streams[k] = s
		l.Tombs += len(st.Tombs)
		return nil
	})
	n, rebuilt, buildErr := b.finish()
	switch {
	case err != nil || buildErr != nil:
	case revision != p.revision || epoch != p.epoch || len(l.Streams) != len(p.prepared):
		err = errors.New("the snapshot is not the one prepared: the store changed")
	}
	if err = cmp.Or(err, buildErr); err != nil {
		return nil, fmt.Errorf("load the snapshot: %w", err)
	}
	p.r.Finish()
	l.Epoch, l.Revision, l.Objects, l.Rebuilt = ix.Epoch(), ix.Revision(), n, rebuilt
	l.Took = time.Since(p.start)
	return l, nil
}

// Abort empties the index after a Load that failed (index.Restoring.Abort).
func (p *Loader) Abort() { p.r.Abort() }

// Load fills ix, which must be empty, from the store's snapshot: Prepare,
// then Loader.Load. An error leaves ix holding part of the snapshot: start
// cold with a new index.
func Load(store *snapshot.Store, ix *index.Index, codecs *compact.Codecs) (*Loaded, error) {
	p, err := Prepare(store, ix, codecs)
	if err != nil {
		return nil, err
	}
	return p.Load(context.Background())
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
