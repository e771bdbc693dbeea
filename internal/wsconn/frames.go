package wsconn

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/gobwas/ws"
)

// This file holds the frames a connection's writer writes (appendFrame,
// frameWriter), and the checks of the peer's close frames.

// frameWriter writes a connection's frames to its socket. Only the
// connection's writer goroutine has one: it is the only code that writes
// to the socket once the handshake is done.
type frameWriter struct {
	conn    net.Conn
	timeout time.Duration // Options.WriteTimeout
	// deadline is the write deadline set on conn. It is moved only when
	// less than half the timeout is left, so that a write is bounded by
	// between half the timeout and the timeout without two system calls
	// per write.
	deadline time.Time
}

// write writes b, whole frames, in one write. A write cut by its deadline
// leaves a frame unfinished: the connection is unusable after an error.
func (w *frameWriter) write(b []byte) error {
	if err := w.refreshDeadline(); err != nil {
		return err
	}
	_, err := w.conn.Write(b)
	return err
}

// writeClose writes a close frame with payload body, bounded by the
// earlier of Options.WriteTimeout and deadline.
func (w *frameWriter) writeClose(body []byte, deadline time.Time) error {
	if d := time.Now().Add(w.timeout); d.Before(deadline) {
		deadline = d
	}
	w.deadline = deadline
	if err := w.conn.SetWriteDeadline(deadline); err != nil {
		return fmt.Errorf("set write deadline: %w", err)
	}
	_, err := w.conn.Write(appendFrame(make([]byte, 0, 4+len(body)), ws.OpClose, Message{Head: body}))
	return err
}

// refreshDeadline moves the write deadline to timeout from now if less
// than half of it is left.
func (w *frameWriter) refreshDeadline() error {
	now := time.Now()
	if w.deadline.Sub(now) >= w.timeout/2 {
		return nil
	}
	w.deadline = now.Add(w.timeout)
	if err := w.conn.SetWriteDeadline(w.deadline); err != nil {
		return fmt.Errorf("set write deadline: %w", err)
	}
	return nil
}

// frameBuffers hold a batch's frames while it is written.
var frameBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// maxFrameBytes bounds the frames a writer holds before it writes them, but
// for a single larger message; a larger buffer is not put back in
// frameBuffers, so that a large message does not keep its memory.
const maxFrameBytes = 256 << 10

// putFrameBuffer returns b to frameBuffers unless it grew too large.
func putFrameBuffer(b *[]byte) {
	if cap(*b) > maxFrameBytes {
		return
	}
	*b = (*b)[:0]
	frameBuffers.Put(b)
}

// appendFrame appends m as one unmasked, final frame of opcode op, as a
// server sends it (RFC 6455, section 5.2): the one framing code of the
// server, for its text messages, pongs and close frames alike.
func appendFrame(b []byte, op ws.OpCode, m Message) []byte {
	fin := 0x80 | byte(op)
	n := m.len()
	switch {
	case n <= 125:
		b = append(b, fin, byte(n))
	case n <= 0xffff:
		b = append(b, fin, 126, byte(n>>8), byte(n))
	default:
		b = append(b, fin, 127)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	b = append(b, m.Head...)
	b = append(b, m.Body...)
	return append(b, m.Tail...)
}

// parseClosePayload returns the status code of a close frame's payload
// (0 when it has none) or why the payload is invalid (RFC 6455, section
// 7.4: the codes that may be sent, then a UTF-8 reason).
func parseClosePayload(p []byte) (ws.StatusCode, error) {
	switch {
	case len(p) == 0:
		return 0, nil
	case len(p) == 1:
		return 0, errors.New("a payload of one byte")
	}
	code := ws.StatusCode(binary.BigEndian.Uint16(p))
	if !validCloseCode(code) {
		return 0, fmt.Errorf("status code %d", code)
	}
	if !utf8.Valid(p[2:]) {
		return 0, errors.New("a reason that is not UTF-8")
	}
	return code, nil
}

// validCloseCode reports whether a close frame may carry code: 1000–1014
// but 1004 (reserved) and 1005–1006 (never sent), and 3000–4999 (IANA's
// registry, as coder/websocket checked it).
func validCloseCode(code ws.StatusCode) bool {
	switch {
	case code >= 1004 && code <= 1006:
		return false
	case code >= 1000 && code <= 1014, code >= 3000 && code <= 4999:
		return true
	}
	return false
}
