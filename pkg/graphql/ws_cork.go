package graphql

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"sync"
)

// corkConn is a connection whose writes can be held back ("corked") and
// sent with the next write after uncork, in one write to the socket.
// coder/websocket flushes the socket after every message; corking lets a
// connection's writer send a batch of queued messages, still one WebSocket
// message each, in one system call. A corked write only copies into
// memory, so it never blocks; the write that sends the batch is the
// library's own, under its context and so under Options.WriteTimeout.
type corkConn struct {
	net.Conn

	mu     sync.Mutex
	corked bool
	// held are the bytes written while corked; nil when none are.
	held *[]byte
}

// corkBuffers hold corked bytes only for the length of a batch, so that
// idle connections keep none.
var corkBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// maxPooledCork is the largest buffer put back in corkBuffers: one batch of
// large messages should not keep its memory.
const maxPooledCork = 256 << 10

// cork holds back the following writes until uncork.
func (c *corkConn) cork() {
	c.mu.Lock()
	c.corked = true
	c.mu.Unlock()
}

// uncork lets writes through again: the next write sends the held bytes
// before its own.
func (c *corkConn) uncork() {
	c.mu.Lock()
	c.corked = false
	c.mu.Unlock()
}

// Write holds p back while corked; otherwise it writes the held bytes and
// p in one write. Its count is of p's bytes only.
func (c *corkConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	if c.corked {
		if c.held == nil {
			c.held = corkBuffers.Get().(*[]byte)
		}
		*c.held = append(*c.held, p...)
		c.mu.Unlock()
		return len(p), nil
	}
	held := c.held
	c.held = nil
	c.mu.Unlock()
	if held == nil {
		return c.Conn.Write(p)
	}
	defer putCork(held)
	before := len(*held)
	buf := append(*held, p...)
	*held = buf
	n, err := c.Conn.Write(buf)
	return max(n-before, 0), err
}

func putCork(b *[]byte) {
	if cap(*b) > maxPooledCork {
		return
	}
	*b = (*b)[:0]
	corkBuffers.Put(b)
}

// corkHijacker is the http.ResponseWriter handed to websocket.Accept: its
// Hijack returns the connection as a corkConn, kept in conn.
type corkHijacker struct {
	http.ResponseWriter
	conn *corkConn
}

// Hijack hijacks the underlying connection and wraps it in a corkConn;
// the buffered writer that it returns writes to the corkConn.
func (w *corkHijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	if err := brw.Writer.Flush(); err != nil {
		_ = c.Close()
		return nil, nil, fmt.Errorf("flush before hijack: %w", err)
	}
	w.conn = &corkConn{Conn: c}
	brw.Writer.Reset(w.conn)
	return w.conn, brw, nil
}

// Unwrap returns the wrapped ResponseWriter, for http.ResponseController.
func (w *corkHijacker) Unwrap() http.ResponseWriter { return w.ResponseWriter }
