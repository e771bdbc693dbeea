package snapshot

import (
	"context"

	"github.com/cockroachdb/pebble/v2"
)

// flush writes the engine's write buffer to a table file, so that a test
// finds its data in a table rather than only in the write-ahead log.
func (s *Store) flush() error {
	s.dbMu.RLock()
	defer s.dbMu.RUnlock()
	return s.db.Flush()
}

// setFormat overwrites the store's format version.
func (s *Store) setFormat(v string) error {
	s.dbMu.RLock()
	defer s.dbMu.RUnlock()
	return s.db.Set(formatKey, []byte(v), pebble.Sync)
}

// compact compacts the whole store, as it settles after a while.
func (s *Store) compact() error {
	s.dbMu.RLock()
	defer s.dbMu.RUnlock()
	return s.db.Compact(context.Background(), []byte{0}, []byte{0xff, 0xff, 0xff, 0xff, 0xff}, true)
}
