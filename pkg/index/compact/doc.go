// Package compact keeps cached objects' JSON bodies small: each body is
// compressed with S2 (github.com/klauspost/compress/s2) against a
// dictionary trained from the first objects of its resource type.
//
// A Codec serves one resource type ("pods") across every cluster; a
// Codecs registry hands out one Codec per resource name, so that a
// thousand clusters share one dictionary per type. A Codec stores the
// bodies it sees as they are until it has collected enough samples
// (TrainBytes), then builds its dictionary once and compresses every
// later body against it. A Body records which form it is in (its first
// byte), so bodies stored before training stay readable, and Decode
// returns exactly the bytes Encode was given. DecodeShared decodes
// through a small cache of the last bodies decoded, one per Codecs
// registry (recent.go), so that the fields of one page's objects are read
// from one decoding each; it is a field of the registry, not package
// state.
//
// The blocks are S2's, decoded by the s2 library; they are written by an
// encoder of this package (encode.go) that keeps its hash table from one
// block to the next, where s2's clears a 64 KB table for each block, half
// of compressing a Pod. It finds the same kinds of matches (the block's,
// the dictionary's, the last offset's) and its bodies are a few per cent
// smaller (TestEncodeAgainstS2, BenchmarkEncodeParts).
//
// Why S2 with a dictionary rather than zstd: Kubernetes objects of one type
// repeat their keys and most of their values, so a dictionary of a few
// typical objects does most of the work; S2 then decodes about four times
// faster than zstd (about 0.8 µs against 3.5 µs for a 3 KB Pod on this
// project's machine) for bodies about a third larger (455 B against 320 B),
// and queries that read fields the indexes do not hold decode every
// candidate (see docs/design.md, "Compact storage").
package compact
