package warmstart

import (
	"fmt"
	"iter"
	"strconv"
	"strings"
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
	var objects []*object.Object
	_, _, err := store.Load(func(m snapshot.StreamMeta, objs iter.Seq[snapshot.Object], tombs iter.Seq[snapshot.Tomb]) error {
		k := index.Stream{Cluster: m.Cluster, Resource: m.Resource}
		s := Stream{ResourceVersion: strconv.FormatUint(m.Clock, 10), AsOf: m.AsOf, Removed: m.Removed, meta: m}
		if m.Clock == 0 {
			s.ResourceVersion = ""
		}
		var dec *wire.Decoder
		if m.Kind != "" {
			s.Type = newType(m, codecs, ix.IndexedPaths(m.Resource))
			dec = wire.NewDecoder(m.Cluster, s.Type, false)
		}
		build := func(what string, raw []byte) (*object.Object, error) {
			if dec == nil {
				return nil, fmt.Errorf("stream %s has %s but no kind in its meta", k, what)
			}
			o, err := dec.Object(raw)
			if err != nil {
				return nil, fmt.Errorf("stream %s: %s: %w", k, what, err)
			}
			return o, nil
		}
		st := index.StreamState{Stream: k, Clock: m.Clock, Since: m.Since, Pruned: m.Pruned, Removed: m.Removed}
		for t := range tombs {
			o, err := build("a tomb", t.Raw)
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
			o, err := build("an object", obj.Raw)
			if err != nil {
				return err
			}
			objects = append(objects, o)
		}
		states = append(states, st)
		l.Streams[k] = s
		l.Tombs += len(st.Tombs)
		return nil
	})
	if err != nil {
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
