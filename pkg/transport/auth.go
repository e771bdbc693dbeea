package transport

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetcache/fleetcache/pkg/audit"
	"github.com/fleetcache/fleetcache/pkg/authn"
	"github.com/fleetcache/fleetcache/pkg/authz"
	"github.com/fleetcache/fleetcache/pkg/graphql"
)

// Error codes of authentication.
const (
	// CodeUnauthenticated: no bearer token, or one the reviewing cluster
	// rejects (HTTP 401; WebSocket close 4403 at connection_init).
	CodeUnauthenticated = "UNAUTHENTICATED"
	// CodeAuthUnavailable: the token could not be reviewed (HTTP 503).
	CodeAuthUnavailable = "AUTHENTICATION_UNAVAILABLE"
)

// closeForbidden is graphql-transport-ws's close code for a connection_init
// the server refuses.
const closeForbidden = 4403

// CodeForbidden: the caller may not impersonate whom the Impersonate-*
// headers name (HTTP 403; WebSocket close 4403 at connection_init), or
// the headers are malformed (HTTP 400, code BAD_REQUEST).
const CodeForbidden = "FORBIDDEN"

// authenticate returns the context of an HTTP request with its caller,
// authenticated from the Authorization header and, when the request
// impersonates, the user it acts as (identify). Without an Authenticator
// every request is served as is.
func (s *Server) authenticate(r *http.Request) (context.Context, *httpError) {
	if s.opts.Authenticator == nil {
		return r.Context(), nil
	}
	token, ok := authn.BearerToken(r.Header.Get("Authorization"))
	if !ok {
		return nil, &httpError{http.StatusUnauthorized, CodeUnauthenticated, errors.New("unauthenticated: send Authorization: Bearer <token>")}
	}
	u, herr := s.identify(r.Context(), token, r.Header)
	if herr != nil {
		return nil, herr
	}
	return authn.WithUser(r.Context(), u), nil
}

// identify is where every endpoint learns who calls (/graphql over HTTP,
// SSE and WebSocket, and what Guard fronts: /mcp, the Kubernetes API): the
// token's user, recorded in the request's audit event, then, when header
// carries Impersonate-* headers and the server has an Impersonator, the
// user it acts as once the Impersonator allows it, recorded too. That user
// is the caller from then on: authorization decides for it.
func (s *Server) identify(ctx context.Context, token string, header http.Header) (*authn.User, *httpError) {
	u, herr := s.authenticateToken(ctx, token)
	if herr != nil {
		return nil, herr
	}
	ev := audit.From(ctx)
	ev.SetUser(u)
	if s.opts.Impersonator == nil || !authz.Requested(header) {
		return u, nil
	}
	as, err := s.opts.Impersonator.Impersonate(ctx, u, header)
	if err != nil {
		var status apierrors.APIStatus
		if !errors.As(err, &status) {
			s.opts.Logger.Error(err, "Impersonation failed", "user", u.Name)
			return nil, &httpError{http.StatusServiceUnavailable, CodeAuthUnavailable, errors.New("impersonation is unavailable, try again later")}
		}
		st := status.Status()
		s.opts.Logger.V(2).Info("Impersonation refused", "user", u.Name, "err", err)
		ev.Decide(false, st.Message)
		code := CodeForbidden
		if st.Code == http.StatusBadRequest {
			code = graphql.CodeBadRequest
		}
		return nil, &httpError{int(st.Code), code, &statusError{st}}
	}
	ev.SetImpersonated(as)
	return as, nil
}

// statusError is a refusal with the Kubernetes API's Status, for the
// endpoints that answer with one (GuardStatus).
type statusError struct{ status metav1.Status }

func (e *statusError) Error() string { return e.status.Message }

// Status returns the Kubernetes API's Status of the refusal.
func (e *statusError) Status() metav1.Status { return e.status }

// refuse answers a request whose authentication failed: 401 with
// WWW-Authenticate, or 503 when the token could not be reviewed.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, herr *httpError) {
	if herr.status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="fleetcache"`)
	}
	s.writeHTTPError(w, r, herr)
}

func (s *Server) authenticateToken(ctx context.Context, token string) (*authn.User, *httpError) {
	u, err := s.opts.Authenticator.Authenticate(ctx, token)
	switch {
	case errors.Is(err, authn.ErrUnauthenticated):
		return nil, &httpError{http.StatusUnauthorized, CodeUnauthenticated, err}
	case err != nil:
		s.opts.Logger.Error(err, "Token review failed")
		return nil, &httpError{http.StatusServiceUnavailable, CodeAuthUnavailable, errors.New("authentication is unavailable, try again later")}
	}
	return u, nil
}

// initToken returns the bearer token of a connection_init payload:
// {"authorization": "Bearer <token>"}, as browsers cannot set headers on a
// WebSocket.
func initToken(payload map[string]any) (string, bool) {
	for k, v := range payload {
		if s, ok := v.(string); ok && strings.EqualFold(k, "authorization") {
			return authn.BearerToken(s)
		}
	}
	return "", false
}

// Guard returns next behind what /graphql asks of a plain HTTP request
// before GraphQL sees it, for another protocol served beside the engine
// (MCP at /mcp): the caller's bearer token, authenticated by
// Options.Authenticator and put in the request's context (authn.WithUser),
// impersonation (identify), and the caller's query rate limit
// (Options.RateLimit), which each POST counts against. Rejections are
// answered as /graphql answers them: 401 with WWW-Authenticate, 403 for an
// impersonation refused, 503 when the token cannot be reviewed, 429 with
// Retry-After, each with a JSON body carrying the error's code. Without an
// Authenticator only the rate limit applies.
func (s *Server) Guard(next http.Handler) http.Handler {
	return s.guard(next, s.writeHTTPError, func(r *http.Request) (operationKind, bool) {
		return kindQuery, r.Method == http.MethodPost
	})
}

// GuardStatus is Guard for the Kubernetes API (/clusters/…, /fleet/…): its
// rejections are the Kubernetes API's Status objects, whose message
// kubectl and client-go print ("Error from server (Forbidden): users "bob"
// is forbidden: …"), and every request counts against the caller's rate
// limits: a watch (?watch=true) as a subscription, any other request as a
// query, each GraphQL's budget shared with /graphql. Over the rate it
// answers 429 with Retry-After, which client-go waits for and retries.
func (s *Server) GuardStatus(next http.Handler) http.Handler {
	return s.guard(next, func(w http.ResponseWriter, _ *http.Request, herr *httpError) { writeStatus(w, herr) }, func(r *http.Request) (operationKind, bool) {
		if w := r.URL.Query().Get("watch"); w == "true" || w == "1" {
			return kindSubscription, true
		}
		return kindQuery, true
	})
}

// guard is Guard answering its rejections with write, counting the
// requests that counts says count against the caller's rate limit of the
// kind it says.
func (s *Server) guard(next http.Handler, write func(http.ResponseWriter, *http.Request, *httpError), counts func(*http.Request) (operationKind, bool)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, herr := s.authenticate(r)
		if herr != nil {
			if herr.status == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="fleetcache"`)
			}
			write(w, r, herr)
			return
		}
		r = r.WithContext(ctx)
		if kind, ok := counts(r); ok {
			if wait, err := s.allowRate(callerOf(ctx, clientAddress(r)), kind); err != nil {
				w.Header().Set("Retry-After", retrySeconds(wait))
				write(w, r, &httpError{http.StatusTooManyRequests, CodeRateLimited, err})
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// writeStatus answers e as the Kubernetes API answers: a metav1.Status.
func writeStatus(w http.ResponseWriter, e *httpError) {
	var st metav1.Status
	var se *statusError
	if errors.As(e.err, &se) {
		st = se.Status()
	} else {
		reason := map[int]metav1.StatusReason{
			http.StatusBadRequest:            metav1.StatusReasonBadRequest,
			http.StatusUnauthorized:          metav1.StatusReasonUnauthorized,
			http.StatusForbidden:             metav1.StatusReasonForbidden,
			http.StatusTooManyRequests:       metav1.StatusReasonTooManyRequests,
			http.StatusServiceUnavailable:    metav1.StatusReasonServiceUnavailable,
			http.StatusRequestEntityTooLarge: metav1.StatusReasonRequestEntityTooLarge,
		}[e.status]
		if reason == "" {
			reason = metav1.StatusReasonInternalError
		}
		st = metav1.Status{Status: metav1.StatusFailure, Code: int32(e.status), Reason: reason, Message: e.err.Error()}
	}
	st.Kind, st.APIVersion = "Status", "v1"
	body, _ := json.Marshal(st) // strings and numbers always encode
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(e.status)
	_, _ = w.Write(append(body, '\n'))
}
