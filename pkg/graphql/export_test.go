package graphql

// CursorRevision returns the index epoch and revision a revision cursor
// holds, for the benchmarks that measure a change's latency from its
// cursor. (The real-server tests in internal/e2e/api read cursors with a
// helper of their own: cursors stay opaque in the Go API.)
func CursorRevision(cursor string) (epoch string, revision uint64, err error) {
	c, err := decodeRevisionCursor(cursor)
	return c.Epoch, c.Revision, err
}
