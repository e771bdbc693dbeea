package snapshot

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"sync"
	"syscall"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Options configures a Store. The zero value is ready to use; defaults are
// filled in by Open.
type Options struct {
	// Logger receives the storage engine's messages, its information at
	// debug level. Default: slog.Default().
	Logger *slog.Logger
	// KeepDiscarded keeps a discarded store as "<dir>.discarded" (in
	// place of an older one) for inspection. Default false: it is
	// removed, so the volume never holds two stores.
	KeepDiscarded bool
	// Verify reads every block of the snapshot at Open to check its
	// checksum, so that Open, not Load, finds a corrupt block. Default
	// false: Load checks each block it reads, and discards a store it
	// finds corrupt; Verify costs a read of the whole store.
	Verify bool
	// MemTableSize is the size of the engine's write buffer, which a
	// flush turns into a table file; up to two are held while one is
	// flushed. Default 16 MiB.
	MemTableSize uint64
	// CacheSize is the size of the engine's block cache. Default 8 MiB:
	// Load reads each block once.
	CacheSize int64
}

func (o *Options) defaults() {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.MemTableSize == 0 {
		o.MemTableSize = 16 << 20
	}
	if o.CacheSize == 0 {
		o.CacheSize = 8 << 20
	}
}

// blockSize is the size of a table's blocks before compression: about a
// dozen Pods, where the engine's default (4 KiB) holds one or two.
const blockSize = 32 << 10

// Store is a snapshot store in one directory. Apply and Reset may be
// called from one goroutine while Load runs in another; Size at any time.
type Store struct {
	dir  string
	opts Options

	// mu serialises the writers (Apply, Reset, a discard, Close) and
	// guards st, cur, next and discarded.
	mu sync.Mutex
	st state
	// cur and next hold the tomb sequence of each stream of the
	// generations st.cur and st.next (nil when no rewrite is under way).
	cur, next map[StreamKey]*tombSeq
	discarded *DiscardedError

	// dbMu guards db and lock: read-held while they are used, write-held
	// to close or replace them.
	dbMu sync.RWMutex
	db   *pebble.DB
	lock *pebble.Lock
}

// tombSeq is the sequence numbers of a stream's tombs: first is the
// oldest's, next the one the next tomb takes.
type tombSeq struct{ first, next uint64 }

// Open opens the store in dir, creating it if needed. A store that cannot
// be used (torn, corrupt, of another format version) is set aside and an
// empty one opened in its place: Open then returns the usable Store and a
// *DiscardedError that says why (Store.Discarded gives it again). A store
// held open by another process or Store gives ErrLocked and no Store.
func Open(dir string, opts Options) (*Store, error) {
	opts.defaults()
	s := &Store{dir: dir, opts: opts}
	err := s.open()
	var d *DiscardedError
	if errors.As(err, &d) {
		if err := s.discardLocked(d); err != nil {
			return nil, err
		}
		return s, d
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

// open opens the engine in s.dir and reads the store's state; a
// *DiscardedError says the store is unusable.
func (s *Store) open() (err error) {
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return fmt.Errorf("snapshot store %s: %w", s.dir, err)
	}
	lock, err := pebble.LockDirectory(s.dir, vfs.Default)
	if err != nil {
		if errors.Is(err, syscall.EAGAIN) || strings.Contains(err.Error(), "lock held by current process") {
			return fmt.Errorf("%w: %s: %v", ErrLocked, s.dir, err)
		}
		return fmt.Errorf("lock snapshot store %s: %w", s.dir, err)
	}
	db, err := s.openEngine(lock)
	if err != nil {
		_ = lock.Close()
		return err
	}
	s.db, s.lock = db, lock
	if err := s.init(); err != nil {
		s.closeEngine()
		return err
	}
	return nil
}

// openEngine opens pebble on a locked directory. Its errors, but those of
// the file system's permissions, mean an unusable store; so does a panic.
// The engine checks the manifest's and the log's checksums, and each
// table file's size against the manifest.
func (s *Store) openEngine(lock *pebble.Lock) (db *pebble.DB, err error) {
	cache := pebble.NewCache(s.opts.CacheSize)
	defer cache.Unref()
	po := &pebble.Options{
		FS:    vfs.Default,
		Lock:  lock,
		Cache: cache,
		// Pinned, not FormatNewest: a newer pebble must not ratchet a
		// store up without a change here.
		FormatMajorVersion: pebble.FormatTableFormatV6,
		MemTableSize:       s.opts.MemTableSize,
		Logger:             pebbleLogger{s.opts.Logger},
		EventListener: &pebble.EventListener{
			BackgroundError: func(err error) {
				s.opts.Logger.Error("Snapshot store background error", "dir", s.dir, "err", err)
			},
			// The engine's default ends the process. The read that
			// found the corruption fails too: Open or Load then discards
			// the store.
			DataCorruption: func(info pebble.DataCorruptionInfo) {
				s.opts.Logger.Error("Snapshot store corrupt", "dir", s.dir, "path", info.Path, "err", info.Details)
			},
		},
	}
	// zstd, on blocks of many objects: the Pods of one Deployment sort
	// together and share most of their JSON.
	po.ApplyCompressionSettings(func() pebble.DBCompressionSettings {
		return pebble.UniformDBCompressionSettings(sstable.ZstdCompression)
	})
	for i := range po.Levels {
		po.Levels[i].BlockSize = blockSize
	}
	defer func() {
		if r := recover(); r != nil {
			db, err = nil, &DiscardedError{Reason: ReasonCorrupt, Err: fmt.Errorf("storage engine panicked: %v", r)}
		}
	}()
	db, err = pebble.Open(s.dir, po)
	switch {
	case err == nil:
		return db, nil
	case errors.Is(err, fs.ErrPermission):
		return nil, fmt.Errorf("open snapshot store %s: %w", s.dir, err)
	case errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(err.Error(), "size mismatch"):
		// A file shorter than the manifest records ("object size
		// mismatch"), or a record that ends early.
		return nil, &DiscardedError{Reason: ReasonTorn, Err: err}
	}
	return nil, &DiscardedError{Reason: ReasonCorrupt, Err: err}
}

// corrupt is the error of a store found unusable after the engine opened.
func corrupt(format string, args ...any) error {
	return &DiscardedError{Reason: ReasonCorrupt, Err: fmt.Errorf(format, args...)}
}

// init checks the format version and the state, drops an
// unfinished rewrite, and reads the streams of the current generation. A
// new store gets its format version and first state.
func (s *Store) init() error {
	format, err := s.get(formatKey)
	if errors.Is(err, pebble.ErrNotFound) {
		empty, err := s.empty()
		if err != nil {
			return err
		}
		if !empty {
			return corrupt("no format version in a store that holds data")
		}
		return s.create()
	}
	if err != nil {
		return err
	}
	if string(format) != formatVersion {
		return &DiscardedError{Reason: ReasonFormat, Err: fmt.Errorf("format %q, want %q", format, formatVersion)}
	}
	v, err := s.get(stateKey)
	if errors.Is(err, pebble.ErrNotFound) {
		return corrupt("no state")
	}
	if err != nil {
		return err
	}
	st, ok := decodeState(v)
	if !ok {
		return corrupt("the state does not decode")
	}
	if st.next != 0 {
		// A rewrite that did not finish: its batches are of no use to
		// another process.
		b := s.db.NewBatch()
		defer b.Close()
		_ = b.DeleteRange(genPrefix(st.next), genPrefix(st.next+1), nil)
		st.next, st.nextEpoch = 0, ""
		_ = b.Set(stateKey, st.encode(), nil)
		if err := b.Commit(pebble.Sync); err != nil {
			return fmt.Errorf("drop an unfinished rewrite: %w", err)
		}
	}
	s.st = st
	if s.cur, err = s.scanStreams(st.cur); err != nil {
		return err
	}
	if s.opts.Verify {
		return s.verify()
	}
	return nil
}

// get returns a copy of key's value; errors but ErrNotFound are corrupt.
func (s *Store) get(key []byte) ([]byte, error) {
	v, closer, err := s.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, err
	}
	if err != nil {
		return nil, corrupt("read %q: %w", key, err)
	}
	defer closer.Close()
	return append([]byte(nil), v...), nil
}

func (s *Store) empty() (bool, error) {
	it, err := s.db.NewIter(nil)
	if err != nil {
		return false, corrupt("%w", err)
	}
	has := it.First()
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return false, corrupt("%w", err)
	}
	return !has, nil
}

func (s *Store) create() error {
	s.st = state{cur: 1}
	b := s.db.NewBatch()
	defer b.Close()
	_ = b.Set(formatKey, []byte(formatVersion), nil)
	_ = b.Set(stateKey, s.st.encode(), nil)
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("create snapshot store %s: %w", s.dir, err)
	}
	s.cur = map[StreamKey]*tombSeq{}
	return nil
}

// scanStreams reads the streams of generation g, seeking from each meta
// to its tombs and on to the next stream's meta.
func (s *Store) scanStreams(g uint32) (map[StreamKey]*tombSeq, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: genPrefix(g), UpperBound: genPrefix(g + 1)})
	if err != nil {
		return nil, corrupt("%w", err)
	}
	defer it.Close()
	streams := map[StreamKey]*tombSeq{}
	for ok := it.SeekGE(streamsStart(g)); ok; {
		p, parsed := parseKey(it.Key())
		if !parsed || p.kind != kindMeta {
			return nil, corrupt("key %q is not a stream's meta", it.Key())
		}
		k := p.stream
		seq := &tombSeq{}
		tombs := tombKey(g, k, 0)
		tombs = tombs[:len(tombs)-8]
		if it.SeekGE(tombs) && hasPrefix(it.Key(), tombs) {
			seq.first = tombSeqOf(it.Key())
			if !it.SeekLT(streamEnd(g, k)) || !hasPrefix(it.Key(), tombs) {
				return nil, corrupt("the tombs of %s", k)
			}
			seq.next = tombSeqOf(it.Key()) + 1
		}
		streams[k] = seq
		ok = it.SeekGE(streamEnd(g, k))
	}
	if err := it.Error(); err != nil {
		return nil, corrupt("read streams: %w", err)
	}
	return streams, nil
}

func hasPrefix(b, prefix []byte) bool {
	return len(b) >= len(prefix) && string(b[:len(prefix)]) == string(prefix)
}

func tombSeqOf(key []byte) uint64 {
	var n uint64
	for _, c := range key[len(key)-8:] {
		n = n<<8 | uint64(c)
	}
	return n
}

// verify reads every key and value of the store, which checks every
// block's checksum.
func (s *Store) verify() error {
	it, err := s.db.NewIter(nil)
	if err != nil {
		return corrupt("%w", err)
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		if _, err := it.ValueAndErr(); err != nil {
			return corrupt("verify: %w", err)
		}
	}
	if err := it.Error(); err != nil {
		return corrupt("verify: %w", err)
	}
	return nil
}

// discardLocked sets the store aside, as d says why, and opens an empty
// one in its place. The caller holds s.mu and s.dbMu for writing, or is
// Open.
func (s *Store) discardLocked(d *DiscardedError) error {
	s.closeEngine()
	if s.opts.KeepDiscarded {
		kept := s.dir + ".discarded"
		if err := os.RemoveAll(kept); err != nil {
			return fmt.Errorf("remove the last discarded snapshot store: %w", err)
		}
		if err := os.Rename(s.dir, kept); err == nil {
			d.Kept = kept
		}
	}
	if d.Kept == "" {
		if err := os.RemoveAll(s.dir); err != nil {
			return fmt.Errorf("remove a discarded snapshot store (%w): %w", d, err)
		}
	}
	if err := s.open(); err != nil {
		return fmt.Errorf("open a new snapshot store after one was discarded (%w): %w", d, err)
	}
	s.discarded = d
	return nil
}

// closeEngine closes the engine and the directory lock, if open.
func (s *Store) closeEngine() {
	if s.db != nil {
		if err := s.db.Close(); err != nil {
			s.opts.Logger.Error("Closing the snapshot store", "dir", s.dir, "err", err)
		}
		s.db = nil
	}
	if s.lock != nil {
		_ = s.lock.Close()
		s.lock = nil
	}
}

// Discarded returns why Open or Load last set a store aside, or nil.
func (s *Store) Discarded() *DiscardedError {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.discarded
}

// Size returns the bytes the store takes on disk: tables, the write-ahead
// log and the manifest. A dropped stream or generation is counted until
// compactions reclaim it.
func (s *Store) Size() (int64, error) {
	s.dbMu.RLock()
	defer s.dbMu.RUnlock()
	if s.db == nil {
		return 0, ErrClosed
	}
	return int64(s.db.Metrics().DiskSpaceUsage()), nil
}

// Close flushes nothing (every batch is already synced) and releases the
// store; a later call is a no-op.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dbMu.Lock()
	defer s.dbMu.Unlock()
	if s.db == nil {
		return nil
	}
	err := s.db.Close()
	s.db = nil
	err = errors.Join(err, s.lock.Close())
	s.lock = nil
	if err != nil {
		return fmt.Errorf("close snapshot store %s: %w", s.dir, err)
	}
	return nil
}

// pebbleLogger hands the engine's messages to slog. The engine formats
// them itself; Fatalf is for states it cannot go on from, and panics.
type pebbleLogger struct{ l *slog.Logger }

func (p pebbleLogger) Infof(format string, args ...any) {
	p.l.Debug("Snapshot store engine", "msg", fmt.Sprintf(format, args...))
}

func (p pebbleLogger) Errorf(format string, args ...any) {
	p.l.Error("Snapshot store engine", "msg", fmt.Sprintf(format, args...))
}

func (p pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	p.l.Error("Snapshot store engine failed", "msg", msg)
	panic("snapshot store: " + msg)
}
