package transport

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"
	"github.com/google/go-cmp/cmp"

	"github.com/fleetcache/fleetcache/pkg/fanout"
	"github.com/fleetcache/fleetcache/pkg/graphql"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index"
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

// TestFrameConnClose: once the library wrote a close frame, no data frame
// follows it; its other frames do not stop them.
func TestFrameConnClose(t *testing.T) {
	rc := &recordConn{}
	c := &frameConn{Conn: rc, timeout: time.Minute}
	pong := string([]byte{0x8a, 0})
	closeFrame := string([]byte{0x88, 2, 0x03, 0xe8}) // 1000
	if _, err := c.Write([]byte(pong)); err != nil {
		t.Fatal(err)
	}
	if err := c.writeFrames([]byte("a")); err != nil {
		t.Fatalf("writeFrames after a pong: %v", err)
	}
	if _, err := c.Write([]byte(closeFrame)); err != nil {
		t.Fatal(err)
	}
	if err := c.writeFrames([]byte("b")); !errors.Is(err, net.ErrClosed) {
		t.Errorf("writeFrames after a close frame: %v, want net.ErrClosed", err)
	}
	if diff := cmp.Diff([]string{pong, "a", closeFrame}, rc.writes); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
}

// TestFrameConnDeadline: every write runs under a deadline, which moves
// only when less than half the timeout is left.
func TestFrameConnDeadline(t *testing.T) {
	const timeout = time.Minute
	rc := &recordConn{}
	c := &frameConn{Conn: rc, timeout: timeout}
	before := time.Now()
	for range 3 {
		if err := c.writeFrames([]byte("a")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Write([]byte{0x8a, 0}); err != nil {
		t.Fatal(err)
	}
	if len(rc.deadlines) != 1 || rc.deadlines[0].Before(before.Add(timeout)) {
		t.Fatalf("deadlines %v, want one, a minute after %v", rc.deadlines, before)
	}
	// As if most of the timeout had passed since.
	c.deadline = time.Now().Add(timeout / 4)
	before = time.Now()
	if err := c.writeFrames([]byte("b")); err != nil {
		t.Fatal(err)
	}
	if len(rc.deadlines) != 2 || rc.deadlines[1].Before(before.Add(timeout)) {
		t.Errorf("deadlines %v, want a second one, a minute after %v", rc.deadlines, before)
	}
}

// TestAppendTextFrame: the frames decode, with gobwas/ws, to the messages,
// at every length encoding (7-bit, 16-bit, 64-bit).
func TestAppendTextFrame(t *testing.T) {
	var msgs []wsEncoded
	for _, n := range []int{0, 1, 125, 126, 65535, 65536, 70000} {
		msgs = append(msgs, wsEncoded{head: []byte(strings.Repeat("h", n))})
		if n >= 2 {
			// head, body and the closing brace: n bytes in all.
			msgs = append(msgs, wsEncoded{head: []byte("{"), body: []byte(strings.Repeat("b", n-2))})
		}
	}
	var b []byte
	for _, m := range msgs {
		b = appendTextFrame(b, m)
	}
	r := bytes.NewReader(b)
	for i, m := range msgs {
		h, err := ws.ReadHeader(r)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		payload := make([]byte, h.Length)
		if _, err := io.ReadFull(r, payload); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		want := string(m.head)
		if m.body != nil {
			want += string(m.body) + "}"
		}
		if !h.Fin || h.OpCode != ws.OpText || h.Masked || h.Rsv != 0 || string(payload) != want {
			t.Errorf("frame %d: %+v, %d bytes; want an unmasked final text frame of %d bytes", i, h, len(payload), len(want))
		}
	}
	if r.Len() != 0 {
		t.Errorf("%d bytes left after the frames", r.Len())
	}
}

// TestWebSocketFramesDuringStream: while a subscription's events stream,
// the client's pings are answered (pongs from the library, on the
// connection the writer writes its batches to) and every event arrives
// intact, in order. A close from the client is answered with a close
// frame, after which no frame comes.
func TestWebSocketFramesDuringStream(t *testing.T) {
	ix := index.New(index.Options{})
	s := startServer(t, ix, health.NewTracker(ix, health.Options{}), Options{}, graphql.Options{Fanout: fanout.Options{Buffer: 100000}})
	c := dialLean(t, serve(t, s))
	c.subscribe("1", eventsQuery, nil)
	waitFor(t, "the subscription", func() bool { return s.hub.Subscribers() == 1 })
	const n, pings = 2000, 20
	var writer sync.WaitGroup
	writer.Go(func() {
		for i := range n {
			ix.Upsert(version(t, "c1", "ns", fmt.Sprintf("cm-%d", i), "1", nil))
		}
	})
	defer writer.Wait()
	var sent []string
	for i := 0; i < n; {
		if i%(n/pings) == 0 && len(sent) < pings {
			p := fmt.Sprintf("ping %d", len(sent))
			if err := wsutil.WriteClientMessage(c.conn, ws.OpPing, []byte(p)); err != nil {
				t.Fatal(err)
			}
			sent = append(sent, p)
		}
		msg, err := c.read()
		if err != nil {
			t.Fatalf("after %d events: %v", i, err)
		}
		var m wsIn
		var p payload
		if err := json.Unmarshal(msg, &m); err != nil || m.Type != msgNext || json.Unmarshal(m.Payload, &p) != nil {
			t.Fatalf("after %d events: got %s, want a next message", i, msg)
		}
		if p.Extensions.Heartbeat {
			continue
		}
		if e, _ := p.event(t); e != fmt.Sprintf("ADDED cm-%d", i) {
			t.Fatalf("event %d: %s, want ADDED cm-%d", i, e, i)
		}
		i++
	}
	// Pongs come before the events that followed their ping; the last
	// ones may follow the last event.
	for len(c.pongs) < len(sent) {
		if _, _, err := c.readFrame(); err != nil {
			t.Fatalf("waiting for %d pongs: %v", len(sent)-len(c.pongs), err)
		}
	}
	if diff := cmp.Diff(sent, c.pongs); diff != "" {
		t.Errorf("pongs (-want +got):\n%s", diff)
	}

	// A close while the events stream on.
	writer.Go(func() {
		for i := range n {
			ix.Upsert(version(t, "c1", "ns", fmt.Sprintf("more-%d", i), "1", nil))
		}
	})
	if err := wsutil.WriteClientMessage(c.conn, ws.OpClose, ws.NewCloseFrameBody(ws.StatusNormalClosure, "")); err != nil {
		t.Fatal(err)
	}
	for {
		_, err := c.read()
		if errors.Is(err, errCloseFrame) {
			break
		}
		if err != nil {
			t.Fatalf("before the close frame: %v", err)
		}
	}
	if h, err := ws.ReadHeader(c.r); err == nil {
		t.Errorf("a frame after the close frame: %+v", h)
	}
}

// TestWriteBatches: a connection's writer sends a batch in one write, or
// one large batch in writes of about maxFrameBytes; the frames decode to
// the messages either way.
func TestWriteBatches(t *testing.T) {
	msg := func(size int) wsEncoded { return wsEncoded{head: []byte(strings.Repeat("m", size))} }
	for _, tc := range []struct {
		name   string
		batch  []wsEncoded
		writes int
	}{
		{"small", []wsEncoded{msg(10), msg(20), msg(30)}, 1},
		{"large", []wsEncoded{msg(maxFrameBytes * 3 / 4), msg(maxFrameBytes * 3 / 4), msg(10)}, 2},
		{"one larger message", []wsEncoded{msg(10), msg(maxFrameBytes * 2), msg(10)}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := &recordConn{}
			wc := &wsConn{conn: &frameConn{Conn: rc, timeout: time.Minute}}
			if err := wc.write(tc.batch); err != nil {
				t.Fatal(err)
			}
			if len(rc.writes) != tc.writes {
				t.Errorf("%d writes, want %d", len(rc.writes), tc.writes)
			}
			r := strings.NewReader(strings.Join(rc.writes, ""))
			for i, m := range tc.batch {
				h, err := ws.ReadHeader(r)
				if err != nil {
					t.Fatalf("frame %d: %v", i, err)
				}
				payload := make([]byte, h.Length)
				if _, err := io.ReadFull(r, payload); err != nil || string(payload) != string(m.head) {
					t.Fatalf("frame %d: %d bytes, %v; want %d bytes", i, len(payload), err, len(m.head))
				}
			}
			if r.Len() != 0 {
				t.Errorf("%d bytes after the frames", r.Len())
			}
		})
	}
}
