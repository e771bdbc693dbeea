package api_test

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// cursorRevision returns the index revision a revision cursor holds.
// Cursors are opaque to clients, and pkg/graphql keeps them so; this test
// reads the format its cursor.go documents (base64url of the tag 'R', the
// uvarint-length-prefixed epoch, the revision as a uvarint, and a big-endian
// CRC-32C of all that) to tell when a subscription's heartbeat has caught up
// with the index. A change of the format fails here, loudly.
func cursorRevision(cursor string) (uint64, error) {
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return 0, fmt.Errorf("revision cursor %q: %w", cursor, err)
	}
	if len(b) < 1+4 || b[0] != 'R' {
		return 0, fmt.Errorf("revision cursor %q: no 'R' tag", cursor)
	}
	body, sum := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)) != sum {
		return 0, fmt.Errorf("revision cursor %q: checksum mismatch", cursor)
	}
	epochLen, n := binary.Uvarint(body[1:])
	if n <= 0 || epochLen > uint64(len(body)-1-n) {
		return 0, fmt.Errorf("revision cursor %q: bad epoch", cursor)
	}
	revision, m := binary.Uvarint(body[1+n+int(epochLen):])
	if m <= 0 || 1+n+int(epochLen)+m != len(body) {
		return 0, fmt.Errorf("revision cursor %q: bad revision", cursor)
	}
	return revision, nil
}
