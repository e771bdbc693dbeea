package fleetctl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// DefaultContext is the kubeconfig context used when --context is not
// given and the kubeconfig has one of this name; else the current context.
const DefaultContext = "fleetcache"

// connectOptions are the flags that say where fleetcache is.
type connectOptions struct {
	kubeconfig, context  string
	server, token        string
	certificateAuthority string
	insecure             bool
}

// Client talks to one fleetcache server.
type Client struct {
	// endpoint is the server's /graphql URL.
	endpoint string
	http     *http.Client
	// namespace is the context's namespace, "default" without one.
	namespace string
	// source says where the server came from, for error messages.
	source string
	// idleTimeout overrides the package's idleTimeout (tests).
	idleTimeout time.Duration
}

// Connect builds a Client the way kubectl finds a server: --server (with
// --token) alone if given, without reading the kubeconfig unless --context
// names a context; else the kubeconfig's context --context, or the one
// named DefaultContext, or the current one. The context's user's bearer
// token (or any credential client-go supports: exec plugins, client
// certificates) authenticates.
func Connect(o connectOptions) (*Client, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: o.context}
	overrides.ClusterInfo.Server = o.server
	overrides.ClusterInfo.CertificateAuthority = o.certificateAuthority
	overrides.ClusterInfo.InsecureSkipTLSVerify = o.insecure
	overrides.AuthInfo.Token = o.token
	var cc clientcmd.ClientConfig
	source := ""
	switch {
	case o.server != "" && o.context == "":
		// --server alone: the current context's credentials belong to
		// another server and must not be sent to this one.
		cc = clientcmd.NewDefaultClientConfig(*clientcmdapi.NewConfig(), overrides)
		source = "--server"
	default:
		raw, err := rules.Load()
		if err != nil {
			return nil, fmt.Errorf("load kubeconfig: %w", err)
		}
		overrides.CurrentContext = contextName(raw, o.context)
		cc = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
		source = fmt.Sprintf("context %q", overrides.CurrentContext)
	}
	cfg, err := cc.ClientConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) {
			return nil, fmt.Errorf("no fleetcache server: add a kubeconfig context named %q (or pass --context), or pass --server and --token", DefaultContext)
		}
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	ns, _, err := cc.Namespace()
	if err != nil || ns == "" {
		ns = "default"
	}
	return newClient(cfg, ns, source)
}

// contextName is the context Connect uses: requested, else DefaultContext
// if raw has it, else the current one.
func contextName(raw *clientcmdapi.Config, requested string) string {
	if requested != "" {
		return requested
	}
	if _, ok := raw.Contexts[DefaultContext]; ok {
		return DefaultContext
	}
	return raw.CurrentContext
}

func newClient(cfg *rest.Config, namespace, source string) (*Client, error) {
	u, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("server URL %q: %w", cfg.Host, err)
	}
	u.Path = path.Join("/", u.Path, "graphql")
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("http client for %s: %w", u.Redacted(), err)
	}
	return &Client{endpoint: u.String(), http: hc, namespace: namespace, source: source}, nil
}

// Error is an error the server answered with: its code
// (extensions.code, "BAD_USER_INPUT") and message. It prints as kubectl
// prints the API server's errors: "Error from server (CODE): message".
type Error struct {
	Code, Message string
}

func (e *Error) Error() string {
	if e.Code == "" {
		return "Error from server: " + e.Message
	}
	return fmt.Sprintf("Error from server (%s): %s", e.Code, e.Message)
}

// gqlError is an error of a GraphQL response.
type gqlError struct {
	Message    string `json:"message"`
	Extensions struct {
		Code string `json:"code"`
	} `json:"extensions"`
}

func (g gqlError) err() *Error { return &Error{Code: g.Extensions.Code, Message: g.Message} }

// ErrUnauthorized is the server's refusal of the credentials (HTTP 401, or
// a WebSocket closed with 4403 at connection_init).
var ErrUnauthorized = errors.New("fleetcache refused the credentials (401 Unauthorized)")

// unauthorized explains a 401: which credentials were sent, and how to
// give others.
func (c *Client) unauthorized() error {
	hint := "give a bearer token with --token, or in the user of the kubeconfig context"
	if strings.HasPrefix(c.endpoint, "http://") {
		// clientcmd, as kubectl, applies a user's credentials to https
		// servers only.
		hint = "credentials are sent over https only, as kubectl sends them: use fleetcache's https URL"
	}
	return fmt.Errorf("%w at %s (server from %s): %s", ErrUnauthorized, c.endpoint, c.source, hint)
}

// unreachable explains a failed connection.
func (c *Client) unreachable(err error) error {
	return fmt.Errorf("cannot reach fleetcache at %s (server from %s): %w", c.endpoint, c.source, err)
}

// Query posts a GraphQL query and decodes its data into out. An answer
// with errors is an *Error (the first of them).
func (c *Client) Query(ctx context.Context, query string, vars map[string]any, out any) error {
	body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		return fmt.Errorf("encode request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/graphql-response+json, application/json")
	res, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return c.unreachable(unwrapURLError(err))
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return c.unreachable(err)
	}
	if err := c.checkStatus(res, b); err != nil {
		return err
	}
	var r struct {
		Data   json.RawMessage `json:"data"`
		Errors []gqlError      `json:"errors"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("%s answered HTTP %d with something that is not a GraphQL response (is it fleetcache?): %.200s", c.endpoint, res.StatusCode, b)
	}
	if len(r.Errors) > 0 {
		return r.Errors[0].err()
	}
	if out != nil {
		if err := json.Unmarshal(r.Data, out); err != nil {
			return fmt.Errorf("decode answer: %w", err)
		}
	}
	return nil
}

// checkStatus turns the HTTP statuses that carry no GraphQL answer into
// errors that say what to do.
func (c *Client) checkStatus(res *http.Response, body []byte) error {
	switch {
	case res.StatusCode == http.StatusUnauthorized:
		return c.unauthorized()
	case res.StatusCode == http.StatusNotFound:
		return fmt.Errorf("%s: 404 Not Found: the server from %s is not fleetcache (kubectl fleet uses the kubeconfig context %q if there is one, else the current context; pass --context or --server)",
			c.endpoint, c.source, DefaultContext)
	case res.StatusCode >= 300 && !strings.Contains(res.Header.Get("Content-Type"), "json"):
		return fmt.Errorf("%s: HTTP %s: %.200s", c.endpoint, res.Status, body)
	}
	return nil
}

// unwrapURLError drops net/http's "Post "url": " prefix, which the caller
// states itself.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
