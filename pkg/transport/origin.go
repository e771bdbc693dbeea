package transport

import "strings"

// originPatterns turns exact origins into coder/websocket's
// AcceptOptions.OriginPatterns, which it matches with path.Match against
// "scheme://host" when a pattern holds "://": the metacharacters an origin
// may hold (the brackets of an IPv6 host) are escaped, so that each
// pattern matches its origin only.
func originPatterns(origins []string) []string {
	if len(origins) == 0 {
		return nil
	}
	esc := strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`, `]`, `\]`)
	out := make([]string, 0, len(origins))
	for _, o := range origins {
		out = append(out, esc.Replace(o))
	}
	return out
}
