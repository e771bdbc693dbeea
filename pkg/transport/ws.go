package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gobwas/ws"
	"github.com/graphql-go/graphql/gqlerrors"
	"k8s.io/klog/v2"

	"github.com/fleetcache/fleetcache/internal/wsconn"
	"github.com/fleetcache/fleetcache/pkg/audit"
	"github.com/fleetcache/fleetcache/pkg/authn"
	"github.com/fleetcache/fleetcache/pkg/graphql"
)

// subprotocolTransportWS is the WebSocket subprotocol of the
// graphql-transport-ws protocol (the graphql-ws library's; not the legacy
// subscriptions-transport-ws, which calls itself "graphql-ws").
const subprotocolTransportWS = "graphql-transport-ws"

// The message types of graphql-transport-ws.
const (
	msgConnectionInit = "connection_init"
	msgConnectionAck  = "connection_ack"
	msgPing           = "ping"
	msgPong           = "pong"
	msgSubscribe      = "subscribe"
	msgNext           = "next"
	msgError          = "error"
	msgComplete       = "complete"
)

// The close codes of graphql-transport-ws, and the WebSocket ones the
// server uses (untyped, for the WebSocket libraries of tests and server
// alike). The socket layer (internal/wsconn) sends 1002 and 1009 itself.
const (
	closeBadRequest             = 4400
	closeUnauthorized           = 4401
	closeSubprotocol            = 4406
	closeInitTimeout            = 4408
	closeSubscriberExists       = 4409
	closeTooManyInitialisations = 4429
	closeInternal               = 4500
	// closeProtocolError: a frame that breaks RFC 6455.
	closeProtocolError = 1002
	// closeTooBig: a message over Options.MaxBodyBytes.
	closeTooBig = 1009
	// closeSlowConsumer: a subscription's buffer overflowed. The graphql-ws
	// client retries on it, unlike on 44xx.
	closeSlowConsumer = 1013
	// closeGoingAway: the server stops.
	closeGoingAway = 1001
)

// wsOutboxSize is how many encoded messages may wait for a connection's
// writer. Operations block when it is full: the subscriptions' own buffers
// (Options.Fanout.Buffer) then fill, and overflow ends them. The writer
// takes all that wait and writes them in one write.
const wsOutboxSize = 64

// maxOperationID bounds the length of an operation id, which the server
// keeps while the operation runs (clients send UUIDs or counters).
const maxOperationID = 256

// wsMessage is a message from a client, decoded and checked.
type wsMessage struct {
	Type string
	// ID is the operation's id, for subscribe and complete.
	ID string
	// Payload is the payload of connection_init, ping and pong, if any.
	Payload json.RawMessage
	// Request is the payload of subscribe.
	Request graphql.Request
}

// decodeMessage decodes a graphql-transport-ws message from a client and
// checks it as the protocol requires; an error means close 4400. Messages
// that only servers send (connection_ack, next, error) are errors too.
func decodeMessage(data []byte) (wsMessage, error) {
	var m wsMessage
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil || fields == nil {
		return m, errors.New("message is not a JSON object")
	}
	raw, ok := fields["type"]
	if !ok || isNull(raw) {
		return m, errors.New("message has no type")
	}
	if err := json.Unmarshal(raw, &m.Type); err != nil {
		return m, errors.New("message type is not a string")
	}
	id := func() error {
		raw, ok := fields["id"]
		if !ok || isNull(raw) {
			return fmt.Errorf("%s message has no id", m.Type)
		}
		if err := json.Unmarshal(raw, &m.ID); err != nil {
			return fmt.Errorf("%s message id is not a string", m.Type)
		}
		if m.ID == "" {
			return fmt.Errorf("%s message id is empty", m.Type)
		}
		if len(m.ID) > maxOperationID {
			return fmt.Errorf("%s message id is longer than %d bytes", m.Type, maxOperationID)
		}
		return nil
	}
	switch m.Type {
	case msgConnectionInit, msgPing, msgPong:
		if raw, ok := fields["payload"]; ok && !isNull(raw) {
			if !isObject(raw) {
				return m, fmt.Errorf("%s payload is not an object", m.Type)
			}
			m.Payload = raw
		}
	case msgSubscribe:
		if err := id(); err != nil {
			return m, err
		}
		raw, ok := fields["payload"]
		if !ok || !isObject(raw) {
			return m, errors.New("subscribe payload is not an object")
		}
		req, herr := decodeRequest(raw)
		if herr != nil {
			return m, fmt.Errorf("subscribe payload: %w", herr.err)
		}
		m.Request = req
	case msgComplete:
		if err := id(); err != nil {
			return m, err
		}
	case msgConnectionAck, msgNext, msgError:
		return m, fmt.Errorf("unexpected %s message: only servers send it", m.Type)
	default:
		return m, fmt.Errorf("unknown message type %q", m.Type)
	}
	return m, nil
}

// isObject reports whether raw, valid JSON, is an object.
func isObject(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{'
}

// serveWebSocket serves graphql-transport-ws on an upgraded connection
// until the client or the server closes it, the request's context ends or
// the server stops.
func (s *Server) serveWebSocket(w http.ResponseWriter, r *http.Request) {
	release, ok := s.acquireConnection(w, r)
	if !ok {
		return
	}
	defer release()
	log := s.opts.Logger.WithValues("remote", r.RemoteAddr, "transport", "websocket")
	// A token in the header is checked before the upgrade; without one,
	// connection_init must carry it.
	var user *authn.User
	if token, ok := authn.BearerToken(r.Header.Get("Authorization")); ok && s.opts.Authenticator != nil {
		u, herr := s.identify(r.Context(), token, r.Header)
		if herr != nil {
			s.writeHTTPError(w, r, herr)
			return
		}
		user = u
	}
	wc, ok := s.upgrade(w, r, log)
	if !ok {
		return
	}
	wc.addr = clientAddress(r)
	wc.user = user
	wc.header = impersonationHeaders(r.Header)
	wc.audit = audit.From(r.Context())
	wc.run(r.Context())
}

// upgrade checks the Origin of r and completes the WebSocket handshake. It
// returns the connection, not yet running, or false once it answered the
// request with an error: 403 for an Origin that is neither the request's
// host nor allowed, or what the handshake's checks answer (400, 405, 426,
// 505). A client that does not offer graphql-transport-ws gets a
// connection all the same, which closes at once with 4406.
func (s *Server) upgrade(w http.ResponseWriter, r *http.Request, log klog.Logger) (*wsConn, bool) {
	if err := checkOrigin(r, s.opts.AllowedOrigins); err != nil {
		log.V(4).Info("WebSocket handshake refused", "err", err)
		http.Error(w, err.Error(), http.StatusForbidden)
		return nil, false
	}
	sock, err := wsconn.Upgrade(w, r, subprotocolTransportWS, wsconn.Options{
		WriteTimeout:      s.opts.WriteTimeout,
		MaxMessageSize:    s.opts.MaxBodyBytes,
		OutboxSize:        wsOutboxSize,
		Heartbeat:         []byte(`{"type":"ping"}`),
		HeartbeatInterval: s.opts.KeepAliveInterval,
		Logger:            log,
	})
	if err != nil {
		log.V(4).Info("WebSocket handshake failed", "err", err)
		return nil, false
	}
	wc := newWSConn(s, sock, log)
	if sock.Protocol() != subprotocolTransportWS {
		wc.requestClose(closeSubprotocol, "Subprotocol not acceptable: use "+subprotocolTransportWS)
	}
	return wc, true
}

// wsConn is one graphql-transport-ws connection, on a socket
// (internal/wsconn) that frames its messages, writes them from one
// goroutine and runs the close handshake. Its goroutines: the handler's,
// which reads and handles the client's messages (run, readLoop); the
// socket's writer; one per operation (runOperation). run waits for all of
// them.
type wsConn struct {
	s    *Server
	log  klog.Logger
	sock *wsconn.Conn
	// addr is the client's address, for Options.RateLimit when the server
	// does not authenticate.
	addr string

	// opsCtx is the operations': canceled when the connection ends or
	// starts to close (the socket's Context).
	opsCtx context.Context

	// initReceived is set when connection_init arrives.
	initReceived atomic.Bool
	// acked is set once connection_ack is queued; only readLoop uses it.
	acked bool
	// user is the authenticated caller, set before connection_ack; only
	// readLoop uses it.
	user *authn.User
	// header holds the upgrade request's Impersonate-* headers, for a
	// connection that authenticates at connection_init.
	header http.Header
	// audit is the upgrade request's audit event, of which each operation
	// is a Sub event; nil without an audit log.
	audit *audit.Event

	mu  sync.Mutex
	ops map[string]*wsOperation // by id
	wg  sync.WaitGroup          // operations
}

// wsOperation is a running operation of a connection.
type wsOperation struct{ cancel context.CancelFunc }

// newWSConn returns the graphql-transport-ws connection over sock.
func newWSConn(s *Server, sock *wsconn.Conn, log klog.Logger) *wsConn {
	return &wsConn{s: s, log: log, sock: sock, opsCtx: sock.Context(), ops: map[string]*wsOperation{}}
}

// run serves the connection until it is closed, or ctx ends, and returns
// after every goroutine of the connection has ended. The connection closes
// with 4408 if connection_init does not come within
// Options.ConnectionInitTimeout, with 1001 when the server stops, and at
// once when the server drops its connections.
func (wc *wsConn) run(ctx context.Context) {
	defer afterFunc(wc.s.dropped, wc.sock.Shutdown)()
	defer afterFunc(wc.s.stopped, func() { wc.requestClose(closeGoingAway, "server shutting down") })()
	initTimedOut := make(chan struct{})
	initTimer := time.AfterFunc(wc.s.opts.ConnectionInitTimeout, func() {
		defer close(initTimedOut)
		if !wc.initReceived.Load() {
			wc.requestClose(closeInitTimeout, "Connection initialisation timeout")
		}
	})
	defer func() {
		if !initTimer.Stop() {
			<-initTimedOut
		}
	}()
	var writer sync.WaitGroup
	writer.Go(func() {
		if err := wc.sock.Start(ctx); err != nil {
			wc.log.V(4).Info("WebSocket write failed", "err", err)
		}
	})
	wc.readLoop()
	writer.Wait() // it closes the socket
	wc.wg.Wait()
}

// afterFunc calls f in a goroutine of its own once ctx ends. Its caller
// must call the stop function it returns before it returns: stop keeps f
// from being called, or waits for it to return.
func afterFunc(ctx context.Context, f func()) (stop func()) {
	done := make(chan struct{})
	stopf := context.AfterFunc(ctx, func() {
		defer close(done)
		f()
	})
	return func() {
		if !stopf() {
			<-done
		}
	}
}

// requestClose closes the connection with code and reason: the socket's
// close handshake; the first request wins. Operations end at once.
func (wc *wsConn) requestClose(code ws.StatusCode, reason string) {
	wc.sock.Close(code, reason)
}

// readLoop reads and handles the client's messages until the client's
// close frame, or an error. Once a close is requested, the socket discards
// messages until the client's close frame, which its close handshake
// waits for. Text and binary messages alike hold JSON.
func (wc *wsConn) readLoop() {
	for {
		data, err := wc.sock.ReadMessage()
		if errors.Is(err, wsconn.ErrInvalidUTF8) {
			wc.requestClose(closeBadRequest, "Invalid message received: text is not valid UTF-8")
			continue
		}
		if err != nil {
			return
		}
		msg, err := decodeMessage(data)
		if err != nil {
			wc.requestClose(closeBadRequest, "Invalid message received: "+err.Error())
			continue
		}
		wc.handle(msg)
	}
}

// handle acts on one message.
func (wc *wsConn) handle(msg wsMessage) {
	switch msg.Type {
	case msgConnectionInit:
		if wc.initReceived.Swap(true) {
			wc.requestClose(closeTooManyInitialisations, "Too many initialisation requests")
			return
		}
		// The server's ping messages start once the client has sent
		// connection_init.
		wc.sock.StartHeartbeat()
		if !wc.authenticate(msg.Payload) {
			return
		}
		wc.acked = true
		wc.send(wc.opsCtx, wsOut{Type: msgConnectionAck})
	case msgPing:
		pong := wsOut{Type: msgPong}
		if msg.Payload != nil {
			pong.Payload = msg.Payload
		}
		wc.send(wc.opsCtx, pong)
	case msgPong:
	case msgSubscribe:
		if !wc.acked {
			wc.requestClose(closeUnauthorized, "Unauthorized: subscribe before connection_ack")
			return
		}
		wc.subscribe(msg.ID, msg.Request)
	case msgComplete:
		wc.mu.Lock()
		op := wc.ops[msg.ID]
		delete(wc.ops, msg.ID)
		wc.mu.Unlock()
		if op != nil {
			op.cancel()
		}
	}
}

// authenticate checks the token of connection_init's payload, unless the
// upgrade request's header carried one; it returns false when it requested
// a close (4403).
func (wc *wsConn) authenticate(payload json.RawMessage) bool {
	if wc.s.opts.Authenticator == nil || wc.user != nil {
		return true
	}
	var p map[string]any
	_ = json.Unmarshal(payload, &p) // decodeMessage checked it is an object, or absent
	token, ok := initToken(p)
	if !ok {
		wc.requestClose(closeForbidden, "Forbidden: send {\"authorization\": \"Bearer <token>\"} in connection_init")
		return false
	}
	u, herr := wc.s.identify(audit.WithEvent(wc.opsCtx, wc.audit), token, withPayloadHeaders(wc.header, p))
	if herr != nil {
		wc.requestClose(closeForbidden, "Forbidden: "+herr.err.Error())
		return false
	}
	wc.user = u
	return true
}

// impersonationHeaders returns the Impersonate-* headers of h.
func impersonationHeaders(h http.Header) http.Header {
	out := http.Header{}
	for name, values := range h {
		if strings.HasPrefix(name, "Impersonate-") {
			out[name] = values
		}
	}
	return out
}

// withPayloadHeaders returns h with the keys of connection_init's payload
// that name Impersonate-* headers, in any case, added: a string or a list
// of strings each (browsers cannot set a WebSocket's headers).
func withPayloadHeaders(h http.Header, payload map[string]any) http.Header {
	out := h.Clone()
	for k, v := range payload {
		name := http.CanonicalHeaderKey(k)
		if !strings.HasPrefix(name, "Impersonate-") {
			continue
		}
		switch v := v.(type) {
		case string:
			out.Add(name, v)
		case []any:
			for _, e := range v {
				if s, ok := e.(string); ok {
					out.Add(name, s)
				}
			}
		}
	}
	return out
}

// caller is whom Options.RateLimit counts the connection's operations
// against: its authenticated user, else its address. Only readLoop calls
// it, as it reads user.
func (wc *wsConn) caller() callerKey {
	if wc.user != nil {
		return userCaller(wc.user)
	}
	return addressCaller(wc.addr)
}

// subscribe starts operation id.
func (wc *wsConn) subscribe(id string, req graphql.Request) {
	o, res := wc.s.engine.Prepare(req) // outside the lock
	// Each operation is an audit event of its own.
	ev := wc.audit.Sub(id)
	evCtx := audit.WithEvent(wc.opsCtx, ev)
	auditOperation(evCtx, o)
	wc.mu.Lock()
	if _, dup := wc.ops[id]; dup {
		wc.mu.Unlock()
		ev.Complete(http.StatusConflict)
		wc.requestClose(closeSubscriberExists, "Subscriber for "+id+" already exists")
		return
	}
	if max := wc.s.opts.MaxSubscriptionsPerConnection; len(wc.ops) >= max {
		wc.mu.Unlock()
		err := formatted(CodeTooManySubscriptions, fmt.Errorf("the connection already runs %d operations, the limit: complete one first, or open another connection", max))
		ev.SetErrors([]string{CodeTooManySubscriptions})
		ev.Complete(http.StatusTooManyRequests)
		wc.send(wc.opsCtx, wsOut{ID: id, Type: msgError, Payload: errorList([]gqlerrors.FormattedError{err})})
		return
	}
	// Over the rate: an error message for this operation only, not close
	// 4429, which graphql-transport-ws reserves for a repeated
	// connection_init and which the graphql-ws client takes as fatal,
	// dropping every other subscription of the connection.
	if _, err := wc.s.allowRate(wc.caller(), kindOf(o)); err != nil {
		wc.mu.Unlock()
		ev.SetErrors([]string{CodeRateLimited})
		ev.Complete(http.StatusTooManyRequests)
		wc.send(wc.opsCtx, wsOut{ID: id, Type: msgError, Payload: errorList([]gqlerrors.FormattedError{formatted(CodeRateLimited, err)})})
		return
	}
	ctx, cancel := context.WithCancel(evCtx)
	if wc.user != nil {
		ctx = authn.WithUser(ctx, wc.user)
	}
	op := &wsOperation{cancel: cancel}
	wc.ops[id] = op
	wc.mu.Unlock()
	wc.wg.Go(func() { wc.runOperation(ctx, id, op, o, res) })
}

// forget removes operation id if it is still op. It returns false if the
// client completed it already.
func (wc *wsConn) forget(id string, op *wsOperation) bool {
	wc.mu.Lock()
	defer wc.mu.Unlock()
	if wc.ops[id] != op {
		return false
	}
	delete(wc.ops, id)
	return true
}

// runOperation runs a subscribe message's operation o (nil when it did not
// prepare, with res its errors): a subscription's results as next messages
// until it ends, or a query's result as one next; then complete, or error
// when it fails before execution or ends with errors.
func (wc *wsConn) runOperation(ctx context.Context, id string, op *wsOperation, o *graphql.Operation, res *graphql.Result) {
	defer op.cancel()
	defer wc.forget(id, op)
	ev := audit.From(ctx)
	defer ev.Complete(http.StatusOK)
	next := nextPrefix(id)
	var sub *graphql.Subscription
	if o != nil {
		sub, res = wc.s.engine.SubscribeOperation(ctx, o)
	}
	if sub == nil {
		if res == nil {
			res = graphql.ErrorResult(graphql.CodeInternal, errors.New("the operation did not start"))
		}
		auditResult(ctx, res)
		if !res.Executed {
			wc.finish(ctx, id, op, wsOut{ID: id, Type: msgError, Payload: errorList(res.Errors)})
			return
		}
		if wc.sendNext(ctx, id, next, res) {
			wc.finish(ctx, id, op, wsOut{ID: id, Type: msgComplete})
		}
		return
	}
	defer sub.Close()
	defer wc.s.metrics.subscriptionOpened(transportWebSocket)()
	ev.Started()
	sink := &wsSink{wc: wc, ctx: ctx, id: id, op: op, prefix: next}
	for deliver(ctx, wc.log.WithValues("id", id), nextEvent(ctx, sub), sink) {
	}
}

// wsSink writes one operation's subscription to its connection
// (streamSink): payloads as next messages; the end as complete or error
// for this operation alone, or, for a slow consumer, a stop or a failure,
// as the close of the whole connection.
type wsSink struct {
	wc     *wsConn
	ctx    context.Context
	id     string
	op     *wsOperation
	prefix []byte
}

func (k *wsSink) next(res *graphql.Result, _ bool) error {
	if !k.wc.sendNext(k.ctx, k.id, k.prefix, res) {
		return errors.New("the connection is closing")
	}
	return nil
}

func (k *wsSink) complete() { k.wc.finish(k.ctx, k.id, k.op, wsOut{ID: k.id, Type: msgComplete}) }

func (k *wsSink) endWith(res *graphql.Result) {
	auditResult(k.ctx, res)
	k.wc.finish(k.ctx, k.id, k.op, wsOut{ID: k.id, Type: msgError, Payload: errorList(res.Errors)})
}

func (k *wsSink) slowConsumer(error) {
	k.wc.requestClose(closeSlowConsumer, "slow consumer: subscription "+k.id+" fell too far behind; resubscribe with since = the last cursor")
}

func (k *wsSink) stopped() { k.wc.requestClose(closeGoingAway, "server shutting down") }

func (k *wsSink) failed() { k.wc.requestClose(closeInternal, "Internal server error") }

// finish ends operation id with its last message, unless the client
// completed it. The operation is forgotten first, so that the client may
// reuse the id as soon as it sees the message.
func (wc *wsConn) finish(ctx context.Context, id string, op *wsOperation, last wsOut) {
	if wc.forget(id, op) {
		wc.send(ctx, last)
	}
}

// send encodes m and queues it for the writer; false if ctx ended first.
// A message that cannot be encoded closes the connection with 4500.
func (wc *wsConn) send(ctx context.Context, m wsOut) bool {
	msg, err := json.Marshal(m)
	if err != nil {
		wc.encodingFailed(err, m.Type, m.ID)
		return false
	}
	return wc.queue(ctx, wsconn.Message{Head: msg})
}

// sendNext queues a next message carrying res: next (see nextPrefix), then
// the bytes of res.MarshalJSON as they are (shared results hold them
// encoded already; json.Marshal would copy and re-validate them).
func (wc *wsConn) sendNext(ctx context.Context, id string, next []byte, res *graphql.Result) bool {
	payload, err := res.MarshalJSON()
	if err != nil {
		wc.encodingFailed(err, msgNext, id)
		return false
	}
	return wc.queue(ctx, wsconn.Message{Head: next, Body: payload, Tail: closeBrace})
}

// closeBrace ends a next message, after its payload.
var closeBrace = []byte("}")

// nextPrefix returns the start of operation id's next messages, up to
// their payload.
func nextPrefix(id string) []byte {
	quoted, _ := json.Marshal(id) // a string always encodes
	return fmt.Appendf(nil, `{"id":%s,"type":%q,"payload":`, quoted, msgNext)
}

// encodingFailed closes the connection with 4500.
func (wc *wsConn) encodingFailed(err error, typ, id string) {
	wc.log.Error(err, "Encode a WebSocket message", "type", typ, "id", id)
	wc.requestClose(closeInternal, "Internal server error")
}

// queue queues m for the socket's writer; false if ctx ended first.
func (wc *wsConn) queue(ctx context.Context, m wsconn.Message) bool {
	return wc.sock.Send(ctx, m)
}

// wsOut is a message to a client.
type wsOut struct {
	ID      string `json:"id,omitempty"`
	Type    string `json:"type"`
	Payload any    `json:"payload,omitempty"`
}

// errorList is the payload of an error message: the errors as a response
// carries them, at least one.
func errorList(errs []gqlerrors.FormattedError) []graphql.ResponseError {
	if len(errs) == 0 {
		errs = []gqlerrors.FormattedError{formatted(graphql.CodeInternal, errors.New("the operation failed"))}
	}
	return graphql.ResponseErrors(errs)
}

// formatted is an error with code, as a result carries it.
func formatted(code string, err error) gqlerrors.FormattedError {
	return graphql.ErrorResult(code, err).Errors[0]
}
