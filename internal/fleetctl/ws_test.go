package fleetctl

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// wsServer is a graphql-transport-ws server that runs script on each
// connection once the client's connection_init is read.
func wsServer(t *testing.T, script func(t *testing.T, c *websocket.Conn, r *http.Request)) *Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{"graphql-transport-ws"}})
		if err != nil {
			t.Errorf("accept: %v", err)
			return
		}
		defer c.CloseNow()
		var m wsMessage
		if err := readMsg(r, c, &m); err != nil || m.Type != "connection_init" {
			t.Errorf("first message %+v, %v; want connection_init", m, err)
			return
		}
		script(t, c, r)
	}))
	t.Cleanup(srv.Close)
	c, err := Connect(connectOptions{server: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func readMsg(r *http.Request, c *websocket.Conn, m *wsMessage) error {
	_, b, err := c.Read(r.Context())
	if err != nil {
		return err
	}
	return json.Unmarshal(b, m)
}

func writeMsg(r *http.Request, c *websocket.Conn, m string) {
	_ = c.Write(r.Context(), websocket.MessageText, []byte(m))
}

// ackAndSubscribe acknowledges and pings, and reads the client's subscribe
// and pong, in either order.
func ackAndSubscribe(t *testing.T, c *websocket.Conn, r *http.Request) {
	writeMsg(r, c, `{"type":"connection_ack"}`)
	writeMsg(r, c, `{"type":"ping"}`)
	got := map[string]bool{}
	for range 2 {
		var m wsMessage
		if err := readMsg(r, c, &m); err != nil {
			t.Errorf("read: %v", err)
			return
		}
		got[m.Type] = true
	}
	if !got["subscribe"] || !got["pong"] {
		t.Errorf("the client sent %v, want subscribe and pong", got)
	}
}

// TestSubscribe checks how a subscription ends: what resumes (a broken
// connection, a slow consumer's close, the server's complete), and what
// does not (a refused token, an error the server sends, a protocol error).
func TestSubscribe(t *testing.T) {
	next := `{"id":"1","type":"next","payload":{"data":{"x":1},"extensions":{"cursor":"c1"}}}`
	tests := []struct {
		name        string
		script      func(t *testing.T, c *websocket.Conn, r *http.Request)
		events      int
		interrupted bool
		unauth      bool
		code        string
		nilErr      bool
	}{
		{name: "refused at init", unauth: true, script: func(t *testing.T, c *websocket.Conn, r *http.Request) {
			c.Close(4403, "Forbidden")
		}},
		{name: "slow consumer", events: 1, interrupted: true, script: func(t *testing.T, c *websocket.Conn, r *http.Request) {
			ackAndSubscribe(t, c, r)
			writeMsg(r, c, next)
			c.Close(websocket.StatusTryAgainLater, "slow consumer")
		}},
		{name: "connection lost", events: 2, interrupted: true, script: func(t *testing.T, c *websocket.Conn, r *http.Request) {
			ackAndSubscribe(t, c, r)
			writeMsg(r, c, next)
			writeMsg(r, c, next)
			c.CloseNow()
		}},
		{name: "error message", code: "CURSOR_EXPIRED", script: func(t *testing.T, c *websocket.Conn, r *http.Request) {
			ackAndSubscribe(t, c, r)
			writeMsg(r, c, `{"id":"1","type":"error","payload":[{"message":"expired","extensions":{"code":"CURSOR_EXPIRED"}}]}`)
		}},
		{name: "complete", events: 1, nilErr: true, script: func(t *testing.T, c *websocket.Conn, r *http.Request) {
			ackAndSubscribe(t, c, r)
			writeMsg(r, c, next)
			writeMsg(r, c, `{"id":"1","type":"complete"}`)
			var m wsMessage
			_ = readMsg(r, c, &m) // the client's close
		}},
		{name: "silence", interrupted: true, script: func(t *testing.T, c *websocket.Conn, r *http.Request) {
			ackAndSubscribe(t, c, r)
			_, _, _ = c.Read(r.Context()) // until the client gives up and closes
		}},
		{name: "bad message", script: func(t *testing.T, c *websocket.Conn, r *http.Request) {
			ackAndSubscribe(t, c, r)
			c.Close(4400, "bad message")
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := wsServer(t, tc.script)
			c.idleTimeout = 300 * time.Millisecond
			events := 0
			err := c.Subscribe(t.Context(), "subscription { x }", nil, func(e event) error {
				if e.Extensions.Cursor != "c1" {
					t.Errorf("cursor %q, want c1", e.Extensions.Cursor)
				}
				events++
				return nil
			})
			if events != tc.events {
				t.Errorf("%d events, want %d", events, tc.events)
			}
			var se *Error
			switch {
			case tc.nilErr:
				if err != nil {
					t.Errorf("got %v, want nil", err)
				}
			case tc.unauth:
				if !errors.Is(err, ErrUnauthorized) {
					t.Errorf("got %v, want ErrUnauthorized", err)
				}
			case tc.code != "":
				if !errors.As(err, &se) || se.Code != tc.code {
					t.Errorf("got %v, want an Error with code %s", err, tc.code)
				}
			default:
				if err == nil || errors.Is(err, errInterrupted) != tc.interrupted {
					t.Errorf("got %v, want interrupted %v", err, tc.interrupted)
				}
			}
		})
	}
}
