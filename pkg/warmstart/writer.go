package warmstart

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"k8s.io/klog/v2"

	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/feed"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/snapshot"
)

// Options configure a Writer. Each field's comment states its default,
// used when the field is zero.
type Options struct {
	// Interval is how often the Writer applies what changed to the
	// store: at most this much is lost to a crash. Default 5s.
	Interval time.Duration
	// RewriteBatch is how many objects a batch of a full rewrite holds.
	// Default 10,000.
	RewriteBatch int
	// Freshness tells, once per write, for each stream whether its data
	// is current and, if not, when it last was: what a replica that loads
	// the stream may claim (health.Tracker knows). A stream it leaves out
	// was never current. Default: none ever was.
	Freshness func() map[index.Stream]Freshness
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Metrics observe the writes; nil observes nothing.
	Metrics *Metrics
}

// DefaultOptions returns the Options with every default filled in, but
// Freshness and Metrics: what a zero Options means.
func DefaultOptions() Options { return Options{}.withDefaults() }

func (o Options) withDefaults() Options {
	if o.Interval <= 0 {
		o.Interval = 5 * time.Second
	}
	if o.RewriteBatch <= 0 {
		o.RewriteBatch = 10000
	}
	if o.Freshness == nil {
		o.Freshness = func() map[index.Stream]Freshness { return nil }
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Freshness is whether a stream's data is current, and if not, when it
// last was (zero: never); and which member it was read from
// (health.ClusterStatus.MemberID), empty when unknown.
type Freshness struct {
	Current bool
	AsOf    time.Time
	Member  string
}

// asOfRefresh is how stale the AsOf of a current stream's meta may get
// before the meta is written again: claiming an older moment is true, and
// rewriting every meta every batch would cost more than the changes.
const asOfRefresh = time.Minute

// Writer keeps a snapshot store equal to the index as it was at the
// revision of its last batch.
type Writer struct {
	ix    *index.Index
	store *snapshot.Store
	opts  Options

	// What the store holds, as the Writer last wrote it; only Start's
	// goroutine touches it. whole is false until the store holds the
	// index of this process (loaded into it, or rewritten).
	whole   bool
	rev     uint64
	streams map[index.Stream]*written
	// types are the streams' types, as their objects and tombs show them.
	types map[index.Stream]*object.Type
	// codecs are the resources whose dictionary the store holds.
	codecs map[string]bool
	// bodies reads the bodies whose text tokens the records keep.
	bodies object.BodyReader
}

// written is what the store holds of one stream besides its objects.
type written struct {
	meta snapshot.StreamMeta
	// gen is the index's TombGen of the stored tombs, numbered [from,
	// to) as the index numbers them; those from pending on were stored
	// with RV 0 and are written again once the index gives them theirs.
	gen, from, to, pending uint64
}

// NewWriter returns a Writer of ix to store. loaded is what Load put into
// ix from store (nil when it loaded nothing): the Writer goes on from it
// instead of rewriting the store.
func NewWriter(ix *index.Index, store *snapshot.Store, loaded *Loaded, opts Options) *Writer {
	w := &Writer{ix: ix, store: store, opts: opts.withDefaults(),
		streams: map[index.Stream]*written{}, types: map[index.Stream]*object.Type{}, codecs: map[string]bool{}}
	if loaded != nil && loaded.Epoch == ix.Epoch() && !loaded.stale {
		maps.Copy(w.codecs, loaded.codecs)
		w.whole, w.rev = true, loaded.Revision
		for k, s := range loaded.Streams {
			w.streams[k] = &written{meta: s.meta, from: 0, to: s.tombs, pending: s.pending}
			if s.Type != nil {
				w.types[k] = s.Type
			}
		}
	}
	return w
}

// Start writes until ctx ends, then writes once more and returns nil. A
// failed write is logged and counted, and retried at the next interval
// with what changed meanwhile (a rewrite if the feed moved on).
func (w *Writer) Start(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithName("snapshot")
	t := time.NewTicker(w.opts.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			if err := w.Write(); err != nil {
				logger.Error(err, "Writing the last snapshot before stopping failed")
			}
			return nil
		case <-t.C:
			if err := w.Write(); err != nil {
				logger.Error(err, "Writing the snapshot failed; retrying at the next interval")
			}
		}
	}
}

// Write applies to the store what changed in the index since the last
// Write, or rewrites the store whole when it does not hold what the last
// Write wrote. Start calls it; tests and benchmarks may call it instead.
func (w *Writer) Write() error {
	start := w.opts.Now()
	var err error
	var n int
	switch {
	case w.whole:
		n, err = w.writeChanges()
		if errors.Is(err, feed.ErrExpired) {
			n, err = w.rewrite()
		}
	default:
		n, err = w.rewrite()
	}
	w.opts.Metrics.observe(start, w.opts.Now(), n, err)
	return err
}

// writeChanges applies the changes since w.rev as one batch.
func (w *Writer) writeChanges() (int, error) {
	cp, err := w.ix.ReadChanges(w.rev, w.tombsFrom, w.isNew)
	if err != nil {
		return 0, err
	}
	for _, e := range cp.Events {
		w.types[index.Stream{Cluster: e.Object.Cluster, Resource: e.Object.Type.Resource}] = e.Object.Type
	}
	for _, o := range cp.Objects {
		w.types[index.Stream{Cluster: o.Cluster, Resource: o.Type.Resource}] = o.Type
	}
	var b snapshot.Batch
	next := w.streamsBatch(&b, cp)
	// The last event of each object is its state at cp.Revision. The
	// objects of streams new to the store are in cp.Objects; those of
	// streams with no clock yet (listing) or gone are not stored.
	last := map[object.Key]int{}
	for i, e := range cp.Events {
		last[e.Object.Key()] = i
	}
	for i, e := range cp.Events {
		o := e.Object
		k := index.Stream{Cluster: o.Cluster, Resource: o.Type.Resource}
		if last[o.Key()] != i || w.streams[k] == nil || next[k] == nil {
			continue
		}
		if e.Type == feed.Deleted {
			b.Delete = append(b.Delete, objectKey(o))
		} else {
			b.Put = append(b.Put, w.storeObject(&b, o))
		}
	}
	for _, o := range cp.Objects {
		b.Put = append(b.Put, w.storeObject(&b, o))
	}
	if len(b.Streams)+len(b.RemoveStreams)+len(b.Put)+len(b.Delete)+len(b.Tombs)+len(b.DropTombs)+len(b.PopTombs) == 0 {
		w.rev = cp.Revision
		return 0, nil
	}
	b.Revision, b.Epoch = storeRevision(cp.Revision), cp.Epoch
	if err := w.apply(b); err != nil {
		return 0, err
	}
	w.rev, w.streams = cp.Revision, next
	return len(b.Put) + len(b.Delete), nil
}

// tombsFrom asks the index for the tombs the store lacks or holds with
// RV 0; all of them when their RVs were rewritten.
func (w *Writer) tombsFrom(k index.Stream, gen uint64) uint64 {
	if s := w.streams[k]; s != nil && s.gen == gen {
		return s.pending
	}
	return 0
}

// isNew reports a stream the store does not hold: the index gives its
// objects whole.
func (w *Writer) isNew(k index.Stream) bool { return w.streams[k] == nil }

// streamsBatch adds to b what changed of the streams (metas, tombs,
// removals) and returns what the store holds once b is applied.
func (w *Writer) streamsBatch(b *snapshot.Batch, cp index.Checkpoint) map[index.Stream]*written {
	next := make(map[index.Stream]*written, len(cp.Streams))
	fresh, now := w.opts.Freshness(), w.opts.Now()
	for _, st := range cp.Streams {
		old := w.streams[st.Stream]
		s := &written{}
		if old != nil {
			*s = *old
		}
		for _, t := range st.Tombs {
			w.types[st.Stream] = t.Object.Type
		}
		meta := w.meta(st, old, fresh[st.Stream], now)
		if old == nil || meta != old.meta {
			b.Streams = append(b.Streams, meta)
			s.meta = meta
		}
		w.tombs(b, st, old, s)
		next[st.Stream] = s
	}
	for k := range w.streams {
		if next[k] == nil {
			b.RemoveStreams = append(b.RemoveStreams, storeStream(k))
			delete(w.types, k)
		}
	}
	return next
}

// meta returns the meta of st, keeping old's AsOf while the stream stays
// current and that moment is recent.
func (w *Writer) meta(st index.StreamState, old *written, f Freshness, now time.Time) snapshot.StreamMeta {
	m := snapshot.StreamMeta{StreamKey: storeStream(st.Stream), Clock: st.Clock, Since: st.Since, Pruned: st.Pruned, Removed: st.Removed, Member: f.Member}
	if t := w.types[st.Stream]; t != nil {
		m.Group, m.Version, m.Kind, m.Namespaced = t.GVR.Group, t.GVR.Version, t.Kind, t.Namespaced
		m.Derivation = derivation(t)
	}
	switch {
	case !f.Current:
		m.AsOf = f.AsOf
	case old != nil && !old.meta.AsOf.IsZero() && now.Sub(old.meta.AsOf) < asOfRefresh:
		m.AsOf = old.meta.AsOf
	default:
		m.AsOf = now
	}
	return m
}

// tombs adds to b what changed of st's tombs since old, and records in s
// what the store then holds.
func (w *Writer) tombs(b *snapshot.Batch, st index.StreamState, old, s *written) {
	k := storeStream(st.Stream)
	switch {
	case old == nil:
	case old.gen != st.TombGen:
		// Every RV changed: store them all again.
		if n := old.to - old.from; n > 0 {
			b.DropTombs = append(b.DropTombs, snapshot.TombDrop{StreamKey: k, Count: int(n)})
		}
	default:
		// Those stored with RV 0 go, to come back with their RV; then
		// the oldest the index dropped.
		if n := old.to - old.pending; n > 0 {
			b.PopTombs = append(b.PopTombs, snapshot.TombDrop{StreamKey: k, Count: int(n)})
		}
		if n := min(st.TombBase, old.pending) - min(old.from, st.TombBase); n > 0 {
			b.DropTombs = append(b.DropTombs, snapshot.TombDrop{StreamKey: k, Count: int(n)})
		}
	}
	s.gen, s.from, s.to = st.TombGen, st.TombBase, st.TombsFrom+uint64(len(st.Tombs))
	s.pending = s.to
	for i, t := range st.Tombs {
		if t.RV == 0 && s.pending == s.to {
			s.pending = st.TombsFrom + uint64(i)
		}
		b.Tombs = append(b.Tombs, snapshot.Tomb{Object: w.storeTomb(b, t.Object), RV: t.RV, At: t.At})
	}
}

// rewrite writes the whole index to the store: its metas first, its
// objects in batches, its tombs and revision last, which makes the rewrite
// the snapshot.
func (w *Writer) rewrite() (int, error) {
	cp := w.ix.ReadAll()
	if err := w.store.Reset(cp.Epoch); err != nil {
		return 0, err
	}
	clear(w.types)
	clear(w.codecs) // a new generation holds none yet
	for _, o := range cp.Objects {
		w.types[index.Stream{Cluster: o.Cluster, Resource: o.Type.Resource}] = o.Type
	}
	var last snapshot.Batch
	w.streams = map[index.Stream]*written{}
	next := w.streamsBatch(&last, cp)
	withMeta := map[index.Stream]bool{}
	for _, st := range cp.Streams {
		withMeta[st.Stream] = !st.Removed
	}
	metas := snapshot.Batch{Streams: last.Streams}
	last.Streams = nil
	if err := w.apply(metas); err != nil {
		return 0, err
	}
	n := 0
	var b snapshot.Batch
	for _, o := range cp.Objects {
		if !withMeta[index.Stream{Cluster: o.Cluster, Resource: o.Type.Resource}] {
			continue // its stream has no clock yet: it is listing
		}
		b.Put = append(b.Put, w.storeObject(&b, o))
		if len(b.Put) == w.opts.RewriteBatch {
			if err := w.apply(b); err != nil {
				return 0, err
			}
			n += len(b.Put)
			b.Put, b.Codecs = b.Put[:0], nil
		}
	}
	last.Put = b.Put
	last.Codecs = append(last.Codecs, b.Codecs...)
	last.Revision, last.Epoch = storeRevision(cp.Revision), cp.Epoch
	if err := w.apply(last); err != nil {
		return 0, err
	}
	w.whole, w.rev, w.streams = true, cp.Revision, next
	return n + len(last.Put), nil
}

// storeRevision is the store's revision for the index's: one more, as the
// store keeps 0 for the batches of a rewrite and an index restored from a
// snapshot starts at 0.
func storeRevision(rev uint64) uint64 { return rev + 1 }

func storeStream(k index.Stream) snapshot.StreamKey {
	return snapshot.StreamKey{Cluster: k.Cluster, Resource: k.Resource}
}

func objectKey(o *object.Object) snapshot.ObjectKey {
	return snapshot.ObjectKey{Cluster: o.Cluster, Resource: o.Type.Resource, Namespace: o.Namespace, Name: o.Name}
}

// storeObject returns o as the store keeps it (record.go), with the text
// tokens of its body, and adds to b the dictionary of its body's codec if
// the store lacks it.
func (w *Writer) storeObject(b *snapshot.Batch, o *object.Object) snapshot.Object {
	w.addCodec(b, o)
	return snapshot.Object{ObjectKey: objectKey(o), Value: appendRecord(nil, o, index.TextTokens(o, &w.bodies))}
}

// storeTomb is storeObject for a deleted object, which is not searched.
func (w *Writer) storeTomb(b *snapshot.Batch, o *object.Object) snapshot.Object {
	w.addCodec(b, o)
	return snapshot.Object{ObjectKey: objectKey(o), Value: appendRecord(nil, o, nil)}
}

func (w *Writer) addCodec(b *snapshot.Batch, o *object.Object) {
	r := o.Type.Resource
	if !o.Compressed() || w.codecs[r] || slices.ContainsFunc(b.Codecs, func(c snapshot.Codec) bool { return c.Resource == r }) {
		return
	}
	b.Codecs = append(b.Codecs, snapshot.Codec{Resource: r, Dict: o.Type.Codec.Dict()})
}

// apply applies b to the store, and records the dictionaries it stored.
func (w *Writer) apply(b snapshot.Batch) error {
	if err := w.store.Apply(b); err != nil {
		return err
	}
	for _, c := range b.Codecs {
		w.codecs[c.Resource] = true
	}
	return nil
}
