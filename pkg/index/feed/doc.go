// Package feed is the index's change feed: every change an Index applies,
// as an Event at the revision it produced, kept in a bounded window for
// followers (subscriptions, the fanout hub).
//
// A Feed is owned by its index, which calls Record with its write lock
// held, once per applied change: an Event of type Added, Modified or
// Deleted, with the object after the change (for Deleted, its last known
// state) and, for Modified, the one it replaced. Revision is the number
// of the last event, so a reader that lists the index at a revision and
// then follows Events(revision, …) sees every change exactly once. Events
// fails with ErrExpired once the changes it needs have left the retention
// window (the follower lists again), and with ErrFutureRevision for a
// revision the feed has not reached (a cursor of another index); Wait
// blocks until the revision moves.
//
// Feed and Event are generic in the object type, which the feed never
// reads: an Index's feed is a Feed[*object.Object], its events
// Event[*object.Object] (package object). The bounded,
// numbered log under it is internal/changelog.
package feed
