package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
)

// connections counts the WebSocket and SSE connections of a Server by
// client address, and lets the server wait for them to end. It is safe for
// concurrent use.
type connections struct {
	mu     sync.Mutex
	byAddr map[string]int
	total  int
	// closed refuses new connections; drained is closed once closed is
	// set and total is 0.
	closed  bool
	drained chan struct{}
}

func newConnections() *connections {
	return &connections{byAddr: map[string]int{}, drained: make(chan struct{})}
}

// The errors of acquire.
var (
	errTooManyConnections = errors.New("too many connections")
	errShuttingDown       = errors.New("the server is shutting down")
)

// acquire takes one of the max connection slots of addr, or fails with
// errTooManyConnections, or errShuttingDown once closeAndWait was called.
// release gives the slot back; call it once.
func (c *connections) acquire(addr string, max int) (release func(), err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errShuttingDown
	}
	if c.byAddr[addr] >= max {
		return nil, fmt.Errorf("%w: the address %s already holds %d WebSocket and SSE connections, the limit", errTooManyConnections, addr, max)
	}
	c.byAddr[addr]++
	c.total++
	var once sync.Once
	return func() { once.Do(func() { c.release(addr) }) }, nil
}

func (c *connections) release(addr string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byAddr[addr]--; c.byAddr[addr] <= 0 {
		delete(c.byAddr, addr)
	}
	if c.total--; c.total == 0 && c.closed {
		close(c.drained)
	}
}

// count returns the number of connections of addr.
func (c *connections) count(addr string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byAddr[addr]
}

// closeAndWait refuses new connections and waits until every connection
// has ended, or ctx ends.
func (c *connections) closeAndWait(ctx context.Context) error {
	c.mu.Lock()
	if !c.closed {
		c.closed = true
		if c.total == 0 {
			close(c.drained)
		}
	}
	c.mu.Unlock()
	select {
	case <-c.drained:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wait for the WebSocket and SSE connections to end: %w", ctx.Err())
	}
}

// drainConnections waits, once the server is stopped, until every
// WebSocket and SSE connection has ended: http.Server.Shutdown does not
// wait for hijacked connections, and a process that exits first cuts the
// close handshake short. WebSockets get Options.ShutdownGrace to finish
// it; then the connections left are dropped (closed without a handshake,
// their writes cut), and waited for as long again.
func (s *Server) drainConnections() error {
	wait := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), s.opts.ShutdownGrace)
		defer cancel()
		return s.conns.closeAndWait(ctx)
	}
	if wait() == nil {
		return nil
	}
	s.opts.Logger.Info("Dropping the connections that did not close in time", "grace", s.opts.ShutdownGrace)
	s.drop()
	return wait()
}

// acquireConnection takes a connection slot for the client of r, or writes
// the error response (429, or 503 once the server stopped) and returns
// false.
func (s *Server) acquireConnection(w http.ResponseWriter, r *http.Request) (release func(), ok bool) {
	release, err := s.conns.acquire(clientAddress(r), s.opts.MaxConnectionsPerAddress)
	if err == nil && s.stopped.Err() != nil {
		release()
		err = errShuttingDown
	}
	switch {
	case errors.Is(err, errShuttingDown):
		s.writeError(w, r, http.StatusServiceUnavailable, CodeShuttingDown, err)
		return nil, false
	case err != nil:
		w.Header().Set("Retry-After", "1")
		s.writeError(w, r, http.StatusTooManyRequests, CodeTooManyConnections, err)
		return nil, false
	}
	return release, true
}

// clientAddress is the address a connection limit applies to: the host of
// the request's RemoteAddr (a proxy's, behind one; forwarding headers are
// not trusted).
func clientAddress(r *http.Request) string {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

// isWebSocketUpgrade reports whether r asks to upgrade to a WebSocket.
func isWebSocketUpgrade(r *http.Request) bool {
	return headerHasToken(r.Header, "Connection", "upgrade") && headerHasToken(r.Header, "Upgrade", "websocket")
}

// headerHasToken reports whether a comma-separated header holds token,
// ignoring case.
func headerHasToken(h http.Header, key, token string) bool {
	for _, v := range h.Values(key) {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// mediaEventStream is the media type of Server-Sent Events.
const mediaEventStream = "text/event-stream"

// acceptsEventStream reports whether the client asks for Server-Sent
// Events: its Accept header names text/event-stream, and prefers it at
// least as much as the JSON media types it names.
func acceptsEventStream(accept []string) bool { return prefers(accept, mediaEventStream, true) }
