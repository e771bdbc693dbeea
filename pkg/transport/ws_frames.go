package transport

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// frameConn is a WebSocket's hijacked connection. coder/websocket does the
// handshake (its response goes out before the hijack), reads the client's
// frames and writes its own (pongs, the close frame), one Write each,
// since it flushes after every frame. The connection's writer sends the
// data frames itself (writeFrames): a batch of messages, each its own
// frame, in one write.
// coder/websocket writes and flushes one message at a time, behind two
// locks, and at a million messages a second that was most of the cost of a
// message. A mutex keeps the two writers' frames apart.
type frameConn struct {
	net.Conn
	timeout time.Duration // Options.WriteTimeout

	mu sync.Mutex
	// deadline is the write deadline set on Conn. It is moved only when
	// less than half the timeout is left, so that a write is bounded by
	// between half the timeout and the timeout without two system calls
	// per write.
	deadline time.Time
	// closed is set once a close frame was written: no data frame may
	// follow it.
	closed bool
}

// opcodeClose is the opcode of a close frame, in the low bits of its
// first byte.
const opcodeClose = 0x8

// frameBuffers hold a batch's frames while it is written.
var frameBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// maxFrameBytes bounds the frames a writer holds before it writes them, but
// for a single larger message; a larger buffer is not put back in
// frameBuffers, so that a large message does not keep its memory.
const maxFrameBytes = 256 << 10

// Write writes the library's frames, one per call.
func (c *frameConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(p) > 0 && p[0]&0x0f == opcodeClose {
		c.closed = true
	}
	if err := c.refreshDeadline(); err != nil {
		return 0, err
	}
	return c.Conn.Write(p)
}

// writeFrames writes b, whole frames, in one write; net.ErrClosed once a
// close frame was written. A write cut by its deadline leaves a frame
// unfinished: the caller closes the connection.
func (c *frameConn) writeFrames(b []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return net.ErrClosed
	}
	if err := c.refreshDeadline(); err != nil {
		return err
	}
	_, err := c.Conn.Write(b)
	return err
}

// refreshDeadline moves the write deadline to timeout from now if less
// than half of it is left. c.mu is held.
func (c *frameConn) refreshDeadline() error {
	now := time.Now()
	if c.deadline.Sub(now) >= c.timeout/2 {
		return nil
	}
	c.deadline = now.Add(c.timeout)
	if err := c.Conn.SetWriteDeadline(c.deadline); err != nil {
		return fmt.Errorf("set write deadline: %w", err)
	}
	return nil
}

// appendTextFrame appends m as one unmasked, unfragmented text frame, as a
// server sends it (RFC 6455, section 5.2).
func appendTextFrame(b []byte, m wsEncoded) []byte {
	const finText = 0x80 | 0x1
	n := m.len()
	switch {
	case n <= 125:
		b = append(b, finText, byte(n))
	case n <= 0xffff:
		b = append(b, finText, 126, byte(n>>8), byte(n))
	default:
		b = append(b, finText, 127)
		for shift := 56; shift >= 0; shift -= 8 {
			b = append(b, byte(n>>shift))
		}
	}
	b = append(b, m.head...)
	if m.body != nil {
		b = append(append(b, m.body...), '}')
	}
	return b
}

// frameHijacker is the http.ResponseWriter handed to websocket.Accept: its
// Hijack returns the connection as a frameConn, kept in conn.
type frameHijacker struct {
	http.ResponseWriter
	timeout time.Duration
	conn    *frameConn
}

// Hijack hijacks the underlying connection and wraps it in a frameConn;
// the buffered writer that it returns writes to the frameConn.
func (w *frameHijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	if err := brw.Writer.Flush(); err != nil {
		_ = c.Close()
		return nil, nil, fmt.Errorf("flush before hijack: %w", err)
	}
	w.conn = &frameConn{Conn: c, timeout: w.timeout}
	brw.Writer.Reset(w.conn)
	return w.conn, brw, nil
}

// Unwrap returns the wrapped ResponseWriter, for http.ResponseController.
func (w *frameHijacker) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// putFrameBuffer returns b to frameBuffers unless it grew too large.
func putFrameBuffer(b *[]byte) {
	if cap(*b) > maxFrameBytes {
		return
	}
	*b = (*b)[:0]
	frameBuffers.Put(b)
}
