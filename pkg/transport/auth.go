package transport

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/fleetcache/fleetcache/pkg/authn"
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

// authenticate returns the context of an HTTP request with its caller,
// authenticated from the Authorization header. Without an Authenticator
// every request is served as is.
func (s *Server) authenticate(r *http.Request) (context.Context, *httpError) {
	if s.opts.Authenticator == nil {
		return r.Context(), nil
	}
	token, ok := authn.BearerToken(r.Header.Get("Authorization"))
	if !ok {
		return nil, &httpError{http.StatusUnauthorized, CodeUnauthenticated, errors.New("unauthenticated: send Authorization: Bearer <token>")}
	}
	u, herr := s.authenticateToken(r.Context(), token)
	if herr != nil {
		return nil, herr
	}
	return authn.WithUser(r.Context(), u), nil
}

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
// and the caller's query rate limit (Options.RateLimit), which each POST
// counts against. Rejections are answered as /graphql answers them: 401
// with WWW-Authenticate, 503 when the token cannot be reviewed, 429 with
// Retry-After, each with a JSON body carrying the error's code. Without an
// Authenticator only the rate limit applies.
func (s *Server) Guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, herr := s.authenticate(r)
		if herr != nil {
			s.refuse(w, r, herr)
			return
		}
		r = r.WithContext(ctx)
		if r.Method == http.MethodPost && !s.allowHTTP(w, r, kindQuery) {
			return
		}
		next.ServeHTTP(w, r)
	})
}
