// Package snapshot keeps a copy of the index on disk, so that a replica
// that restarts serves at once from what it held (issue 32's warm start).
//
// A Store is one directory holding one snapshot: for each stream (a
// cluster's resource type, StreamKey) its StreamMeta (served group,
// version and kind, and the member resourceVersions the index keeps:
// Clock, Since, Pruned), its Objects as compact JSON, and its Tombs
// (deleted objects, oldest first), plus the index revision and epoch the
// snapshot is at.
//
//	s, err := snapshot.Open(dir, snapshot.Options{})
//	var d *snapshot.DiscardedError
//	if errors.As(err, &d) { … log d, count d.Reason; s is an empty store }
//	rev, epoch, err := s.Load(func(m StreamMeta, objects iter.Seq[Object], tombs iter.Seq[Tomb]) error { … })
//	s.Apply(snapshot.Batch{Revision: r, Put: …, Delete: …, Tombs: …, Streams: …})
//
// Writing is incremental: a background writer follows the index's change
// feed and applies what changed as a Batch, which is atomic and synced
// (all of it is stored or none, after any crash). A full rewrite (Reset,
// then batches) fills a second generation that Load does not see until
// its last batch lands, so a reader sees the old snapshot or the new one,
// never half.
//
// The store is crash-safe: Open sets aside a store it cannot use (a table
// cut short, a checksum that does not match, a missing piece, another
// format version) and opens an empty one, returning the reason in a
// *DiscardedError beside the usable Store; Load does the same for a
// corrupt block it reads. It never returns data a checksum did not vouch
// for.
//
// Storage is pebble (an LSM tree with a write-ahead log): block checksums,
// atomic synced batches, recovery of the log's last whole batch, range
// deletions for whole streams and generations, and zstd block compression,
// which suits JSON bodies. docs/snapshot-store.md describes the keys and
// what happens on corruption.
package snapshot
