package transport

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/fleetcache/fleetcache/pkg/audit"
	"github.com/fleetcache/fleetcache/pkg/graphql"
	"k8s.io/klog/v2"
)

// serveSSE serves one operation as GraphQL over Server-Sent Events, in the
// graphql-sse protocol's distinct connections mode: the request (a POST
// with a JSON body, or a GET with URL parameters; mutations only by POST)
// carries the operation, the response is an event stream of "next" events,
// each a GraphQL response, and a final "complete" event. A subscription
// streams until it ends, the client closes the request, or the server
// stops.
//
// Requests that are not GraphQL requests (method, content type, body size,
// JSON shape) and clients over Options.RateLimit (a subscription counts as
// one opened, any other operation as a query) get plain HTTP errors, as
// over HTTP; GraphQL errors before
// execution (parse, validation, variables) come as a "next" event, as the
// protocol requires. A subscription that ends with an error
// (CURSOR_EXPIRED) sends it as a "next" event, then "complete". A slow
// consumer gets a "next" event with a SLOW_CONSUMER error and the stream
// ends without "complete", as when the server stops: the graphql-sse
// client then retries, re-sending its request (keep its since variable at
// the last cursor received).
func (s *Server) serveSSE(w http.ResponseWriter, r *http.Request) {
	o, res, ok := s.sseOperation(w, r)
	if !ok {
		return
	}
	release, ok := s.acquireConnection(w, r)
	if !ok {
		return
	}
	defer release()

	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(s.stopped, cancel)()
	var sub *graphql.Subscription
	if o != nil {
		sub, res = s.engine.SubscribeOperation(ctx, o)
	}
	if sub != nil {
		defer sub.Close()
		defer s.metrics.subscriptionOpened(transportSSE)()
	}
	st, err := s.openStream(w)
	if err != nil {
		return
	}
	defer st.clearDeadline()
	// A write in progress when the server drops connections fails at once.
	defer context.AfterFunc(s.dropped, st.cutWrites)()
	if sub == nil {
		if res == nil {
			res = graphql.ErrorResult(graphql.CodeInternal, errors.New("the operation did not start"))
		}
		auditResult(ctx, res)
		st.endWith(res)
		return
	}
	audit.From(ctx).Started()
	s.stream(ctx, s.opts.Logger.WithValues("remote", r.RemoteAddr, "transport", "sse"), sub, st)
}

// sseOperation decodes and prepares the operation of an event-stream
// request, GET or POST, within the caller's rate limit; o is nil, and res
// its errors, when it did not prepare. When ok is false it wrote the
// refusal (HTTP errors, as over HTTP).
func (s *Server) sseOperation(w http.ResponseWriter, r *http.Request) (o *graphql.Operation, res *graphql.Result, ok bool) {
	var req graphql.Request
	var herr *httpError
	switch r.Method {
	case http.MethodGet:
		req, herr = getRequest(r, s.opts.MaxBodyBytes)
	case http.MethodPost:
		req, herr = s.postRequest(w, r)
	default:
		s.methodNotAllowed(w, r, "GET, POST")
		return nil, nil, false
	}
	if herr != nil {
		s.writeHTTPError(w, r, herr)
		return nil, nil, false
	}
	o, res = s.engine.Prepare(req)
	auditOperation(r.Context(), o)
	auditResult(r.Context(), res)
	if r.Method == http.MethodGet && o != nil && o.Type() == graphql.OperationMutation {
		s.methodNotAllowed(w, r, "POST")
		return nil, nil, false
	}
	if !s.allowHTTP(w, r, kindOf(o)) {
		return nil, nil, false
	}
	return o, res, true
}

// openStream starts the event stream of a response.
func (s *Server) openStream(w http.ResponseWriter) (*sseStream, error) {
	st := &sseStream{w: w, rc: http.NewResponseController(w), timeout: s.opts.WriteTimeout}
	h := w.Header()
	h.Set("Content-Type", mediaEventStream+"; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	if err := st.flush(); err != nil {
		st.clearDeadline()
		return nil, err
	}
	return st, nil
}

// stream writes sub's payloads to st until it ends or ctx ends. A pump
// calls Next, which blocks, so that this goroutine can write keep-alive
// comments meanwhile; it is the only one that writes. The events of a
// burst are flushed together, after the last.
func (s *Server) stream(ctx context.Context, log klog.Logger, sub *graphql.Subscription, st *sseStream) {
	ctx, cancel := context.WithCancel(ctx)
	results := make(chan streamEvent)
	var pump sync.WaitGroup
	defer pump.Wait()
	defer cancel()
	pump.Go(func() {
		for {
			ev := nextEvent(ctx, sub)
			select {
			case results <- ev:
			case <-ctx.Done():
				return
			}
			if ev.err != nil {
				return
			}
		}
	})
	keepAlive := time.NewTicker(s.opts.KeepAliveInterval)
	defer keepAlive.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-keepAlive.C:
			if st.comment() != nil {
				return
			}
		case ev := <-results:
			if !deliver(ctx, log, ev, st) {
				return
			}
		}
	}
}

// sseStream writes the events of one response, each write within the
// write timeout.
type sseStream struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	buf     bytes.Buffer
	// armed is set when the write deadline was set for the writes since
	// the last flush.
	armed bool

	// mu orders setting a write's deadline with cutWrites, so that a
	// write that starts after the cut does not get a fresh deadline.
	mu  sync.Mutex
	cut bool
}

// errWritesCut is the error of writes after cutWrites.
var errWritesCut = errors.New("the server dropped the stream")

// next writes a "next" event carrying res, flushed unless more are ready:
// the bytes of res.MarshalJSON as they are (shared results hold them
// encoded already; json.Marshal would copy and re-validate them).
func (st *sseStream) next(res *graphql.Result, more bool) error {
	data, err := res.MarshalJSON()
	if err != nil {
		data, _ = graphql.ErrorResult(graphql.CodeInternal, errors.New("cannot encode the result")).MarshalJSON()
	}
	st.buf.Reset()
	st.buf.WriteString("event: next\n")
	// JSON from encoding/json has no line breaks; split on them anyway.
	for line := range bytes.Lines(data) {
		st.buf.WriteString("data: ")
		st.buf.Write(bytes.TrimRight(line, "\r\n"))
		st.buf.WriteByte('\n')
	}
	st.buf.WriteByte('\n')
	return st.write(st.buf.Bytes(), !more)
}

// complete writes the "complete" event. Its empty data field makes
// EventSource dispatch it.
func (st *sseStream) complete() { _ = st.write([]byte("event: complete\ndata:\n\n"), true) }

// The ends of a subscription's stream (streamSink): a subscription that
// ends with an error, or as a slow consumer, or fails, sends a next event
// with the error; only a completed one, or one that ended with a GraphQL
// error, sends complete. Without complete the graphql-sse client retries.
func (st *sseStream) endWith(res *graphql.Result) {
	if st.next(res, false) == nil {
		st.complete()
	}
}

func (st *sseStream) slowConsumer(err error) {
	_ = st.next(graphql.ErrorResult(CodeSlowConsumer, err), false)
}

func (st *sseStream) stopped() {}

func (st *sseStream) failed() {
	_ = st.next(graphql.ErrorResult(graphql.CodeInternal, errors.New("the subscription failed")), false)
}

// comment writes a keep-alive comment, which clients ignore.
func (st *sseStream) comment() error { return st.write([]byte(":\n\n"), true) }

// write writes b, then flushes if flush is set. The writes between two
// flushes share one deadline, set by the first.
func (st *sseStream) write(b []byte, flush bool) error {
	if !st.armed {
		st.mu.Lock()
		err := errWritesCut
		if !st.cut {
			err = st.rc.SetWriteDeadline(time.Now().Add(st.timeout))
		}
		st.mu.Unlock()
		if err != nil && !errors.Is(err, http.ErrNotSupported) {
			return err
		}
		st.armed = true
	}
	if _, err := st.w.Write(b); err != nil {
		return err
	}
	if !flush {
		return nil
	}
	st.armed = false
	return st.flush()
}

func (st *sseStream) flush() error {
	if err := st.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	return nil
}

// clearDeadline lifts the write deadline, which would otherwise apply to
// the connection's next requests.
func (st *sseStream) clearDeadline() {
	_ = st.rc.SetWriteDeadline(time.Time{})
}

// cutWrites makes the write in progress, and any after it, fail at once.
// It may be called while another goroutine writes.
func (st *sseStream) cutWrites() {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.cut = true
	_ = st.rc.SetWriteDeadline(time.Now())
}
