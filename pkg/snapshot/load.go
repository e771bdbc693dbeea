package snapshot

import (
	"bytes"
	"errors"
	"iter"

	"github.com/cockroachdb/pebble/v2"
)

// Load reads the snapshot, as of one point in time: it calls codec with
// each resource's dictionary (Batch.Codecs), then fn for each stream in
// (cluster, resource) order with its meta, its objects (by namespace and
// name) and its tombs (oldest first). The sequences are valid only while
// fn runs, each may be ranged over once and need not be; a dictionary,
// and an Object's and a Tomb's Value, are valid only until the call or
// the sequence moves on: copy them to keep them. Load returns the
// snapshot's revision and epoch; a store with no snapshot yet gives
// revision 0 and calls nothing. codec may be nil.
//
// A checksum mismatch, a record that does not decode or a missing piece
// (objects of a stream with no meta) discards the store, as Open would
// have, and gives a *DiscardedError wrapping ErrCorrupt: codec and fn may
// have seen part of the snapshot, which the caller must then drop. An
// error of codec or fn stops Load and is returned as it is.
func (s *Store) Load(codec func(resource string, dict []byte) error, fn func(StreamMeta, iter.Seq[Object], iter.Seq[Tomb]) error) (revision uint64, epoch string, err error) {
	s.dbMu.RLock()
	if s.db == nil {
		s.dbMu.RUnlock()
		return 0, "", ErrClosed
	}
	revision, epoch, err = readSnapshot(s.db, codec, fn)
	s.dbMu.RUnlock()
	var d *DiscardedError
	if errors.As(err, &d) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.dbMu.Lock()
		defer s.dbMu.Unlock()
		if err := s.discardLocked(d); err != nil {
			return 0, "", err
		}
		return 0, "", d
	}
	return revision, epoch, err
}

func readSnapshot(db *pebble.DB, codec func(string, []byte) error, fn func(StreamMeta, iter.Seq[Object], iter.Seq[Tomb]) error) (uint64, string, error) {
	// One iterator for the state and the data: a point-in-time view, so
	// that a batch applied meanwhile is in both or neither.
	it, err := db.NewIter(nil)
	if err != nil {
		return 0, "", corrupt("%w", err)
	}
	l := loader{it: it}
	defer it.Close()
	if !it.SeekGE(stateKey) || !bytes.Equal(it.Key(), stateKey) {
		if err := l.iterErr(); err != nil {
			return 0, "", err
		}
		return 0, "", corrupt("no state")
	}
	v, err := it.ValueAndErr()
	if err != nil {
		return 0, "", corrupt("read the state: %w", err)
	}
	st, ok := decodeState(v)
	if !ok {
		return 0, "", corrupt("the state does not decode")
	}
	if st.revision == 0 {
		return 0, "", nil
	}
	l.g = st.cur
	it.SetBounds(genPrefix(st.cur), genPrefix(st.cur+1))
	codecs := codecsPrefix(st.cur)
	for ok := it.SeekGE(codecs); ok && bytes.HasPrefix(it.Key(), codecs); ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			return 0, "", corrupt("read the codec of %s: %w", it.Key()[len(codecs):], err)
		}
		if codec == nil {
			continue
		}
		if err := codec(string(it.Key()[len(codecs):]), v); err != nil {
			return 0, "", err
		}
	}
	for ok := it.SeekGE(streamsStart(st.cur)); ok; {
		p, parsed := parseKey(it.Key())
		if !parsed || p.kind != kindMeta {
			return 0, "", corrupt("key %q is not a stream's meta", it.Key())
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return 0, "", corrupt("read the meta of %s: %w", p.stream, err)
		}
		meta, decoded := decodeMeta(p.stream, v)
		if !decoded {
			return 0, "", corrupt("the meta of %s does not decode", p.stream)
		}
		l.live = true
		err = fn(meta, l.objects(meta.StreamKey), l.tombs(meta.StreamKey))
		l.live = false
		if l.err != nil {
			return 0, "", l.err
		}
		if err != nil {
			return 0, "", err
		}
		ok = it.SeekGE(streamEnd(st.cur, meta.StreamKey))
	}
	if err := l.iterErr(); err != nil {
		return 0, "", err
	}
	return st.revision, st.epoch, nil
}

// loader gives the sequences of Load, which share its iterator.
type loader struct {
	it *pebble.Iterator
	g  uint32
	// live is set while fn runs: the sequences yield nothing after.
	live bool
	// err is the first error a sequence met.
	err error
}

func (l *loader) iterErr() error {
	if err := l.it.Error(); err != nil {
		return corrupt("read: %w", err)
	}
	return nil
}

// each positions the iterator on each key of the stream's part kind and
// calls f, until f returns false or an error is met.
func (l *loader) each(k StreamKey, kind byte, f func(rest, value []byte) bool) {
	if !l.live || l.err != nil {
		return
	}
	prefix := append(streamPrefix(l.g, k), kind)
	for ok := l.it.SeekGE(prefix); ok && bytes.HasPrefix(l.it.Key(), prefix); ok = l.it.Next() {
		v, err := l.it.ValueAndErr()
		if err != nil {
			l.err = corrupt("read %s: %w", k, err)
			return
		}
		if !f(l.it.Key()[len(prefix):], v) || l.err != nil {
			return
		}
	}
	if l.err == nil {
		l.err = l.iterErr()
	}
}

func (l *loader) objects(k StreamKey) iter.Seq[Object] {
	return func(yield func(Object) bool) {
		// Objects come by namespace: one string for each.
		ns := ""
		l.each(k, kindObject, func(rest, value []byte) bool {
			sep := bytes.IndexByte(rest, 0)
			if sep < 0 {
				l.err = corrupt("an object key of %s has no name", k)
				return false
			}
			if string(rest[:sep]) != ns { // no allocation to compare
				ns = string(rest[:sep])
			}
			o := Object{ObjectKey: ObjectKey{Cluster: k.Cluster, Resource: k.Resource,
				Namespace: ns, Name: string(rest[sep+1:])}, Value: value}
			return yield(o)
		})
	}
}

func (l *loader) tombs(k StreamKey) iter.Seq[Tomb] {
	return func(yield func(Tomb) bool) {
		l.each(k, kindTomb, func(rest, value []byte) bool {
			t := Tomb{Object: Object{ObjectKey: ObjectKey{Cluster: k.Cluster, Resource: k.Resource}}}
			if len(rest) != 8 || !decodeTomb(&t, value) {
				l.err = corrupt("a tomb of %s does not decode", k)
				return false
			}
			return yield(t)
		})
	}
}
