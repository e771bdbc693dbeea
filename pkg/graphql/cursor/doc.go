// Package cursor encodes and decodes the opaque cursors of fleetcache's
// GraphQL API. There are three kinds:
//
//   - A page cursor (EncodePage, DecodePage) holds an object.Position:
//     ResourceEdge.cursor and PageInfo.endCursor give one, and a resources
//     query's after continues strictly after it (keyset paging).
//   - A sorted page cursor (EncodeSorted, DecodeSorted) holds a Sorted:
//     the sort values and Position of the last object of a page of a
//     sorted resources query (an index.SortedPosition), and a fingerprint
//     of the query's filter and sort, which the next page must share.
//   - A revision cursor (EncodeRevision, DecodeRevision) holds a Revision:
//     the epoch of an index (one process's index, see index.Index.Epoch)
//     and a revision of it. ResourceConnection.revision and each
//     ResourceEvent's cursor give one, and a resourceEvents subscription's
//     since follows the changes after it. Revision.Check tells a cursor of
//     another epoch, whose revision means nothing to the current index.
//
// All are checksummed, so that garbage, truncated or edited cursors and
// cursors of another kind are told from real ones. Decoding errors wrap
// ErrMalformed or ErrKind, and Revision.Check's ErrExpired; the engine
// (pkg/graphql) answers the first two with BAD_USER_INPUT and the third
// with CURSOR_EXPIRED.
package cursor
