package snapshot

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cockroachdb/pebble/v2"
)

// Apply writes b as one atomic, synced step (see Batch). Nothing of a
// batch that returns an error is stored.
func (s *Store) Apply(b Batch) error {
	unlock, err := s.lockWrite()
	if err != nil {
		return err
	}
	defer unlock()
	rewriting := s.st.next != 0
	if b.Revision == 0 && !rewriting {
		return errors.New("apply: a batch needs a revision (0 is for the batches of a rewrite, after Reset)")
	}
	w := writer{g: s.st.cur, streams: s.cur, staged: map[StreamKey]*tombSeq{}, batch: s.db.NewBatch()}
	if rewriting {
		w.g, w.streams = s.st.next, s.next
	}
	defer w.batch.Close()
	if err := w.write(b); err != nil {
		return fmt.Errorf("apply: %w", err)
	}
	st := s.st
	if b.Revision != 0 {
		if rewriting {
			// The rewrite is whole: it becomes the snapshot, and the
			// old one goes, in the same step.
			_ = w.batch.DeleteRange(genPrefix(st.cur), genPrefix(st.cur+1), nil)
			st.cur, st.next = st.next, 0
			st.epoch, st.nextEpoch = st.nextEpoch, ""
		}
		st.revision = b.Revision
		if b.Epoch != "" {
			st.epoch = b.Epoch
		}
	}
	_ = w.batch.Set(stateKey, st.encode(), nil)
	if err := w.batch.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("apply: commit: %w", err)
	}
	for k, seq := range w.staged {
		if seq == nil {
			delete(w.streams, k)
		} else {
			w.streams[k] = seq
		}
	}
	if rewriting && st.next == 0 {
		s.cur, s.next = s.next, nil
	}
	s.st = st
	return nil
}

// lockWrite takes the locks of a writer (s.mu, and s.dbMu for reading)
// and returns their release, or ErrClosed.
func (s *Store) lockWrite() (unlock func(), err error) {
	s.mu.Lock()
	s.dbMu.RLock()
	unlock = func() {
		s.dbMu.RUnlock()
		s.mu.Unlock()
	}
	if s.db == nil {
		unlock()
		return nil, ErrClosed
	}
	return unlock, nil
}

// writer turns a Batch into a pebble batch on generation g. Changes to the
// streams are staged, and made to streams once the batch is committed.
type writer struct {
	g       uint32
	streams map[StreamKey]*tombSeq
	// staged holds the streams the batch changes: nil for removed.
	staged map[StreamKey]*tombSeq
	batch  *pebble.Batch
}

// stream returns the tomb sequence of k as the batch leaves it, a copy
// the batch may change; an error when k has no meta.
func (w *writer) stream(k StreamKey) (*tombSeq, error) {
	seq, ok := w.staged[k]
	if !ok {
		if cur := w.streams[k]; cur != nil {
			c := *cur
			seq = &c
			w.staged[k] = seq
		}
	}
	if seq == nil {
		return nil, fmt.Errorf("%w: %s", ErrUnknownStream, k)
	}
	return seq, nil
}

func (w *writer) write(b Batch) error {
	// The errors of a pebble.Batch's Set, Delete and DeleteRange are
	// those of a closed or read-only batch, never the case here.
	for _, k := range b.RemoveStreams {
		if err := validKey(ObjectKey{Cluster: k.Cluster, Resource: k.Resource}); err != nil {
			return fmt.Errorf("remove stream %s: %w", k, err)
		}
		_ = w.batch.DeleteRange(streamPrefix(w.g, k), streamEnd(w.g, k), nil)
		w.staged[k] = nil
	}
	for _, c := range b.Codecs {
		if c.Resource == "" || strings.IndexByte(c.Resource, 0) >= 0 {
			return fmt.Errorf("codec of resource %q: not a resource name", c.Resource)
		}
		_ = w.batch.Set(codecKey(w.g, c.Resource), c.Dict, nil)
	}
	for _, m := range b.Streams {
		if err := validKey(ObjectKey{Cluster: m.Cluster, Resource: m.Resource}); err != nil {
			return fmt.Errorf("stream %s/%s: %w", m.Cluster, m.Resource, err)
		}
		_ = w.batch.Set(metaKey(w.g, m.StreamKey), encodeMeta(m), nil)
		if _, err := w.stream(m.StreamKey); err != nil {
			w.staged[m.StreamKey] = &tombSeq{}
		}
	}
	for _, k := range b.DropObjects {
		if _, err := w.stream(k); err != nil {
			return err
		}
		from, to := append(streamPrefix(w.g, k), kindObject), append(streamPrefix(w.g, k), kindObject+1)
		_ = w.batch.DeleteRange(from, to, nil)
	}
	for _, k := range b.Delete {
		if err := w.checkObject(k); err != nil {
			return err
		}
		_ = w.batch.Delete(objectKey(w.g, k), nil)
	}
	for _, o := range b.Put {
		if err := w.checkObject(o.ObjectKey); err != nil {
			return err
		}
		_ = w.batch.Set(objectKey(w.g, o.ObjectKey), o.Value, nil)
	}
	for _, d := range b.DropTombs {
		seq, err := w.stream(d.StreamKey)
		if err != nil {
			return err
		}
		n := min(uint64(max(d.Count, 0)), seq.next-seq.first)
		if n > 0 {
			_ = w.batch.DeleteRange(tombKey(w.g, d.StreamKey, seq.first), tombKey(w.g, d.StreamKey, seq.first+n), nil)
			seq.first += n
		}
	}
	for _, d := range b.PopTombs {
		seq, err := w.stream(d.StreamKey)
		if err != nil {
			return err
		}
		n := min(uint64(max(d.Count, 0)), seq.next-seq.first)
		if n > 0 {
			_ = w.batch.DeleteRange(tombKey(w.g, d.StreamKey, seq.next-n), tombKey(w.g, d.StreamKey, seq.next), nil)
			seq.next -= n
		}
	}
	for _, t := range b.Tombs {
		if err := w.checkObject(t.ObjectKey); err != nil {
			return err
		}
		seq, _ := w.stream(t.Stream())
		_ = w.batch.Set(tombKey(w.g, t.Stream(), seq.next), encodeTomb(t), nil)
		seq.next++
	}
	return nil
}

func (w *writer) checkObject(k ObjectKey) error {
	if err := validKey(k); err != nil {
		return fmt.Errorf("object %s/%s/%s/%s: %w", k.Cluster, k.Resource, k.Namespace, k.Name, err)
	}
	_, err := w.stream(k.Stream())
	return err
}

// Reset starts a rewrite of the whole store: the batches applied after it
// fill a new, empty generation that Load does not see, and the first one
// with a Revision (which may be the first of all) makes it the snapshot
// and drops the old one, atomically. Until then Load reads the old
// snapshot; a rewrite cut short by a crash or Close is dropped at the next
// Open. A Reset during a rewrite starts it again. epoch is the store's
// epoch once the rewrite completes, unless its last batch names one.
func (s *Store) Reset(epoch string) error {
	unlock, err := s.lockWrite()
	if err != nil {
		return err
	}
	defer unlock()
	st := s.st
	b := s.db.NewBatch()
	defer b.Close()
	if st.next != 0 {
		_ = b.DeleteRange(genPrefix(st.next), genPrefix(st.next+1), nil)
	}
	st.next = max(st.cur, st.next) + 1
	st.nextEpoch = epoch
	_ = b.Set(stateKey, st.encode(), nil)
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("reset: %w", err)
	}
	s.st, s.next = st, map[StreamKey]*tombSeq{}
	return nil
}
