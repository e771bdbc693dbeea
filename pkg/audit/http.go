package audit

import (
	"bufio"
	"net"
	"net/http"
	"strings"

	"github.com/google/uuid"
)

// HeaderAuditID is the response header that carries a request's audit ID,
// as kube-apiserver's responses do.
const HeaderAuditID = "Audit-Id"

// URI says what of a request's URI an event records.
type URI int

const (
	// FullURI records the path and the query (the Kubernetes API's
	// selectors, resourceVersion, watch, …).
	FullURI URI = iota
	// PathOnly records the path: a GraphQL GET's query string holds the
	// document and its variables, which the operation's name and type
	// stand for.
	PathOnly
)

// Middleware returns the HTTP middleware that audits each request: it opens
// an Event, puts it in the request's context (From), sets the Audit-Id
// response header, and writes the event once the handler returns, with the
// response's status (101 for a WebSocket upgrade, whose operations are
// events of their own: Event.Sub). Without a log that writes, it returns
// handlers as they are.
func (l *Log) Middleware(uri URI) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if !l.Enabled() {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			u := r.URL.Path
			if uri == FullURI && r.URL.RawQuery != "" {
				u += "?" + r.URL.RawQuery
			}
			ev := l.newEvent(uuid.NewString(), u, strings.ToLower(r.Method))
			ev.rec.Annotations[AnnotationHTTPMethod] = r.Method
			if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
				ev.rec.SourceIPs = []string{host}
			} else if r.RemoteAddr != "" {
				ev.rec.SourceIPs = []string{r.RemoteAddr}
			}
			ev.rec.UserAgent = r.UserAgent()
			w.Header().Set(HeaderAuditID, ev.rec.AuditID)
			sw := &statusWriter{ResponseWriter: w}
			defer func() {
				if p := recover(); p != nil {
					ev.end(StagePanic, http.StatusInternalServerError)
					panic(p)
				}
			}()
			next.ServeHTTP(sw, r.WithContext(WithEvent(r.Context(), ev)))
			ev.Complete(sw.code())
		})
	}
}

// statusWriter remembers the status a handler writes. It passes Flush and
// Hijack through (watches and event streams flush, WebSockets hijack),
// and http.ResponseController reaches the writer below through Unwrap.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}

func (w *statusWriter) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil && w.status == 0 {
		w.status = http.StatusSwitchingProtocols
	}
	return conn, rw, err
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// code is the status written, 200 when the handler wrote nothing.
func (w *statusWriter) code() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}
