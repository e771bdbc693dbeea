package wsconn

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/google/go-cmp/cmp"
)

// recordConn records the writes and the write deadlines that reach it.
type recordConn struct {
	net.Conn
	writes    []string
	deadlines []time.Time
}

func (c *recordConn) Write(p []byte) (int, error) {
	c.writes = append(c.writes, string(p))
	return len(p), nil
}

func (c *recordConn) SetWriteDeadline(t time.Time) error {
	c.deadlines = append(c.deadlines, t)
	return nil
}

// TestFrameWriterDeadline: every write runs under a deadline, which moves
// only when less than half the timeout is left; a close frame's write is
// bounded by the close handshake's deadline when that comes first.
func TestFrameWriterDeadline(t *testing.T) {
	const timeout = time.Minute
	rc := &recordConn{}
	w := &frameWriter{conn: rc, timeout: timeout}
	before := time.Now()
	for range 3 {
		if err := w.write([]byte("a")); err != nil {
			t.Fatal(err)
		}
	}
	if len(rc.deadlines) != 1 || rc.deadlines[0].Before(before.Add(timeout)) {
		t.Fatalf("deadlines %v, want one, a minute after %v", rc.deadlines, before)
	}
	// As if most of the timeout had passed since.
	w.deadline = time.Now().Add(timeout / 4)
	before = time.Now()
	if err := w.write([]byte("b")); err != nil {
		t.Fatal(err)
	}
	if len(rc.deadlines) != 2 || rc.deadlines[1].Before(before.Add(timeout)) {
		t.Fatalf("deadlines %v, want a second one, a minute after %v", rc.deadlines, before)
	}
	closeBy := time.Now().Add(time.Second)
	if err := w.writeClose(ws.NewCloseFrameBody(ws.StatusNormalClosure, ""), closeBy); err != nil {
		t.Fatal(err)
	}
	if len(rc.deadlines) != 3 || !rc.deadlines[2].Equal(closeBy) {
		t.Errorf("deadlines %v, want a third one at %v", rc.deadlines, closeBy)
	}
}

// frame is a frame as a client reads it.
type frame struct {
	Op      ws.OpCode
	Payload string
}

// readFrames decodes b, whole unmasked final frames, with gobwas/ws.
func readFrames(t *testing.T, b []byte) []frame {
	t.Helper()
	var out []frame
	r := bytes.NewReader(b)
	for r.Len() > 0 {
		h, err := ws.ReadHeader(r)
		if err != nil {
			t.Fatalf("frame %d: %v", len(out), err)
		}
		if !h.Fin || h.Masked || h.Rsv != 0 {
			t.Fatalf("frame %d: %+v, want an unmasked final frame", len(out), h)
		}
		payload := make([]byte, h.Length)
		if _, err := io.ReadFull(r, payload); err != nil {
			t.Fatalf("frame %d: %v", len(out), err)
		}
		out = append(out, frame{h.OpCode, string(payload)})
	}
	return out
}

// TestAppendFrame: the frames decode, with gobwas/ws, to the messages, at
// every length encoding (7-bit, 16-bit, 64-bit), and to the control frames.
func TestAppendFrame(t *testing.T) {
	var msgs []Message
	for _, n := range []int{0, 1, 125, 126, 65535, 65536, 70000} {
		msgs = append(msgs, Message{Head: []byte(strings.Repeat("h", n))})
		if n >= 2 {
			// head, body and tail: n bytes in all.
			msgs = append(msgs, Message{Head: []byte("{"), Body: []byte(strings.Repeat("b", n-2)), Tail: []byte("}")})
		}
	}
	var b []byte
	var want []frame
	for _, m := range msgs {
		b = appendFrame(b, ws.OpText, m)
		want = append(want, frame{ws.OpText, string(m.Head) + string(m.Body) + string(m.Tail)})
	}
	closeBody := string(ws.NewCloseFrameBody(4400, "bye"))
	b = appendFrame(b, ws.OpPong, Message{Head: []byte("ping 1")})
	b = appendFrame(b, ws.OpClose, Message{Head: []byte(closeBody)})
	want = append(want, frame{ws.OpPong, "ping 1"}, frame{ws.OpClose, closeBody})
	if diff := cmp.Diff(want, readFrames(t, b)); diff != "" {
		t.Errorf("frames (-want +got):\n%s", diff)
	}
}

// gatedConn is a connection whose writes each wait for a token on release;
// entered gets the bytes of each write as it starts.
type gatedConn struct {
	net.Conn
	entered   chan []byte
	release   chan struct{}
	closed    chan struct{}
	closeOnce sync.Once
}

func newGatedConn() *gatedConn {
	return &gatedConn{entered: make(chan []byte, 16), release: make(chan struct{}), closed: make(chan struct{})}
}

func (c *gatedConn) Write(p []byte) (int, error) {
	c.entered <- bytes.Clone(p)
	select {
	case <-c.release:
		return len(p), nil
	case <-c.closed:
		return 0, net.ErrClosed
	}
}

func (c *gatedConn) SetWriteDeadline(time.Time) error { return nil }

func (c *gatedConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}

// TestWriterOwnsTheSocket: the writer is the only one that writes. A pong
// queued while it is busy with a batch goes out in its next write, ahead of
// the messages that waited meanwhile; a close requested while it is busy
// goes out next, ahead of the messages that wait, and nothing follows the
// close frame. Then the writer waits for the reader (the client's close
// frame) and closes the socket.
func TestWriterOwnsTheSocket(t *testing.T) {
	conn := newGatedConn()
	c := New(conn, bufio.NewReader(bytes.NewReader(nil)), "", Options{})
	var writer sync.WaitGroup
	writer.Go(func() {
		if err := c.Start(t.Context()); err != nil {
			t.Error(err)
		}
	})
	queue := func(text string) bool { return c.Send(c.Context(), Message{Head: []byte(text)}) }
	next := func() []frame {
		t.Helper()
		select {
		case b := <-conn.entered:
			return readFrames(t, b)
		case <-time.After(10 * time.Second):
			t.Fatal("no write")
			return nil
		}
	}

	queue("a")
	if diff := cmp.Diff([]frame{{ws.OpText, "a"}}, next()); diff != "" {
		t.Fatalf("first write (-want +got):\n%s", diff)
	}
	// The writer is busy with that batch.
	queue("b")
	c.out.putPong([]byte("ping 1"))
	queue("c")
	c.out.putPong([]byte("ping 2"))
	conn.release <- struct{}{}
	if diff := cmp.Diff([]frame{{ws.OpPong, "ping 1"}, {ws.OpPong, "ping 2"}, {ws.OpText, "b"}, {ws.OpText, "c"}}, next()); diff != "" {
		t.Fatalf("second write (-want +got):\n%s", diff)
	}
	// Busy again: a message, a pong, then a close.
	queue("d")
	c.out.putPong([]byte("ping 3"))
	c.Close(4400, "bye")
	if queue("e") {
		t.Error("a message was queued after the close was requested")
	}
	conn.release <- struct{}{}
	if diff := cmp.Diff([]frame{{ws.OpClose, string(ws.NewCloseFrameBody(4400, "bye"))}}, next()); diff != "" {
		t.Fatalf("third write (-want +got):\n%s", diff)
	}
	conn.release <- struct{}{}
	select {
	case <-conn.closed:
		t.Fatal("the socket was closed before the client answered the close frame")
	case <-time.After(50 * time.Millisecond):
	}
	close(c.readDone) // as the reader does once it read the client's close frame
	writer.Wait()
	select {
	case <-conn.closed:
	default:
		t.Error("the writer ended without closing the socket")
	}
	select {
	case b := <-conn.entered:
		t.Errorf("a write after the close frame: %v", readFrames(t, b))
	default:
	}
}

// TestWriterPongFlood: pongs never wait for room, and no more than
// maxPendingPongs wait; beyond them, the latest ping's replaces the last.
func TestWriterPongFlood(t *testing.T) {
	o := newOutbox(DefaultOutboxSize)
	for i := range 100 {
		o.putPong(fmt.Appendf(nil, "%d", i))
	}
	pongs, _ := o.take(nil, nil)
	var got []string
	for _, p := range pongs {
		got = append(got, string(p))
	}
	if diff := cmp.Diff([]string{"0", "1", "2", "3", "4", "5", "6", "99"}, got); diff != "" {
		t.Errorf("pongs (-want +got):\n%s", diff)
	}
}

// TestWriteBatches: a connection's writer sends a batch in one write, or
// one large batch in writes of about maxFrameBytes; pongs go first, in the
// first write; the frames decode to the pongs and the messages either way.
func TestWriteBatches(t *testing.T) {
	msg := func(size int) Message { return Message{Head: []byte(strings.Repeat("m", size))} }
	for _, tc := range []struct {
		name   string
		pongs  [][]byte
		batch  []Message
		writes int
	}{
		{name: "small", batch: []Message{msg(10), msg(20), msg(30)}, writes: 1},
		{name: "large", batch: []Message{msg(maxFrameBytes * 3 / 4), msg(maxFrameBytes * 3 / 4), msg(10)}, writes: 2},
		{name: "one larger message", batch: []Message{msg(10), msg(maxFrameBytes * 2), msg(10)}, writes: 2},
		{name: "pongs and messages", pongs: [][]byte{[]byte("p1"), nil}, batch: []Message{msg(10), msg(20)}, writes: 1},
		{name: "pongs alone", pongs: [][]byte{[]byte("p1")}, writes: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := &recordConn{}
			c := &Conn{fw: frameWriter{conn: rc, timeout: time.Minute}}
			if err := c.write(tc.pongs, tc.batch); err != nil {
				t.Fatal(err)
			}
			if len(rc.writes) != tc.writes {
				t.Errorf("%d writes, want %d", len(rc.writes), tc.writes)
			}
			var want []frame
			for _, p := range tc.pongs {
				want = append(want, frame{ws.OpPong, string(p)})
			}
			for _, m := range tc.batch {
				want = append(want, frame{ws.OpText, string(m.Head)})
			}
			if diff := cmp.Diff(want, readFrames(t, []byte(strings.Join(rc.writes, "")))); diff != "" {
				t.Errorf("frames (-want +got):\n%s", diff)
			}
		})
	}
}
