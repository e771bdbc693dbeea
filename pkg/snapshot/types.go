package snapshot

import (
	"errors"
	"fmt"
	"time"
)

// StreamKey names one cluster's resource type: a stream of changes that
// the member orders by resourceVersion (index.Stream).
type StreamKey struct {
	Cluster string
	// Resource is kubectl's name: "pods", "deployments.apps".
	Resource string
}

// String renders the stream as cluster/resource.
func (k StreamKey) String() string { return k.Cluster + "/" + k.Resource }

// ObjectKey names one object of a stream; Namespace is empty for
// cluster-scoped objects.
type ObjectKey struct {
	Cluster, Resource, Namespace, Name string
}

// Stream returns the stream the object belongs to.
func (k ObjectKey) Stream() StreamKey { return StreamKey{Cluster: k.Cluster, Resource: k.Resource} }

// StreamMeta is what the store keeps of one stream besides its objects and
// tombs. The store does not interpret the clocks.
type StreamMeta struct {
	StreamKey
	// Group, Version and Kind are the served GroupVersion and Kind.
	Group, Version, Kind string
	Namespaced           bool
	// Clock, Since and Pruned are member resourceVersions, as the index
	// keeps them (pkg/index/clocks.go): every change up to Clock is
	// stored, deletions before Since are unknown, and those up to Pruned
	// were dropped.
	Clock, Since, Pruned uint64
	// Removed marks a stream whose cluster or type left the index but
	// whose tombs are still retained.
	Removed bool
	// AsOf is when the stream's data was last known current, zero if
	// never: what a replica that loads it may claim.
	AsOf time.Time
	// Member identifies the member cluster the stream was read from
	// (health.ClusterStatus.MemberID), empty when unknown: its
	// resourceVersions mean something only there.
	Member string
	// Derivation says how what the writer derived from the objects and
	// stored in their values was derived (pkg/warmstart: the paths whose
	// values an object keeps); opaque to the store.
	Derivation string
}

// Object is one object: its key and its value, as the writer encodes the
// object (pkg/warmstart: its stored form); opaque to the store.
type Object struct {
	ObjectKey
	Value []byte
}

// Codec is the dictionary the bodies of a resource's objects are
// compressed with, as the writer encodes it (compact.Codec.Dict): stored
// once per snapshot, for every stream of the resource.
type Codec struct {
	Resource string
	Dict     []byte
}

// Tomb is a deleted object: its last state, the stream's resourceVersion
// that covers the deletion, and when it was deleted.
type Tomb struct {
	Object
	RV uint64
	At time.Time
}

// TombDrop drops Count tombs of a stream, the oldest (Batch.DropTombs) or
// the newest (Batch.PopTombs); all of them when it holds fewer.
type TombDrop struct {
	StreamKey
	Count int
}

// Batch is one atomic step: after a crash the store holds all of a batch
// or none of it. Apply applies its parts in the order of the fields:
// removals first, so a batch can remove a stream and add it again, and
// Put after Delete, so a key in both is put.
type Batch struct {
	// Revision is the index revision the batch brings the store to;
	// opaque to the store but for 0, which marks a batch of a rewrite
	// (after Reset) with more to come. The first batch with a Revision
	// after Reset completes the rewrite.
	Revision uint64
	// Epoch is the index epoch that wrote the batch; empty keeps the
	// store's (or, in a rewrite, Reset's).
	Epoch string

	// RemoveStreams drops streams whole: meta, objects and tombs.
	RemoveStreams []StreamKey
	// Codecs puts the dictionaries of resources, replacing those of the
	// same resource.
	Codecs []Codec
	// Streams puts the meta of these streams. A stream must have a meta,
	// here or from an earlier batch, before anything else of it is
	// stored.
	Streams []StreamMeta
	// DropObjects drops every object of these streams; their meta and
	// tombs stay (a removed cluster whose tombs are retained).
	DropObjects []StreamKey
	// Delete drops objects; deleting an object the store lacks is no
	// error.
	Delete []ObjectKey
	// Put stores objects, replacing those with the same key.
	Put []Object
	// DropTombs drops the oldest tombs of streams.
	DropTombs []TombDrop
	// PopTombs drops the newest tombs of streams, after DropTombs: those
	// whose RV the index has changed since they were stored (a deletion
	// after the clock gets the next clock's), to be appended again.
	PopTombs []TombDrop
	// Tombs appends tombs to their stream, oldest first.
	Tombs []Tomb
}

// Reasons a store is discarded, as DiscardedError.Reason gives them: short
// words for a metric's label.
const (
	// ReasonTorn: a file's size is not the one the engine's manifest
	// records, or a record ends early (a copy cut short, a file
	// truncated). A log whose last batch was cut short by a crash is
	// not torn: the store opens with every batch before it.
	ReasonTorn = "torn"
	// ReasonCorrupt: a checksum does not match, a file is missing, or a
	// record does not decode.
	ReasonCorrupt = "corrupt"
	// ReasonFormat: the store was written in another format version.
	ReasonFormat = "format"
)

var (
	// ErrCorrupt is wrapped by the errors of a torn or corrupt store.
	ErrCorrupt = errors.New("snapshot store is corrupt")
	// ErrFormat is wrapped by the error of a store of another format
	// version.
	ErrFormat = errors.New("snapshot store has another format version")
	// ErrLocked means another process, or another Store of this one,
	// holds the store open.
	ErrLocked = errors.New("snapshot store is in use")
	// ErrClosed is returned by the methods of a closed Store.
	ErrClosed = errors.New("snapshot store is closed")
	// ErrUnknownStream is wrapped by Apply's error for an object or tomb
	// of a stream with no meta.
	ErrUnknownStream = errors.New("stream has no meta in the snapshot store")
)

// DiscardedError says why Open or Load set a store aside and started an
// empty one. It wraps ErrCorrupt or ErrFormat, and the cause.
type DiscardedError struct {
	// Reason is ReasonTorn, ReasonCorrupt or ReasonFormat.
	Reason string
	// Kept is where the discarded store was moved when
	// Options.KeepDiscarded is set, else empty: it was removed.
	Kept string
	// Err is the cause.
	Err error
}

func (e *DiscardedError) Error() string {
	return fmt.Sprintf("snapshot store discarded (%s): %v", e.Reason, e.Err)
}

// Unwrap returns the sentinel of the reason and the cause.
func (e *DiscardedError) Unwrap() []error {
	sentinel := ErrCorrupt
	if e.Reason == ReasonFormat {
		sentinel = ErrFormat
	}
	return []error{sentinel, e.Err}
}
