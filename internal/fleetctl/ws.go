package fleetctl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/coder/websocket"
)

// event is one payload of a subscription: data (absent in heartbeats) and
// the cursor the server is at.
type event struct {
	Data       json.RawMessage `json:"data"`
	Errors     []gqlError      `json:"errors"`
	Extensions struct {
		Cursor    string `json:"cursor"`
		Heartbeat bool   `json:"heartbeat"`
	} `json:"extensions"`
}

// wsMessage is a graphql-transport-ws message.
type wsMessage struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// errInterrupted wraps the failures a subscription resumes after: the
// connection broke, the server went away or shed a slow consumer.
var errInterrupted = errors.New("subscription interrupted")

// Subscribe runs one subscription over one WebSocket connection
// (graphql-transport-ws) and hands each payload to handle, until the
// server completes it (nil), ctx ends (ctx.Err()), handle fails, or the
// connection breaks (an error wrapping errInterrupted: resume). An error
// payload is an *Error; a refusal of the credentials ErrUnauthorized.
func (c *Client) Subscribe(ctx context.Context, query string, vars map[string]any, handle func(event) error) error {
	u := "ws" + strings.TrimPrefix(c.endpoint, "http")
	conn, res, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPClient: c.http, Subprotocols: []string{"graphql-transport-ws"}})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if res != nil {
			switch res.StatusCode {
			case http.StatusUnauthorized:
				return c.unauthorized()
			case http.StatusTooManyRequests, http.StatusServiceUnavailable:
				return fmt.Errorf("%w: %s", errInterrupted, res.Status)
			}
			return fmt.Errorf("websocket %s: %w", u, err)
		}
		return fmt.Errorf("%w: %w", errInterrupted, c.unreachable(err))
	}
	defer conn.CloseNow()
	// An event may hold a large object.
	conn.SetReadLimit(64 << 20)
	if conn.Subprotocol() != "graphql-transport-ws" {
		return fmt.Errorf("%s does not speak graphql-transport-ws (is it fleetcache?)", u)
	}
	payload, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		return fmt.Errorf("encode subscription: %w", err)
	}
	if err := c.write(ctx, conn, wsMessage{Type: "connection_init", Payload: json.RawMessage(`{}`)}); err != nil {
		return err
	}
	acked := false
	for {
		var m wsMessage
		if err := c.read(ctx, conn, &m); err != nil {
			return err
		}
		switch m.Type {
		case "connection_ack":
			if acked {
				continue
			}
			acked = true
			if err := c.write(ctx, conn, wsMessage{ID: "1", Type: "subscribe", Payload: payload}); err != nil {
				return err
			}
		case "ping":
			if err := c.write(ctx, conn, wsMessage{Type: "pong"}); err != nil {
				return err
			}
		case "next":
			var e event
			if err := json.Unmarshal(m.Payload, &e); err != nil {
				return fmt.Errorf("decode event: %w", err)
			}
			if len(e.Errors) > 0 {
				if e.Errors[0].Extensions.Code == "SLOW_CONSUMER" {
					return fmt.Errorf("%w: %s", errInterrupted, e.Errors[0].Message)
				}
				return e.Errors[0].err()
			}
			if err := handle(e); err != nil {
				return err
			}
		case "error":
			var errs []gqlError
			if err := json.Unmarshal(m.Payload, &errs); err != nil || len(errs) == 0 {
				return fmt.Errorf("subscription failed: %s", m.Payload)
			}
			return errs[0].err()
		case "complete":
			conn.Close(websocket.StatusNormalClosure, "")
			return nil
		}
	}
}

func (c *Client) write(ctx context.Context, conn *websocket.Conn, m wsMessage) error {
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode %s: %w", m.Type, err)
	}
	if err := conn.Write(ctx, websocket.MessageText, b); err != nil {
		return c.closed(ctx, err)
	}
	return nil
}

// idleTimeout is how long a subscription may stay silent before it is
// taken for dead: fleetcache pings every KeepAliveInterval and sends a
// heartbeat every 30 s, so a connection that a NAT or a partition lost
// without a reset shows as silence.
const idleTimeout = 90 * time.Second

func (c *Client) read(ctx context.Context, conn *websocket.Conn, m *wsMessage) error {
	idle := c.idleTimeout
	if idle == 0 {
		idle = idleTimeout
	}
	rctx, cancel := context.WithTimeout(ctx, idle)
	defer cancel()
	_, b, err := conn.Read(rctx)
	if err != nil {
		if ctx.Err() == nil && rctx.Err() != nil {
			return fmt.Errorf("%w: nothing from the server for %s", errInterrupted, idle)
		}
		return c.closed(ctx, err)
	}
	if err := json.Unmarshal(b, m); err != nil {
		return fmt.Errorf("decode message: %w", err)
	}
	return nil
}

// closed classifies a failed read or write: the protocol's 44xx codes are
// final (the client did something the server will refuse again), the rest
// (a lost connection, 1001 going away, 1013 slow consumer) interrupts.
func (c *Client) closed(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	switch code := websocket.CloseStatus(err); {
	case code == 4403 || code == 4401:
		return c.unauthorized()
	case code >= 4400 && code < 4500:
		return fmt.Errorf("the server closed the subscription (%d): %w", code, err)
	}
	return fmt.Errorf("%w: %w", errInterrupted, err)
}
