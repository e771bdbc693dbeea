package wsconn

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"
	"k8s.io/klog/v2"
)

// Defaults of Options.
const (
	// DefaultWriteTimeout is Options.WriteTimeout's default.
	DefaultWriteTimeout = 10 * time.Second
	// DefaultMaxMessageSize is Options.MaxMessageSize's default.
	DefaultMaxMessageSize = 1 << 20
	// DefaultCloseTimeout is Options.CloseTimeout's default.
	DefaultCloseTimeout = 5 * time.Second
	// DefaultOutboxSize is Options.OutboxSize's default.
	DefaultOutboxSize = 64
)

// Options configure a Conn. Zero values get the defaults.
type Options struct {
	// WriteTimeout bounds each write to the socket: a write that waits
	// longer ends the connection, without a close frame. (The deadline
	// moves only when less than half of it is left, so a write may get
	// between half of WriteTimeout and all of it.) Default
	// DefaultWriteTimeout.
	WriteTimeout time.Duration
	// MaxMessageSize is the largest message read from the peer, in bytes:
	// a message of exactly the limit passes, a larger one closes the
	// connection with 1009. Default DefaultMaxMessageSize.
	MaxMessageSize int64
	// CloseTimeout bounds a close handshake: from the start of the close
	// frame's write until the connection is closed, whether the peer
	// answered or not. Default DefaultCloseTimeout.
	CloseTimeout time.Duration
	// OutboxSize is how many messages may wait for the writer; Send waits
	// while they do. Default DefaultOutboxSize.
	OutboxSize int
	// Heartbeat is a text message the writer sends every
	// HeartbeatInterval once StartHeartbeat was called. Default empty.
	Heartbeat []byte
	// HeartbeatInterval is how often the writer sends Heartbeat; 0, the
	// default, sends none.
	HeartbeatInterval time.Duration
	// Logger logs the connection's closes and failures, at V(4). Default
	// klog.Background().
	Logger klog.Logger
}

func (o Options) withDefaults() Options {
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.MaxMessageSize <= 0 {
		o.MaxMessageSize = DefaultMaxMessageSize
	}
	if o.CloseTimeout <= 0 {
		o.CloseTimeout = DefaultCloseTimeout
	}
	if o.OutboxSize <= 0 {
		o.OutboxSize = DefaultOutboxSize
	}
	if o.Logger.GetSink() == nil {
		o.Logger = klog.Background()
	}
	return o
}

// Message is a text message for the writer: Head, Body and Tail, one after
// the other, in one frame. Splitting it lets a message share a payload
// encoded once for many connections (Body) without copying it; the writer
// never modifies them.
type Message struct{ Head, Body, Tail []byte }

func (m Message) len() int { return len(m.Head) + len(m.Body) + len(m.Tail) }

// ErrInvalidUTF8 is what ReadMessage returns, wrapped, for a text message
// that is not valid UTF-8: the message was discarded, and reading may go on.
var ErrInvalidUTF8 = wsutil.ErrInvalidUTF8

// errCloseReceived ends the reader once it has read the peer's close
// frame.
var errCloseReceived = errors.New("close frame received")

// Conn is the server side of a WebSocket connection (RFC 6455) after the
// handshake. Its goroutines: a reader (whoever calls ReadMessage), which
// never writes, and the writer (Start), the only one that writes to the
// socket: the messages queued by Send, the pongs that answer the peer's
// pings, the heartbeat, and the close frame of the close handshake.
type Conn struct {
	opts     Options
	protocol string
	// conn is the hijacked connection. The reader reads it through br,
	// which may hold the peer's first frames; the writer writes it
	// through fw.
	conn net.Conn
	br   *bufio.Reader
	fw   frameWriter
	rd   wsutil.Reader

	// ctx ends when a close is requested or the connection is shut down.
	ctx    context.Context
	cancel context.CancelFunc
	// stopSend is ctx.Done(), read once.
	stopSend <-chan struct{}
	// done is closed by Shutdown.
	done     chan struct{}
	doneOnce sync.Once

	// out holds the messages and pongs for the writer.
	out *outbox
	// closing is closed when a close is requested; closeCode and
	// closeBody (the close frame's payload) say how.
	closing   chan struct{}
	closeOnce sync.Once
	closeCode ws.StatusCode
	closeBody []byte
	// readDone is closed when the reader has ended: it read the peer's
	// close frame, or it cannot read any more.
	readDone chan struct{}
	// heartbeat is set by StartHeartbeat.
	heartbeat atomic.Bool
}

// New returns the connection over conn, which the handshake left to br
// for reading (nil: read conn itself). It does not run until Start.
func New(conn net.Conn, br *bufio.Reader, protocol string, opts Options) *Conn {
	opts = opts.withDefaults()
	if br == nil {
		br = bufio.NewReader(conn)
	}
	c := &Conn{
		opts: opts, protocol: protocol, conn: conn, br: br,
		fw:       frameWriter{conn: conn, timeout: opts.WriteTimeout},
		done:     make(chan struct{}),
		out:      newOutbox(opts.OutboxSize),
		closing:  make(chan struct{}),
		readDone: make(chan struct{}),
	}
	c.rd = wsutil.Reader{
		Source: br,
		// Masked frames, no RSV bits, no continuation out of place.
		State:     ws.StateServerSide,
		CheckUTF8: true,
		// A message of exactly the limit passes; a larger one fails
		// before it is read.
		MaxMessageSize: opts.MaxMessageSize,
		OnIntermediate: c.control,
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.stopSend = c.ctx.Done()
	return c
}

// Upgrade completes the WebSocket handshake of r, offering protocol as the
// subprotocol, and returns the connection, not yet running; the client may
// not have offered protocol (see Conn.Protocol). On an error, Upgrade has
// answered the request (400, 405, 426, 505). Headers set on w (Vary, CORS)
// go with the response.
func Upgrade(w http.ResponseWriter, r *http.Request, protocol string, opts Options) (*Conn, error) {
	opts = opts.withDefaults()
	up := ws.HTTPUpgrader{
		Timeout:  opts.WriteTimeout,
		Header:   w.Header(),
		Protocol: func(p string) bool { return p == protocol },
		// No extension is negotiated: no compression, so no frame has
		// the RSV1 bit, and the reader refuses frames that do.
	}
	conn, rw, hs, err := up.Upgrade(r, w)
	if err != nil {
		// Upgrade answered the request, on the hijacked connection when
		// it got that far.
		if conn != nil {
			_ = conn.Close()
		}
		return nil, fmt.Errorf("websocket handshake: %w", err)
	}
	// rw.Reader may hold the client's first frames; its writer, unused,
	// is dropped.
	return New(conn, rw.Reader, hs.Protocol, opts), nil
}

// Protocol is the subprotocol the handshake agreed on, or "".
func (c *Conn) Protocol() string { return c.protocol }

// Context ends when a close is requested or the connection is shut down:
// the work that feeds the connection should stop then.
func (c *Conn) Context() context.Context { return c.ctx }

// Send queues m for the writer, waiting while Options.OutboxSize messages
// wait; false if ctx ended, or a close was requested, first. Any goroutine
// may call it.
func (c *Conn) Send(ctx context.Context, m Message) bool { return c.out.put(ctx, c.stopSend, m) }

// StartHeartbeat makes the writer send Options.Heartbeat every
// Options.HeartbeatInterval from now on.
func (c *Conn) StartHeartbeat() { c.heartbeat.Store(true) }

// Close asks the writer to close the connection with code and reason
// (truncated to fit a control frame): the close handshake. The first
// request wins; Context ends. Any goroutine may call it.
func (c *Conn) Close(code ws.StatusCode, reason string) {
	reason = truncateReason(reason)
	c.closeWith(code, reason, ws.NewCloseFrameBody(code, reason))
}

// closeWith requests a close frame with payload body (code, reason); the
// first request wins.
func (c *Conn) closeWith(code ws.StatusCode, reason string, body []byte) {
	c.closeOnce.Do(func() {
		c.opts.Logger.V(4).Info("Closing WebSocket", "code", int(code), "reason", reason)
		c.closeCode, c.closeBody = code, body
		c.cancel()
		close(c.closing)
	})
}

// closeRequested reports whether a close was requested.
func (c *Conn) closeRequested() bool { return isClosed(c.closing) }

// Shutdown ends the connection at once, without a close frame: Context,
// and the socket, which cuts a read or a write that waits. Any goroutine
// may call it, more than once.
func (c *Conn) Shutdown() {
	c.cancel()
	c.doneOnce.Do(func() { close(c.done) })
	_ = c.conn.Close()
}

// isShutdown reports whether Shutdown was called.
func (c *Conn) isShutdown() bool { return isClosed(c.done) }

// isClosed reports whether ch is closed, without waiting.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// truncateReason shortens a WebSocket close reason to the 123 bytes a close
// frame holds, on a UTF-8 boundary.
func truncateReason(reason string) string {
	const limit = 123
	if len(reason) <= limit {
		return reason
	}
	cut := limit - len("…")
	for cut > 0 && !utf8RuneStart(reason[cut]) {
		cut--
	}
	return reason[:cut] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// ReadMessage returns the next text or binary message of the peer, after
// acting on the control frames before it: a ping's pong is queued for the
// writer, a close frame is answered by the writer. Only one goroutine, the
// reader, calls it. Once a close is requested, it discards the peer's
// messages until the peer's close frame, which the close handshake waits
// for.
//
// An error wrapping ErrInvalidUTF8 says that a text message was not valid
// UTF-8: it was discarded, and reading may go on. Any other error ends
// reading: io.EOF once the peer's close frame was read, or the error that
// made the connection unreadable. A frame that breaks RFC 6455 closes the
// connection with 1002 and a message over Options.MaxMessageSize with 1009;
// then what the peer sends is discarded, as it cannot be read as frames
// any more, until the peer or the close handshake's timeout ends the
// connection (closing at once could reset the connection before the peer
// has read the close frame). Other errors mean the connection is gone: it
// is shut down.
func (c *Conn) ReadMessage() ([]byte, error) {
	data, err := c.readMessage()
	if errors.Is(err, wsutil.ErrInvalidUTF8) {
		// An invalid message, read whole: what follows can be read.
		if err = c.rd.Discard(); err == nil {
			return nil, fmt.Errorf("read message: %w", ErrInvalidUTF8)
		}
	}
	if err != nil {
		err = c.readFailed(err)
		close(c.readDone)
		return nil, err
	}
	return data, nil
}

// readMessage returns the next message, after acting on the control frames
// before it (control). Once a close is requested, it discards messages.
func (c *Conn) readMessage() ([]byte, error) {
	for {
		h, err := c.rd.NextFrame()
		switch {
		case err != nil:
			return nil, err
		case h.OpCode.IsControl():
			if err := c.control(h, &c.rd); err != nil {
				return nil, err
			}
		case !c.closeRequested():
			return io.ReadAll(&c.rd)
		}
		if err := c.rd.Discard(); err != nil {
			return nil, err
		}
	}
}

// readFailed acts on the error that ended the reader (see ReadMessage) and
// returns what ReadMessage returns.
func (c *Conn) readFailed(err error) error {
	var perr ws.ProtocolError
	switch {
	case errors.Is(err, errCloseReceived):
		return io.EOF
	case errors.Is(err, wsutil.ErrMessageTooLarge), errors.Is(err, wsutil.ErrFrameTooLarge):
		c.Close(ws.StatusMessageTooBig, fmt.Sprintf("message is larger than the limit of %d bytes", c.opts.MaxMessageSize))
	case errors.As(err, &perr), errors.Is(err, ws.ErrHeaderLengthMSB), errors.Is(err, ws.ErrHeaderLengthUnexpected):
		c.Close(ws.StatusProtocolError, err.Error())
	default:
		if !c.isShutdown() && !errors.Is(err, io.EOF) {
			c.opts.Logger.V(4).Info("WebSocket read failed", "err", err)
		}
		c.Shutdown()
		return fmt.Errorf("read message: %w", err)
	}
	_, _ = io.Copy(io.Discard, c.br)
	return fmt.Errorf("read message: %w", err)
}

// control acts on one of the peer's control frames, h, whose payload
// body holds: a ping's pong is queued for the writer (with priority over
// the messages that wait) unless the connection is closing; a pong needs
// nothing; a close frame is answered, by the writer, with the close frame
// that echoes it, unless the server's own close came first, and ends the
// reader (errCloseReceived). The reader never writes.
func (c *Conn) control(h ws.Header, body io.Reader) error {
	var buf [ws.MaxControlFramePayloadSize]byte
	p := buf[:h.Length] // the reader checked the length
	if _, err := io.ReadFull(body, p); err != nil {
		return err
	}
	switch h.OpCode {
	case ws.OpPing:
		if !c.closeRequested() {
			c.out.putPong(p)
		}
	case ws.OpClose:
		code, err := parseClosePayload(p)
		if err != nil {
			c.Close(ws.StatusProtocolError, "invalid close frame: "+err.Error())
		} else {
			c.closeWith(code, "echo of the client's close", bytes.Clone(p))
		}
		return errCloseReceived
	}
	return nil
}

// Start runs the writer until the connection ends, then shuts it down. It
// writes the queued pongs and messages, the heartbeat, and the close frame
// once a close is requested (with priority over what waits); it writes
// nothing after the close frame. It returns once the close handshake is
// over (see closeSocket), ctx ended, Shutdown was called, the reader found
// the connection gone, or a write failed (its error).
func (c *Conn) Start(ctx context.Context) error {
	defer c.Shutdown()
	var heartbeat <-chan time.Time
	if c.opts.HeartbeatInterval > 0 {
		t := time.NewTicker(c.opts.HeartbeatInterval)
		defer t.Stop()
		heartbeat = t.C
	}
	beat := Message{Head: c.opts.Heartbeat}
	// Reused from one write to the next.
	var pongs [][]byte
	var batch []Message
	for {
		select {
		case <-c.closing:
			c.closeSocket(ctx)
			return nil
		default:
		}
		beating := false
		select {
		case <-c.closing:
			continue
		case <-c.readDone:
			if c.closeRequested() {
				continue // the peer's close frame: answer it
			}
			return nil // the connection is gone
		case <-ctx.Done():
			return nil
		case <-c.done:
			return nil
		case <-heartbeat:
			beating = c.heartbeat.Load()
		case <-c.out.ready:
		}
		pongs, batch = c.out.take(pongs, batch)
		if beating {
			batch = append(batch, beat)
		}
		if len(pongs) == 0 && len(batch) == 0 {
			continue // taken with an earlier signal
		}
		err := c.write(pongs, batch)
		// Keep no payload until the next write.
		clear(pongs)
		pongs = pongs[:0]
		clear(batch)
		batch = batch[:0]
		if err != nil {
			if c.isShutdown() || ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("write: %w", err)
		}
	}
}

// write writes pongs, then batch, each pong and each message a frame of its
// own, in one write, or in writes of about maxFrameBytes if they are
// larger, each bounded by Options.WriteTimeout. An error leaves the
// connection unusable.
func (c *Conn) write(pongs [][]byte, batch []Message) error {
	b := frameBuffers.Get().(*[]byte)
	defer putFrameBuffer(b)
	for _, p := range pongs {
		*b = appendFrame(*b, ws.OpPong, Message{Head: p})
	}
	for i, m := range batch {
		*b = appendFrame(*b, ws.OpText, m)
		if len(*b) < maxFrameBytes && i < len(batch)-1 {
			continue
		}
		if err := c.fw.write(*b); err != nil {
			return err
		}
		*b = (*b)[:0]
	}
	if len(*b) > 0 { // pongs alone
		return c.fw.write(*b)
	}
	return nil
}

// closeSocket writes the close frame that was requested, then waits for
// the reader to read the peer's close frame (or to find the connection
// gone), for Options.CloseTimeout at most, from the start of the write.
func (c *Conn) closeSocket(ctx context.Context) {
	deadline := time.Now().Add(c.opts.CloseTimeout)
	if err := c.fw.writeClose(c.closeBody, deadline); err != nil {
		if !c.isShutdown() && ctx.Err() == nil {
			c.opts.Logger.V(4).Info("WebSocket close frame not written", "code", int(c.closeCode), "err", err)
		}
		return
	}
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-c.readDone:
	case <-ctx.Done():
	case <-c.done:
	case <-t.C:
		c.opts.Logger.V(4).Info("WebSocket peer did not answer the close frame in time", "code", int(c.closeCode))
	}
}
