package graphql

// CursorRevision returns the index epoch and revision a revision cursor
// holds, for the tests of package graphql_test.
func CursorRevision(cursor string) (epoch string, revision uint64, err error) {
	c, err := decodeRevisionCursor(cursor)
	return c.Epoch, c.Revision, err
}
