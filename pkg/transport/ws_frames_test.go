package transport

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/fleetcache/fleetcache/internal/wsconn"
	"github.com/fleetcache/fleetcache/pkg/fanout"
	"github.com/fleetcache/fleetcache/pkg/graphql"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index"
)

// These tests read the server's frames raw, through a whole server; the
// socket layer's own tests are in internal/wsconn.

// frame is a frame as a client reads it.
type frame struct {
	Op      ws.OpCode
	Payload string
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
			if err := c.conn.SetReadDeadline(time.Now().Add(wsconn.DefaultCloseTimeout / 2)); err != nil {
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
