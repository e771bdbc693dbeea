// Package warmstart keeps the index in a snapshot store on the replica's
// volume and fills the index from it when the replica starts (issue 32),
// so that a restart serves at once and resumes each member's watch from
// where it was instead of listing every cluster again.
//
// A Writer follows the index (index.Index.ReadChanges) and applies, every
// Options.Interval, one atomic batch to the store: the latest state of each
// object changed since the last batch, the deletions, the streams' clocks
// and the tombs, all read at one revision, so that the store always holds
// the index as it was at some moment. A writer that falls behind the feed's
// retention, or starts on a store it did not fill, rewrites the store from
// the whole index (snapshot.Store.Reset).
//
// Load fills an empty index from the store (index.Index.Restore) and returns
// what each stream was restored at: its type and member resourceVersion,
// from which the informers resume their watches (informers.Options.Restored),
// and when its data was last known current, which health reports until
// the watch has caught up.
//
//	store, err := snapshot.Open(dir, snapshot.Options{})   // a discarded store: log, count, go on
//	loaded, err := warmstart.Load(store, ix, codecs)       // an error: start cold on a new index
//	w := warmstart.NewWriter(ix, store, loaded, warmstart.Options{})
//	go w.Start(ctx)
package warmstart
