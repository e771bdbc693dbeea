package transport

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"
	"github.com/graphql-go/graphql/gqlerrors"
	"k8s.io/klog/v2"

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
// alike).
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
		u, herr := s.authenticateToken(r.Context(), token)
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
	defer context.AfterFunc(s.dropped, wc.shutdown)()
	wc.run()
}

// wsConn is one graphql-transport-ws connection. Its goroutines: the
// handler's, which reads (run, readLoop) and never writes; one writer
// (writeLoop), the only one that writes to the socket: messages, pongs and
// the close frame; one per operation (runOperation). run waits for all of
// them.
type wsConn struct {
	s   *Server
	log klog.Logger
	// conn is the hijacked connection. The reader reads it through br,
	// which may hold the client's first frames; the writer writes it
	// through fw.
	conn net.Conn
	br   *bufio.Reader
	fw   frameWriter
	// addr is the client's address, for Options.RateLimit when the server
	// does not authenticate.
	addr string

	// ctx is the connection's: canceled when it ends (shutdown, which
	// closes the socket at once).
	ctx    context.Context
	cancel context.CancelFunc
	// opsCtx is the operations': canceled when the connection ends or
	// starts to close.
	opsCtx    context.Context
	cancelOps context.CancelFunc

	// out holds encoded messages and pongs for the writer.
	out *outbox
	// closing is closed when a close is requested; closeCode and
	// closeBody (the close frame's payload) say how.
	closing   chan struct{}
	closeOnce sync.Once
	closeCode ws.StatusCode
	closeBody []byte
	// readDone is closed when the reader has ended: it read the client's
	// close frame, or it cannot read any more.
	readDone chan struct{}
	// initReceived is closed when connection_init arrives.
	initReceived chan struct{}
	// acked is set once connection_ack is queued; only readLoop uses it.
	acked bool
	// user is the authenticated caller, set before connection_ack; only
	// readLoop uses it.
	user *authn.User

	mu  sync.Mutex
	ops map[string]*wsOperation // by id
	wg  sync.WaitGroup          // operations
}

// wsOperation is a running operation of a connection.
type wsOperation struct{ cancel context.CancelFunc }

// newWSConn returns the connection over conn, which the handshake left
// to br for reading.
func newWSConn(s *Server, conn net.Conn, br *bufio.Reader, parent context.Context, log klog.Logger) *wsConn {
	wc := &wsConn{
		s: s, log: log, conn: conn, br: br,
		fw:           frameWriter{conn: conn, timeout: s.opts.WriteTimeout},
		out:          newOutbox(),
		closing:      make(chan struct{}),
		readDone:     make(chan struct{}),
		initReceived: make(chan struct{}),
		ops:          map[string]*wsOperation{},
	}
	wc.ctx, wc.cancel = context.WithCancel(parent)
	wc.opsCtx, wc.cancelOps = context.WithCancel(wc.ctx)
	return wc
}

// run serves the connection and returns when it is closed, after every
// goroutine of the connection has ended.
func (wc *wsConn) run() {
	var writer sync.WaitGroup
	writer.Go(wc.writeLoop)
	wc.readLoop()
	writer.Wait() // it closes the socket
	wc.wg.Wait()
}

// shutdown ends the connection at once: its context, and the socket, which
// cuts a read or a write that waits. Any goroutine may call it, more than
// once.
func (wc *wsConn) shutdown() {
	wc.cancel()
	_ = wc.conn.Close()
}

// requestClose asks the writer to close the socket with code and reason;
// the first request wins. Operations end at once.
func (wc *wsConn) requestClose(code ws.StatusCode, reason string) {
	reason = truncateReason(reason)
	wc.closeWith(code, reason, ws.NewCloseFrameBody(code, reason))
}

// closeWith requests a close frame with payload body (code, reason); the
// first request wins.
func (wc *wsConn) closeWith(code ws.StatusCode, reason string, body []byte) {
	wc.closeOnce.Do(func() {
		wc.log.V(4).Info("Closing WebSocket", "code", int(code), "reason", reason)
		wc.closeCode, wc.closeBody = code, body
		wc.cancelOps()
		close(wc.closing)
	})
}

// closeRequested reports whether a close was requested.
func (wc *wsConn) closeRequested() bool {
	select {
	case <-wc.closing:
		return true
	default:
		return false
	}
}

// readLoop reads and handles the client's messages until the client's
// close frame, or an error. Once a close is requested (by a message here,
// or by the writer), it reads on, discarding messages, until the client's
// close frame: the writer's close handshake waits for it (readDone).
func (wc *wsConn) readLoop() {
	defer close(wc.readDone)
	rd := &wsutil.Reader{
		Source: wc.br,
		// Masked frames, no RSV bits, no continuation out of place.
		State:     ws.StateServerSide,
		CheckUTF8: true,
		// A message of exactly the limit passes; a larger one fails
		// before it is read.
		MaxMessageSize: wc.s.opts.MaxBodyBytes,
		OnIntermediate: wc.control,
	}
	for {
		data, err := wc.readMessage(rd)
		if errors.Is(err, wsutil.ErrInvalidUTF8) {
			// An invalid message, read whole: what follows can be read.
			wc.requestClose(closeBadRequest, "Invalid message received: text is not valid UTF-8")
			err = rd.Discard()
			if err == nil {
				continue
			}
		}
		if err != nil {
			wc.readFailed(err)
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

// readMessage returns the next message, after acting on the control frames
// before it (control). Once a close is requested, it discards messages.
// Text and binary messages alike hold JSON.
func (wc *wsConn) readMessage(rd *wsutil.Reader) ([]byte, error) {
	for {
		h, err := rd.NextFrame()
		switch {
		case err != nil:
			return nil, err
		case h.OpCode.IsControl():
			if err := wc.control(h, rd); err != nil {
				return nil, err
			}
		case !wc.closeRequested():
			return io.ReadAll(rd)
		}
		if err := rd.Discard(); err != nil {
			return nil, err
		}
	}
}

// readFailed acts on the error that ended the reader. A frame that breaks
// RFC 6455 closes the connection with 1002, a message over the limit with
// 1009; then what the client sends is discarded, as it cannot be read as
// frames any more, until the client or the close handshake's timeout ends
// the connection (closing at once could reset the connection before the
// client has read the close frame). Other errors mean the connection is
// gone: it is shut down.
func (wc *wsConn) readFailed(err error) {
	var perr ws.ProtocolError
	switch {
	case errors.Is(err, errCloseReceived):
		return
	case errors.Is(err, wsutil.ErrMessageTooLarge), errors.Is(err, wsutil.ErrFrameTooLarge):
		wc.requestClose(closeTooBig, fmt.Sprintf("message is larger than the limit of %d bytes", wc.s.opts.MaxBodyBytes))
	case errors.As(err, &perr), errors.Is(err, ws.ErrHeaderLengthMSB), errors.Is(err, ws.ErrHeaderLengthUnexpected):
		wc.requestClose(closeProtocolError, err.Error())
	default:
		if wc.ctx.Err() == nil && !errors.Is(err, io.EOF) {
			wc.log.V(4).Info("WebSocket read failed", "err", err)
		}
		wc.shutdown()
		return
	}
	_, _ = io.Copy(io.Discard, wc.br)
}

// handle acts on one message.
func (wc *wsConn) handle(msg wsMessage) {
	switch msg.Type {
	case msgConnectionInit:
		select {
		case <-wc.initReceived:
			wc.requestClose(closeTooManyInitialisations, "Too many initialisation requests")
			return
		default:
		}
		close(wc.initReceived)
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
	u, herr := wc.s.authenticateToken(wc.ctx, token)
	if herr != nil {
		wc.requestClose(closeForbidden, "Forbidden: "+herr.err.Error())
		return false
	}
	wc.user = u
	return true
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
	wc.mu.Lock()
	if _, dup := wc.ops[id]; dup {
		wc.mu.Unlock()
		wc.requestClose(closeSubscriberExists, "Subscriber for "+id+" already exists")
		return
	}
	if max := wc.s.opts.MaxSubscriptionsPerConnection; len(wc.ops) >= max {
		wc.mu.Unlock()
		err := formatted(CodeTooManySubscriptions, fmt.Errorf("the connection already runs %d operations, the limit: complete one first, or open another connection", max))
		wc.send(wc.opsCtx, wsOut{ID: id, Type: msgError, Payload: errorList([]gqlerrors.FormattedError{err})})
		return
	}
	// Over the rate: an error message for this operation only, not close
	// 4429, which graphql-transport-ws reserves for a repeated
	// connection_init and which the graphql-ws client takes as fatal,
	// dropping every other subscription of the connection.
	if _, err := wc.s.allowRate(wc.caller(), kindOf(o)); err != nil {
		wc.mu.Unlock()
		wc.send(wc.opsCtx, wsOut{ID: id, Type: msgError, Payload: errorList([]gqlerrors.FormattedError{formatted(CodeRateLimited, err)})})
		return
	}
	ctx, cancel := context.WithCancel(wc.opsCtx)
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
	next := nextPrefix(id)
	var sub *graphql.Subscription
	if o != nil {
		sub, res = wc.s.engine.SubscribeOperation(ctx, o)
	}
	if sub == nil {
		if res == nil {
			res = graphql.ErrorResult(graphql.CodeInternal, errors.New("the operation did not start"))
		}
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
	return wc.queue(ctx, wsEncoded{head: msg})
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
	return wc.queue(ctx, wsEncoded{head: next, body: payload})
}

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

// queue queues m for the writer; false if ctx ended first.
func (wc *wsConn) queue(ctx context.Context, m wsEncoded) bool {
	return wc.out.put(ctx, m)
}

// wsEncoded is a message for the writer: head, then, unless body is nil,
// body and a closing brace (a next message: its start, its payload). body
// may be shared with other connections: it is never modified.
type wsEncoded struct{ head, body []byte }

func (m wsEncoded) len() int {
	if m.body == nil {
		return len(m.head)
	}
	return len(m.head) + len(m.body) + 1
}

// writeLoop writes the queued pongs and messages, a ping message every
// KeepAliveInterval, and the close frame: when a close is requested (with
// priority over what waits), when connection_init does not come in time,
// or when the server stops. It is the only goroutine that writes to the
// socket, and it writes nothing after the close frame: it returns, and
// shuts the connection down, once the close handshake is over (see
// closeSocket), a write failed, or the reader found the connection gone.
func (wc *wsConn) writeLoop() {
	defer wc.shutdown()
	opts := &wc.s.opts
	initTimer := time.NewTimer(opts.ConnectionInitTimeout)
	defer initTimer.Stop()
	initC, initReceived := initTimer.C, wc.initReceived
	keepAlive := time.NewTicker(opts.KeepAliveInterval)
	defer keepAlive.Stop()
	stopped := wc.s.stopped.Done()
	pingMsg := wsEncoded{head: []byte(`{"type":"ping"}`)}
	// Reused from one write to the next.
	var pongs [][]byte
	var batch []wsEncoded
	for {
		select {
		case <-wc.closing:
			wc.closeSocket()
			return
		default:
		}
		ping := false
		select {
		case <-wc.closing:
			continue
		case <-wc.readDone:
			if wc.closeRequested() {
				continue // the client's close frame: answer it
			}
			return // the connection is gone
		case <-wc.ctx.Done():
			return
		case <-stopped:
			stopped = nil
			wc.requestClose(closeGoingAway, "server shutting down")
			continue
		case <-initReceived:
			initC, initReceived = nil, nil
			initTimer.Stop()
			continue
		case <-initC:
			select {
			case <-wc.initReceived:
			default:
				wc.requestClose(closeInitTimeout, "Connection initialisation timeout")
			}
			initC = nil
			continue
		case <-keepAlive.C:
			ping = initReceived == nil // not before connection_init
		case <-wc.out.ready:
		}
		pongs, batch = wc.out.take(pongs, batch)
		if ping {
			batch = append(batch, pingMsg)
		}
		if len(pongs) == 0 && len(batch) == 0 {
			continue // taken with an earlier signal
		}
		err := wc.write(pongs, batch)
		// Keep no payload until the next write.
		clear(pongs)
		pongs = pongs[:0]
		clear(batch)
		batch = batch[:0]
		if err != nil {
			if wc.ctx.Err() == nil {
				wc.log.V(4).Info("WebSocket write failed", "err", err)
			}
			return
		}
	}
}

// write writes pongs, then batch, each pong and each message a frame of its
// own, in one write, or in writes of about maxFrameBytes if they are
// larger, each bounded by Options.WriteTimeout. An error leaves the
// connection unusable.
func (wc *wsConn) write(pongs [][]byte, batch []wsEncoded) error {
	b := frameBuffers.Get().(*[]byte)
	defer putFrameBuffer(b)
	for _, p := range pongs {
		*b = appendFrame(*b, ws.OpPong, wsEncoded{head: p})
	}
	for i, m := range batch {
		*b = appendFrame(*b, ws.OpText, m)
		if len(*b) < maxFrameBytes && i < len(batch)-1 {
			continue
		}
		if err := wc.fw.write(*b); err != nil {
			return err
		}
		*b = (*b)[:0]
	}
	if len(*b) > 0 { // pongs alone
		return wc.fw.write(*b)
	}
	return nil
}

// closeSocket writes the close frame that was requested, then waits for
// the reader to read the client's close frame (or to find the connection
// gone), for closeHandshakeTimeout at most, from the start of the write.
func (wc *wsConn) closeSocket() {
	deadline := time.Now().Add(closeHandshakeTimeout)
	if err := wc.fw.writeClose(wc.closeBody, deadline); err != nil {
		if wc.ctx.Err() == nil {
			wc.log.V(4).Info("WebSocket close frame not written", "code", int(wc.closeCode), "err", err)
		}
		return
	}
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-wc.readDone:
	case <-wc.ctx.Done():
	case <-t.C:
		wc.log.V(4).Info("WebSocket client did not answer the close frame in time", "code", int(wc.closeCode))
	}
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
