package app_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/go-cmp/cmp"

	"github.com/fleetcache/fleetcache/internal/app"
	"github.com/fleetcache/fleetcache/internal/testcert"
	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/informers"
	"github.com/fleetcache/fleetcache/pkg/transport"
)

// selfSigned writes a self-signed certificate for 127.0.0.1 and its key to
// dir, and returns their paths and a pool that trusts the certificate.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	p := testcert.New(t, "fleetcache test")
	certFile, keyFile = p.Write(t, dir)
	return certFile, keyFile, p.Pool
}

func TestServingConfig(t *testing.T) {
	certFile, keyFile, _ := selfSigned(t, t.TempDir())
	file := writeConfig(t, `
serving:
  tlsCertFile: `+certFile+`
  tlsPrivateKeyFile: `+keyFile+`
  corsAllowedOrigins: [https://portal.example.com]
  rateLimit: {queriesPerSecond: 2.5, subscriptionBurst: 3}
  cacheSecretData: true
`)
	fromFile := app.ServingConfig{
		TLSCertFile: certFile, TLSPrivateKeyFile: keyFile,
		CORSAllowedOrigins: []string{"https://portal.example.com"},
		RateLimit:          app.RateLimitConfig{QueriesPerSecond: 2.5, SubscriptionBurst: 3},
		CacheSecretData:    true,
	}
	tests := []struct {
		name string
		args []string
		want app.ServingConfig
	}{
		{name: "file", args: []string{"--config", file}, want: fromFile},
		{
			name: "flags",
			args: []string{
				"--tls-cert-file", "/c", "--tls-private-key-file=/k", "--cors-allowed-origins", "https://a.example, http://localhost:3000",
				"--rate-limit-queries-per-second", "10", "--rate-limit-query-burst", "20",
				"--rate-limit-subscriptions-per-second", "0.5", "--rate-limit-subscription-burst", "2", "--cache-secret-data",
			},
			want: app.ServingConfig{
				TLSCertFile: "/c", TLSPrivateKeyFile: "/k", CORSAllowedOrigins: []string{"https://a.example", "http://localhost:3000"},
				RateLimit:       app.RateLimitConfig{QueriesPerSecond: 10, QueryBurst: 20, SubscriptionsPerSecond: 0.5, SubscriptionBurst: 2},
				CacheSecretData: true,
			},
		},
		{
			name: "flags win over the file",
			args: []string{"--config", file, "--cors-allowed-origins", "https://b.example", "--cache-secret-data=false", "--rate-limit-queries-per-second", "7"},
			want: func() app.ServingConfig {
				s := fromFile
				s.CORSAllowedOrigins = []string{"https://b.example"}
				s.CacheSecretData = false
				s.RateLimit.QueriesPerSecond = 7
				return s
			}(),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := app.ParseArgs(tt.args, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got.Serving); diff != "" {
				t.Errorf("serving (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("options", func(t *testing.T) {
		c, err := app.ParseArgs([]string{"--config", file}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		o := c.Options()
		got := []any{o.TLSCertFile, o.TLSPrivateKeyFile, o.CORSAllowedOrigins, o.Transport.RateLimit, o.Informers.CacheSecretData}
		want := []any{certFile, keyFile, []string{"https://portal.example.com"},
			// Zero fields get the command's defaults.
			transport.RateLimit{QueriesPerSecond: 2.5, QueryBurst: 8000, SubscriptionsPerSecond: 50, SubscriptionBurst: 3}, true}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("options (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(transport.RateLimit{QueriesPerSecond: 4000, QueryBurst: 8000, SubscriptionsPerSecond: 50, SubscriptionBurst: 100},
			app.Config{}.Options().Transport.RateLimit); diff != "" {
			t.Errorf("default rate limits (-want +got):\n%s", diff)
		}
	})
}

func TestServingConfigValidate(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, _ := selfSigned(t, dir)
	_, otherKey, _ := selfSigned(t, t.TempDir())
	tests := []struct {
		name    string
		serving app.ServingConfig
		want    []string // each error names its field
	}{
		{name: "TLS and origins", serving: app.ServingConfig{
			TLSCertFile: certFile, TLSPrivateKeyFile: keyFile,
			CORSAllowedOrigins: []string{"https://portal.example.com", "http://localhost:3000", "http://[::1]:8080"},
		}},
		{name: "cert without key", serving: app.ServingConfig{TLSCertFile: certFile},
			want: []string{"serving.tlsPrivateKeyFile: must be set with serving.tlsCertFile"}},
		{name: "key without cert", serving: app.ServingConfig{TLSPrivateKeyFile: keyFile},
			want: []string{"serving.tlsCertFile: must be set with serving.tlsPrivateKeyFile"}},
		{name: "missing file", serving: app.ServingConfig{TLSCertFile: filepath.Join(dir, "nope.crt"), TLSPrivateKeyFile: keyFile},
			want: []string{"serving.tlsCertFile:", "nope.crt"}},
		{name: "key of another certificate", serving: app.ServingConfig{TLSCertFile: certFile, TLSPrivateKeyFile: otherKey},
			want: []string{"serving.tlsCertFile:", "private key does not match public key"}},
		{name: "bad origins", serving: app.ServingConfig{CORSAllowedOrigins: []string{
			"*", "https://*.example.com", "portal.example.com", "https://portal.example.com/app", "https://Portal.example.com", "ftp://x", "https://",
		}}, want: []string{
			"serving.corsAllowedOrigins[0]: \"*\": wildcards are not allowed",
			"serving.corsAllowedOrigins[1]:",
			"serving.corsAllowedOrigins[2]: \"portal.example.com\": must start with https:// or http://",
			"serving.corsAllowedOrigins[3]: \"https://portal.example.com/app\": an origin is scheme://host[:port], without a path",
			"serving.corsAllowedOrigins[4]: \"https://Portal.example.com\": write it in lower case",
			"serving.corsAllowedOrigins[5]:",
			"serving.corsAllowedOrigins[6]: \"https://\": has no host",
		}},
		{name: "negative rates", serving: app.ServingConfig{RateLimit: app.RateLimitConfig{QueriesPerSecond: -1, QueryBurst: -1, SubscriptionsPerSecond: -1, SubscriptionBurst: -1}},
			want: []string{
				"serving.rateLimit.queriesPerSecond: must not be negative", "serving.rateLimit.queryBurst: must not be negative",
				"serving.rateLimit.subscriptionsPerSecond: must not be negative", "serving.rateLimit.subscriptionBurst: must not be negative",
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkValidate(t, app.Config{Serving: tt.serving}.Validate(), tt.want)
		})
	}
}

// TestCORS sends preflights and requests from an allowed and a disallowed
// origin to the aggregator's handler, and opens WebSockets from both.
func TestCORS(t *testing.T) {
	const portal, evil = "https://portal.example.com", "https://evil.example.com"
	agg, err := app.New(app.Options{CORSAllowedOrigins: []string{portal}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(agg.Handler)
	t.Cleanup(srv.Close)
	endpoint := srv.URL + "/graphql"
	send := func(t *testing.T, method, origin string, header map[string]string, body string) *http.Response {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, endpoint, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res
	}
	corsHeaders := []string{"Access-Control-Allow-Origin", "Access-Control-Allow-Methods", "Access-Control-Allow-Headers", "Access-Control-Max-Age", "Access-Control-Allow-Credentials", "Access-Control-Expose-Headers"}
	headers := func(res *http.Response) map[string]string {
		out := map[string]string{}
		for _, h := range corsHeaders {
			if v := res.Header.Get(h); v != "" {
				out[h] = v
			}
		}
		return out
	}
	preflight := map[string]string{"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type, authorization"}
	query := map[string]string{"Content-Type": "application/json"}
	const body = `{"query":"{ clusters { name } }"}`
	tests := []struct {
		name        string
		method      string
		origin      string
		header      map[string]string
		body        string
		wantStatus  int
		wantHeaders map[string]string
	}{
		{name: "preflight, allowed origin", method: http.MethodOptions, origin: portal, header: preflight, wantStatus: http.StatusNoContent,
			wantHeaders: map[string]string{
				"Access-Control-Allow-Origin":  portal,
				"Access-Control-Allow-Methods": "GET, POST",
				"Access-Control-Allow-Headers": "Content-Type, Authorization, Accept",
				"Access-Control-Max-Age":       "600",
			}},
		{name: "preflight, disallowed origin", method: http.MethodOptions, origin: evil, header: preflight, wantStatus: http.StatusForbidden,
			wantHeaders: map[string]string{}},
		{name: "query, allowed origin", method: http.MethodPost, origin: portal, header: query, body: body, wantStatus: http.StatusOK,
			wantHeaders: map[string]string{"Access-Control-Allow-Origin": portal, "Access-Control-Expose-Headers": "Retry-After"}},
		{name: "query, disallowed origin", method: http.MethodPost, origin: evil, header: query, body: body, wantStatus: http.StatusOK,
			wantHeaders: map[string]string{}},
		{name: "query, no origin", method: http.MethodPost, header: query, body: body, wantStatus: http.StatusOK,
			wantHeaders: map[string]string{}},
		{name: "OPTIONS that is no preflight", method: http.MethodOptions, origin: portal, wantStatus: http.StatusMethodNotAllowed,
			wantHeaders: map[string]string{"Access-Control-Allow-Origin": portal, "Access-Control-Expose-Headers": "Retry-After"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := send(t, tt.method, tt.origin, tt.header, tt.body)
			if res.StatusCode != tt.wantStatus {
				t.Errorf("status %d, want %d", res.StatusCode, tt.wantStatus)
			}
			if diff := cmp.Diff(tt.wantHeaders, headers(res)); diff != "" {
				t.Errorf("CORS headers (-want +got):\n%s", diff)
			}
			if tt.origin != "" && !strings.Contains(strings.Join(res.Header.Values("Vary"), ","), "Origin") {
				t.Errorf("Vary %q lacks Origin", res.Header.Values("Vary"))
			}
		})
	}

	for _, tc := range []struct {
		name, origin string
		allowed      bool
	}{
		{name: "WebSocket, allowed origin", origin: portal, allowed: true},
		{name: "WebSocket, same origin", origin: srv.URL, allowed: true},
		{name: "WebSocket, disallowed origin", origin: evil, allowed: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			c, res, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(endpoint, "http"), &websocket.DialOptions{
				Subprotocols: []string{"graphql-transport-ws"}, HTTPHeader: http.Header{"Origin": {tc.origin}},
			})
			if !tc.allowed {
				if err == nil || res == nil || res.StatusCode != http.StatusForbidden {
					t.Fatalf("dial from %s: %v, %+v; want 403", tc.origin, err, res)
				}
				return
			}
			if err != nil {
				t.Fatalf("dial from %s: %v", tc.origin, err)
			}
			defer c.CloseNow()
			if got := wsQuery(t, c, `{ clusters { name } }`); !strings.Contains(got, `"clusters":[]`) {
				t.Errorf("answer %s", got)
			}
		})
	}
}

// wsQuery runs one operation over a new graphql-transport-ws connection and
// returns the payload of its first next message.
func wsQuery(t *testing.T, c *websocket.Conn, query string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	write := func(v any) {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Write(ctx, websocket.MessageText, b); err != nil {
			t.Fatal(err)
		}
	}
	read := func(want string) json.RawMessage {
		for {
			_, b, err := c.Read(ctx)
			if err != nil {
				t.Fatalf("read, waiting for %s: %v", want, err)
			}
			var m struct {
				Type    string
				Payload json.RawMessage
			}
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			if m.Type == "ping" {
				continue
			}
			if m.Type != want {
				t.Fatalf("got %s, want %s", b, want)
			}
			return m.Payload
		}
	}
	write(map[string]any{"type": "connection_init"})
	read("connection_ack")
	write(map[string]any{"id": "1", "type": "subscribe", "payload": map[string]any{"query": query}})
	return string(read("next"))
}

// TestRunTLS runs the aggregator with a certificate generated here, and
// asks it over https and wss with a client that trusts it; then renews the
// certificate's files, and new connections get the new one.
func TestRunTLS(t *testing.T) {
	env := testbed.Env(t)
	dir := t.TempDir()
	certFile, keyFile, pool := selfSigned(t, dir)
	kubeconfig := filepath.Join(dir, "config")
	if err := env.WriteKubeconfig(kubeconfig, "admin", env.Cluster("c1")); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- app.Run(ctx, app.Options{
			Kubeconfigs: []string{kubeconfig},
			Addr:        addr,
			TLSCertFile: certFile, TLSPrivateKeyFile: keyFile, TLSReloadInterval: 100 * time.Millisecond,
			Informers: informers.Options{Resources: []string{"namespaces"}},
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}
	t.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	const query = `{ clusters { name status } }`
	var answer string
	testcluster.Eventually(t, 60*time.Second, "c1 synced, over https", func() (bool, string) {
		res, err := client.Post("https://"+addr+"/graphql", "application/json", strings.NewReader(`{"query":"`+query+`"}`))
		if err != nil {
			return false, err.Error()
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		answer = string(b)
		if res.TLS == nil {
			return false, "not over TLS"
		}
		return strings.Contains(answer, `{"name":"c1","status":"SYNCED"}`), answer
	})

	// Plain HTTP gets no answer on the TLS port.
	if res, err := http.Post("http://"+addr+"/graphql", "application/json", strings.NewReader(`{"query":"`+query+`"}`)); err == nil {
		res.Body.Close()
		if res.StatusCode == http.StatusOK {
			t.Error("plain HTTP answered with 200 on the TLS port")
		}
	}
	// A client that does not trust the certificate fails the handshake.
	if _, err := http.Post("https://"+addr+"/graphql", "application/json", strings.NewReader(`{"query":"`+query+`"}`)); err == nil ||
		!strings.Contains(err.Error(), "certificate") {
		t.Errorf("untrusting client: %v, want a certificate error", err)
	}

	dctx, dcancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer dcancel()
	wsClient := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	c, _, err := websocket.Dial(dctx, "wss://"+addr+"/graphql", &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}, HTTPClient: wsClient})
	if err != nil {
		t.Fatalf("wss: %v", err)
	}
	defer c.CloseNow()
	if got := wsQuery(t, c, query); !strings.Contains(got, `{"name":"c1","status":"SYNCED"}`) {
		t.Errorf("wss answer %s", got)
	}
	_ = c.Close(websocket.StatusNormalClosure, "")

	// Renewed in place (another key): new connections get it, no restart.
	_, _, renewed := selfSigned(t, dir)
	testcluster.Eventually(t, 30*time.Second, "the renewed certificate served", func() (bool, string) {
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: renewed}}
		defer tr.CloseIdleConnections()
		res, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Post("https://"+addr+"/graphql", "application/json", strings.NewReader(`{"query":"`+query+`"}`))
		if err != nil {
			return false, err.Error()
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK, res.Status
	})
	tr.CloseIdleConnections()
	if _, err := client.Post("https://"+addr+"/graphql", "application/json", strings.NewReader(`{"query":"`+query+`"}`)); err == nil ||
		!strings.Contains(err.Error(), "certificate") {
		t.Errorf("a client that trusts only the old certificate: %v, want a certificate error", err)
	}
}
