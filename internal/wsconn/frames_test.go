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
	"github.com/google/go-cmp/cmp/cmpopts"

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
	var msgs []wsEncoded
	for _, n := range []int{0, 1, 125, 126, 65535, 65536, 70000} {
		msgs = append(msgs, wsEncoded{head: []byte(strings.Repeat("h", n))})
		if n >= 2 {
			// head, body and the closing brace: n bytes in all.
			msgs = append(msgs, wsEncoded{head: []byte("{"), body: []byte(strings.Repeat("b", n-2))})
		}
	}
	var b []byte
	var want []frame
	for _, m := range msgs {
		b = appendFrame(b, ws.OpText, m)
		p := string(m.head)
		if m.body != nil {
			p += string(m.body) + "}"
		}
		want = append(want, frame{ws.OpText, p})
	}
	closeBody := string(ws.NewCloseFrameBody(4400, "bye"))
	b = appendFrame(b, ws.OpPong, wsEncoded{head: []byte("ping 1")})
	b = appendFrame(b, ws.OpClose, wsEncoded{head: []byte(closeBody)})
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
	f := newFixture(t)
	s := newServer(t, f.ix, f.tracker, Options{})
	conn := newGatedConn()
	wc := newWSConn(s.Server, conn, nil, t.Context(), s.opts.Logger)
	var writer sync.WaitGroup
	writer.Go(wc.writeLoop)
	queue := func(text string) bool { return wc.queue(wc.opsCtx, wsEncoded{head: []byte(text)}) }
	next := func() []frame {
		t.Helper()
		select {
		case b := <-conn.entered:
			return readFrames(t, b)
		case <-time.After(wsTimeout):
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
	wc.out.putPong([]byte("ping 1"))
	queue("c")
	wc.out.putPong([]byte("ping 2"))
	conn.release <- struct{}{}
	if diff := cmp.Diff([]frame{{ws.OpPong, "ping 1"}, {ws.OpPong, "ping 2"}, {ws.OpText, "b"}, {ws.OpText, "c"}}, next()); diff != "" {
		t.Fatalf("second write (-want +got):\n%s", diff)
	}
	// Busy again: a message, a pong, then a close.
	queue("d")
	wc.out.putPong([]byte("ping 3"))
	wc.requestClose(closeBadRequest, "bye")
	if queue("e") {
		t.Error("a message was queued after the close was requested")
	}
	conn.release <- struct{}{}
	if diff := cmp.Diff([]frame{{ws.OpClose, string(ws.NewCloseFrameBody(closeBadRequest, "bye"))}}, next()); diff != "" {
		t.Fatalf("third write (-want +got):\n%s", diff)
	}
	conn.release <- struct{}{}
	select {
	case <-conn.closed:
		t.Fatal("the socket was closed before the client answered the close frame")
	case <-time.After(50 * time.Millisecond):
	}
	close(wc.readDone) // as the reader does once it read the client's close frame
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
	o := newOutbox()
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

// TestWebSocketFramesDuringStream: while a subscription's events stream,
// the client's pings are answered (pongs from the writer, between its
// batches) and every event arrives intact, in order. A close from the
// client is answered with a close frame, after which no frame comes.
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
// one large batch in writes of about maxFrameBytes; pongs go first, in the
// first write; the frames decode to the pongs and the messages either way.
func TestWriteBatches(t *testing.T) {
	msg := func(size int) wsEncoded { return wsEncoded{head: []byte(strings.Repeat("m", size))} }
	for _, tc := range []struct {
		name   string
		pongs  [][]byte
		batch  []wsEncoded
		writes int
	}{
		{name: "small", batch: []wsEncoded{msg(10), msg(20), msg(30)}, writes: 1},
		{name: "large", batch: []wsEncoded{msg(maxFrameBytes * 3 / 4), msg(maxFrameBytes * 3 / 4), msg(10)}, writes: 2},
		{name: "one larger message", batch: []wsEncoded{msg(10), msg(maxFrameBytes * 2), msg(10)}, writes: 2},
		{name: "pongs and messages", pongs: [][]byte{[]byte("p1"), nil}, batch: []wsEncoded{msg(10), msg(20)}, writes: 1},
		{name: "pongs alone", pongs: [][]byte{[]byte("p1")}, writes: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := &recordConn{}
			wc := &wsConn{fw: frameWriter{conn: rc, timeout: time.Minute}}
			if err := wc.write(tc.pongs, tc.batch); err != nil {
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
				want = append(want, frame{ws.OpText, string(m.head)})
			}
			if diff := cmp.Diff(want, readFrames(t, []byte(strings.Join(rc.writes, "")))); diff != "" {
				t.Errorf("frames (-want +got):\n%s", diff)
			}
		})
	}
}

// clientFrame is a frame a test client sends: masked, unless unmasked.
type clientFrame struct {
	op       ws.OpCode
	fin      bool
	payload  string
	unmasked bool
	rsv      byte
}

// writeFrame sends f.
func (c *leanClient) writeFrame(f clientFrame) {
	c.tb.Helper()
	fr := ws.NewFrame(f.op, f.fin, []byte(f.payload))
	fr.Header.Rsv = f.rsv
	if !f.unmasked {
		fr = ws.MaskFrameInPlace(fr)
	}
	if err := ws.WriteFrame(c.conn, fr); err != nil {
		c.tb.Fatalf("write %+v: %v", fr.Header, err)
	}
}

// TestWebSocketClientFrames sends frames as a client may, or must not,
// and reads the server's frames raw: fragments are assembled, control
// frames answered (a ping between fragments too), a close frame echoed;
// frames that break RFC 6455 close the connection with 1002, a message
// over the limit, even in fragments, with 1009, and text that is not UTF-8
// with 4400, as any invalid message. Once the client answers the server's
// close frame, or the server echoed the client's, the server closes the
// connection (but after a frame it could not read, when the client closes
// it or after the close handshake's timeout).
func TestWebSocketClientFrames(t *testing.T) {
	f := newFixture(t)
	const limit = 1024
	s := newServer(t, f.ix, f.tracker, Options{MaxBodyBytes: limit})
	endpoint := serve(t, s)
	closeFrame := func(code ws.StatusCode, reason string) string { return string(ws.NewCloseFrameBody(code, reason)) }
	pongMsg := frame{ws.OpText, `{"type":"pong"}`}
	for _, tc := range []struct {
		name   string
		frames []clientFrame
		want   []frame // what the server sends, up to its close frame
		// closeCode is the code of the server's close frame (0: the
		// connection stays open); reason a part of its reason.
		closeCode ws.StatusCode
		reason    string
		// echo: the server's close frame must be the client's last
		// frame, echoed.
		echo bool
		// unreadable: the server discards what follows the error.
		unreadable bool
	}{
		{name: "fragmented message, a ping between its fragments", frames: []clientFrame{
			{op: ws.OpText, payload: `{"type":`}, {op: ws.OpPing, fin: true, payload: "between"},
			{op: ws.OpContinuation, payload: `"pi`}, {op: ws.OpContinuation, fin: true, payload: `ng"}`},
		}, want: []frame{{ws.OpPong, "between"}, pongMsg}},
		{name: "binary message", frames: []clientFrame{{op: ws.OpBinary, fin: true, payload: `{"type":"ping"}`}}, want: []frame{pongMsg}},
		{name: "ping", frames: []clientFrame{{op: ws.OpPing, fin: true, payload: "hello"}, {op: ws.OpPing, fin: true}},
			want: []frame{{ws.OpPong, "hello"}, {ws.OpPong, ""}}},
		{name: "a pong needs no answer", frames: []clientFrame{{op: ws.OpPong, fin: true, payload: "x"}}},
		{name: "message of exactly the limit", frames: []clientFrame{
			{op: ws.OpText, fin: true, payload: `{"type":"ping","payload":{"pad":"` + strings.Repeat("x", limit-37) + `"}}`},
		}, want: []frame{{ws.OpText, `{"type":"pong","payload":{"pad":"` + strings.Repeat("x", limit-37) + `"}}`}}},

		{name: "close", frames: []clientFrame{{op: ws.OpClose, fin: true, payload: closeFrame(4000, "bye")}}, closeCode: 4000, reason: "bye", echo: true},
		{name: "close without a code", frames: []clientFrame{{op: ws.OpClose, fin: true}}, echo: true},
		{name: "close between fragments", frames: []clientFrame{
			{op: ws.OpText, payload: `{"type":`}, {op: ws.OpClose, fin: true, payload: closeFrame(ws.StatusNormalClosure, "")},
		}, closeCode: ws.StatusNormalClosure, echo: true},
		{name: "close with a code that may not be sent", frames: []clientFrame{{op: ws.OpClose, fin: true, payload: closeFrame(ws.StatusNoStatusRcvd, "")}},
			closeCode: closeProtocolError, reason: "invalid close frame"},
		{name: "close with a one-byte payload", frames: []clientFrame{{op: ws.OpClose, fin: true, payload: "x"}},
			closeCode: closeProtocolError, reason: "invalid close frame"},

		{name: "text that is not UTF-8", frames: []clientFrame{{op: ws.OpText, fin: true, payload: `{"type":"ping","payload":{"a":"` + "\xff" + `"}}`}},
			closeCode: closeBadRequest, reason: "not valid UTF-8"},
		{name: "not JSON", frames: []clientFrame{{op: ws.OpText, fin: true, payload: `{`}, {op: ws.OpText, fin: true, payload: `{"type":"ping"}`}},
			closeCode: closeBadRequest, reason: "not a JSON object"},
		{name: "message over the limit", frames: []clientFrame{{op: ws.OpText, fin: true, payload: strings.Repeat(" ", limit+1)}},
			closeCode: closeTooBig, reason: "larger than the limit of 1024 bytes", unreadable: true},
		{name: "message over the limit in fragments", frames: []clientFrame{
			{op: ws.OpText, payload: strings.Repeat(" ", 600)}, {op: ws.OpContinuation, fin: true, payload: strings.Repeat(" ", 600)},
		}, closeCode: closeTooBig, reason: "larger than the limit of 1024 bytes", unreadable: true},
		{name: "unmasked frame", frames: []clientFrame{{op: ws.OpText, fin: true, payload: `{"type":"ping"}`, unmasked: true}},
			closeCode: closeProtocolError, reason: "must be masked", unreadable: true},
		{name: "reserved opcode", frames: []clientFrame{{op: 0x3, fin: true, payload: "x"}},
			closeCode: closeProtocolError, reason: "reserved op code", unreadable: true},
		{name: "RSV bit", frames: []clientFrame{{op: ws.OpText, fin: true, payload: `{"type":"ping"}`, rsv: ws.Rsv(true, false, false)}},
			closeCode: closeProtocolError, reason: "non-zero rsv", unreadable: true},
		{name: "continuation without a start", frames: []clientFrame{{op: ws.OpContinuation, fin: true, payload: "x"}},
			closeCode: closeProtocolError, reason: "unexpected continuation", unreadable: true},
		{name: "data frame between fragments", frames: []clientFrame{{op: ws.OpText, payload: "{"}, {op: ws.OpText, fin: true, payload: "}"}},
			closeCode: closeProtocolError, reason: "unexpected non-continuation", unreadable: true},
		{name: "fragmented ping", frames: []clientFrame{{op: ws.OpPing, payload: "x"}},
			closeCode: closeProtocolError, reason: "not final", unreadable: true},
		{name: "ping over 125 bytes", frames: []clientFrame{{op: ws.OpPing, fin: true, payload: strings.Repeat("x", 126)}},
			closeCode: closeProtocolError, reason: "payload limit", unreadable: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dialLean(t, endpoint)
			for _, f := range tc.frames {
				c.writeFrame(f)
			}
			if err := c.conn.SetReadDeadline(time.Now().Add(wsTimeout)); err != nil {
				t.Fatal(err)
			}
			closing := tc.closeCode != 0 || tc.echo
			var got []frame
			for closing || len(got) < len(tc.want) {
				op, p, err := c.readFrame()
				if err != nil {
					t.Fatalf("after %v: %v", got, err)
				}
				got = append(got, frame{op, string(p)})
				if op == ws.OpClose {
					break
				}
			}
			if !closing {
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("frames (-want +got):\n%s", diff)
				}
				c.send(`{"type":"ping","payload":{"probe":true}}`)
				if msg, err := c.read(); err != nil || string(msg) != `{"type":"pong","payload":{"probe":true}}` {
					t.Errorf("the connection does not answer: %s, %v", msg, err)
				}
				return
			}
			last := got[len(got)-1]
			if diff := cmp.Diff(tc.want, got[:len(got)-1], cmpopts.EquateEmpty()); diff != "" || last.Op != ws.OpClose {
				t.Fatalf("frames before the close frame (-want +got):\n%s\nthen %+v", diff, last)
			}
			if tc.echo {
				if sent := tc.frames[len(tc.frames)-1].payload; last.Payload != sent {
					t.Errorf("close frame %q, want the echo of %q", last.Payload, sent)
				}
			}
			if code, reason := ws.ParseCloseFrameData([]byte(last.Payload)); code != tc.closeCode || !strings.Contains(reason, tc.reason) {
				t.Errorf("close %d %q, want %d with %q", code, reason, tc.closeCode, tc.reason)
			}
			if tc.frames[len(tc.frames)-1].op != ws.OpClose {
				c.writeFrame(clientFrame{op: ws.OpClose, fin: true, payload: last.Payload})
			}
			if tc.unreadable {
				return
			}
			// The server closes the connection, well before the close
			// handshake's timeout.
			if err := c.conn.SetReadDeadline(time.Now().Add(closeHandshakeTimeout / 2)); err != nil {
				t.Fatal(err)
			}
			if _, err := c.r.ReadByte(); err != io.EOF {
				t.Errorf("after the close handshake: %v, want EOF", err)
			}
		})
	}
}

// TestWebSocketNothingAfterServerClose: when the server closes a
// connection while events stream to it (here, as it stops), its close
// frame is the last frame the client reads: once the client answers it,
// the connection ends.
func TestWebSocketNothingAfterServerClose(t *testing.T) {
	ix := index.New(index.Options{})
	s := newServer(t, ix, health.NewTracker(ix, health.Options{}), Options{}, graphql.Options{Fanout: fanout.Options{Buffer: 100000}})
	stop := runServer(t, s)
	c := dialLean(t, serve(t, s))
	c.subscribe("1", eventsQuery, nil)
	waitFor(t, "the subscription", func() bool { return s.hub.Subscribers() == 1 })
	var writer sync.WaitGroup
	defer writer.Wait()
	writer.Go(func() {
		for i := range 5000 {
			ix.Upsert(version(t, "c1", "ns", fmt.Sprintf("cm-%d", i), "1", nil))
		}
	})
	for range 100 {
		if _, err := c.read(); err != nil {
			t.Fatal(err)
		}
	}
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	if err := c.conn.SetReadDeadline(time.Now().Add(wsTimeout)); err != nil {
		t.Fatal(err)
	}
	var events int
	for {
		op, p, err := c.readFrame()
		if err != nil {
			t.Fatalf("after %d more events: %v", events, err)
		}
		if op == ws.OpClose {
			if code, reason := ws.ParseCloseFrameData(p); code != closeGoingAway {
				t.Errorf("close %d %q, want %d", code, reason, closeGoingAway)
			}
			c.writeFrame(clientFrame{op: ws.OpClose, fin: true, payload: string(p)})
			break
		}
		events++
	}
	if h, err := ws.ReadHeader(c.r); err != io.EOF {
		t.Errorf("after the close frame: %+v, %v; want EOF", h, err)
	}
	if err := <-stopped; err != nil {
		t.Error(err)
	}
	t.Logf("%d events came between the stop and the close frame", events)
}
