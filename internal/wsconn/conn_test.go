package wsconn

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/google/go-cmp/cmp"
)

// testTimeout bounds every wait of these tests.
const testTimeout = 10 * time.Second

// peer is the client end of a connection under test.
type peer struct {
	t    *testing.T
	conn net.Conn
}

// write sends a masked frame, as a client does.
func (p *peer) write(op ws.OpCode, fin bool, payload string) {
	p.t.Helper()
	f := ws.MaskFrameInPlace(ws.NewFrame(op, fin, []byte(payload)))
	if err := ws.WriteFrame(p.conn, f); err != nil {
		p.t.Fatal(err)
	}
}

// read reads the server's next frame.
func (p *peer) read() frame {
	p.t.Helper()
	if err := p.conn.SetReadDeadline(time.Now().Add(testTimeout)); err != nil {
		p.t.Fatal(err)
	}
	h, err := ws.ReadHeader(p.conn)
	if err != nil {
		p.t.Fatal(err)
	}
	b := make([]byte, h.Length)
	if _, err := io.ReadFull(p.conn, b); err != nil {
		p.t.Fatal(err)
	}
	return frame{h.OpCode, string(b)}
}

// expectEOF checks that the server closed the socket.
func (p *peer) expectEOF() {
	p.t.Helper()
	if err := p.conn.SetReadDeadline(time.Now().Add(testTimeout)); err != nil {
		p.t.Fatal(err)
	}
	if h, err := ws.ReadHeader(p.conn); !errors.Is(err, io.EOF) {
		p.t.Errorf("got %+v, %v; want EOF", h, err)
	}
}

// socketPair returns the two ends of a loopback TCP connection, closed
// when the test ends.
func socketPair(t *testing.T) (server, client net.Conn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	client, err = net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	server, err = l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = server.Close() })
	return server, client
}

// serve returns a Conn over a loopback TCP connection, its writer running
// until the test ends, and the client end.
func serve(t *testing.T, opts Options) (*Conn, *peer) {
	t.Helper()
	server, client := socketPair(t)
	c := New(server, nil, "test", opts)
	ctx, cancel := context.WithCancel(context.Background())
	var writer sync.WaitGroup
	writer.Go(func() {
		if err := c.Start(ctx); err != nil {
			t.Errorf("Start: %v", err)
		}
	})
	t.Cleanup(func() {
		cancel()
		writer.Wait()
	})
	return c, &peer{t: t, conn: client}
}

// readMessages calls ReadMessage until it fails, in a goroutine the test
// waits for; the messages and the error arrive on the channel.
func readMessages(t *testing.T, c *Conn) <-chan readResult {
	out := make(chan readResult, 16)
	var reader sync.WaitGroup
	reader.Go(func() {
		defer close(out)
		for {
			b, err := c.ReadMessage()
			out <- readResult{string(b), err}
			if err != nil && !errors.Is(err, ErrInvalidUTF8) {
				return
			}
		}
	})
	t.Cleanup(func() {
		c.Shutdown()
		reader.Wait()
	})
	return out
}

type readResult struct {
	msg string
	err error
}

func next(t *testing.T, results <-chan readResult) readResult {
	t.Helper()
	select {
	case r := <-results:
		return r
	case <-time.After(testTimeout):
		t.Fatal("no message read")
		return readResult{}
	}
}

// TestConnMessages: fragments are assembled, a ping between them answered
// first; binary messages are messages; text that is not UTF-8 is reported
// and skipped; the writer sends what is queued, head, body and tail in one
// frame, and the heartbeat once started.
func TestConnMessages(t *testing.T) {
	c, p := serve(t, Options{Heartbeat: []byte("beat"), HeartbeatInterval: 20 * time.Millisecond})
	results := readMessages(t, c)
	if c.Protocol() != "test" {
		t.Errorf("protocol %q", c.Protocol())
	}

	p.write(ws.OpText, false, "hel")
	p.write(ws.OpPing, true, "between")
	p.write(ws.OpContinuation, true, "lo")
	if got := p.read(); got != (frame{ws.OpPong, "between"}) {
		t.Errorf("got %+v, want the pong", got)
	}
	if r := next(t, results); r.msg != "hello" || r.err != nil {
		t.Errorf("got %q, %v; want hello", r.msg, r.err)
	}
	p.write(ws.OpBinary, true, "bin")
	if r := next(t, results); r.msg != "bin" || r.err != nil {
		t.Errorf("got %q, %v; want bin", r.msg, r.err)
	}
	p.write(ws.OpText, true, "\xff")
	if r := next(t, results); !errors.Is(r.err, ErrInvalidUTF8) {
		t.Errorf("got %q, %v; want ErrInvalidUTF8", r.msg, r.err)
	}
	p.write(ws.OpText, true, "after")
	if r := next(t, results); r.msg != "after" || r.err != nil {
		t.Errorf("got %q, %v; want after", r.msg, r.err)
	}

	if !c.Send(t.Context(), Message{Head: []byte("{"), Body: []byte(`"a":1`), Tail: []byte("}")}) {
		t.Fatal("Send failed")
	}
	if got := p.read(); got != (frame{ws.OpText, `{"a":1}`}) {
		t.Errorf("got %+v", got)
	}
	c.StartHeartbeat()
	if got := p.read(); got != (frame{ws.OpText, "beat"}) {
		t.Errorf("got %+v, want the heartbeat", got)
	}
}

// TestConnCloseHandshake: a close requested by the server, or by the
// peer's close frame, or by a message over the limit, is one close frame,
// after which nothing is written; the server closes the socket once the
// peer answered (or, for a frame it could not read, the peer hung up).
func TestConnCloseHandshake(t *testing.T) {
	for _, tc := range []struct {
		name string
		// act starts the close.
		act  func(c *Conn, p *peer)
		want string // the close frame's payload
		// echo: the peer answers the close frame.
		echo bool
		// err is a part of ReadMessage's last error.
		err string
	}{
		{
			name: "server",
			act:  func(c *Conn, _ *peer) { c.Close(4400, strings.Repeat("long reason ", 20)) },
			want: string(ws.NewCloseFrameBody(4400, strings.Repeat("long reason ", 10)[:120]+"…")),
			echo: true, err: "EOF",
		},
		{
			name: "peer",
			act: func(_ *Conn, p *peer) {
				p.write(ws.OpClose, true, string(ws.NewCloseFrameBody(ws.StatusNormalClosure, "bye")))
			},
			want: string(ws.NewCloseFrameBody(ws.StatusNormalClosure, "bye")),
			err:  "EOF",
		},
		{
			name: "peer with an invalid code",
			act:  func(_ *Conn, p *peer) { p.write(ws.OpClose, true, string(ws.NewCloseFrameBody(1005, ""))) },
			want: string(ws.NewCloseFrameBody(ws.StatusProtocolError, "invalid close frame: status code 1005")),
			err:  "EOF",
		},
		{
			name: "message over the limit",
			act:  func(_ *Conn, p *peer) { p.write(ws.OpText, true, strings.Repeat("x", 201)) },
			want: string(ws.NewCloseFrameBody(ws.StatusMessageTooBig, "message is larger than the limit of 200 bytes")),
			err:  "message too large",
		},
		{
			name: "unmasked frame",
			act: func(_ *Conn, p *peer) {
				if err := ws.WriteFrame(p.conn, ws.NewTextFrame([]byte("x"))); err != nil {
					t.Fatal(err)
				}
			},
			want: string(ws.NewCloseFrameBody(ws.StatusProtocolError, "frames from client to server must be masked")),
			err:  "must be masked",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, p := serve(t, Options{MaxMessageSize: 200})
			results := readMessages(t, c)
			tc.act(c, p)
			if got := p.read(); got != (frame{ws.OpClose, tc.want}) {
				t.Errorf("got %+v, want close %q", got, tc.want)
			}
			select {
			case <-c.Context().Done():
			case <-time.After(testTimeout):
				t.Error("Context did not end")
			}
			if c.Send(t.Context(), Message{Head: []byte("late")}) {
				t.Error("Send after the close succeeded")
			}
			if tc.echo {
				p.write(ws.OpClose, true, tc.want)
			} else if tc.err != "EOF" {
				_ = p.conn.(*net.TCPConn).CloseWrite() // the peer hangs up
			}
			p.expectEOF()
			if r := next(t, results); r.err == nil || !strings.Contains(r.err.Error(), tc.err) {
				t.Errorf("ReadMessage: %q, %v; want an error with %q", r.msg, r.err, tc.err)
			}
		})
	}
}

// TestConnCloseTimeout: a peer that never answers the close frame is cut
// after Options.CloseTimeout.
func TestConnCloseTimeout(t *testing.T) {
	c, p := serve(t, Options{CloseTimeout: 100 * time.Millisecond})
	readMessages(t, c)
	start := time.Now()
	c.Close(ws.StatusGoingAway, "")
	if got := p.read(); got.Op != ws.OpClose {
		t.Fatalf("got %+v, want a close frame", got)
	}
	p.expectEOF()
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Errorf("cut after %v, before the timeout", d)
	}
}

// TestConnShutdown: Shutdown and the end of Start's context end the
// connection at once, without a close frame.
func TestConnShutdown(t *testing.T) {
	for _, name := range []string{"Shutdown", "context"} {
		t.Run(name, func(t *testing.T) {
			server, client := socketPair(t)
			c := New(server, nil, "", Options{})
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- c.Start(ctx) }()
			if name == "Shutdown" {
				c.Shutdown()
			} else {
				cancel()
			}
			select {
			case err := <-done:
				if err != nil {
					t.Error(err)
				}
			case <-time.After(testTimeout):
				t.Fatal("Start did not return")
			}
			p := &peer{t: t, conn: client}
			p.expectEOF()
			if _, err := c.ReadMessage(); err == nil {
				t.Error("ReadMessage after the end succeeded")
			}
			if diff := cmp.Diff(context.Canceled, c.Context().Err(), cmpErrors); diff != "" {
				t.Errorf("Context: %s", diff)
			}
		})
	}
}

var cmpErrors = cmp.Comparer(func(a, b error) bool { return errors.Is(a, b) || errors.Is(b, a) })
