package transport

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// checkOrigin allows a WebSocket upgrade whose Origin header is absent (not
// a browser), names the request's own host (same origin), or is one of
// allowed, exactly, compared without regard to case as "scheme://host" (an
// entry without "://" is compared with the host alone); it returns why
// not otherwise. These are coder/websocket's rules, which the server
// followed before it did its own handshake.
func checkOrigin(r *http.Request, allowed []string) error {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return nil
	}
	u, err := url.Parse(origin)
	if err != nil {
		return fmt.Errorf("parse Origin header %q: %w", origin, err)
	}
	if strings.EqualFold(r.Host, u.Host) {
		return nil
	}
	for _, a := range allowed {
		target := u.Host
		if strings.Contains(a, "://") {
			target = u.Scheme + "://" + u.Host
		}
		if strings.EqualFold(a, target) {
			return nil
		}
	}
	if u.Host == "" {
		return fmt.Errorf("request Origin %q is not a valid URL with a host", origin)
	}
	return fmt.Errorf("request Origin %q is not authorized for Host %q", u.Host, r.Host)
}
