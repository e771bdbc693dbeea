package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/go-cmp/cmp"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/fleetcache/fleetcache/internal/app"
	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/audit"
)

// impersonationRules let a caller impersonate the user bob, the group
// devs, the UID bob-uid and the extra scopes=view, and nothing else.
var impersonationRules = []rbacv1.PolicyRule{
	{Verbs: []string{"impersonate"}, APIGroups: []string{""}, Resources: []string{"users"}, ResourceNames: []string{"bob"}},
	{Verbs: []string{"impersonate"}, APIGroups: []string{""}, Resources: []string{"groups"}, ResourceNames: []string{"devs"}},
	{Verbs: []string{"impersonate"}, APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"uids"}, ResourceNames: []string{"bob-uid"}},
	{Verbs: []string{"impersonate"}, APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"userextras/scopes"}, ResourceNames: []string{"view"}},
}

// TestImpersonation: carol, who may impersonate bob (his group devs, a UID,
// an extra) in c1, the cluster that reviews tokens, sees what bob sees on
// /graphql (HTTP and WebSocket) and /mcp, not what she sees herself;
// impersonating anyone else, or a caller without the rights impersonating
// anyone, is 403 with the API server's words. Every request is in the audit
// log, with the caller and whom it acted as, and no token.
func TestImpersonation(t *testing.T) {
	auditPath := filepath.Join(t.TempDir(), "audit.log")
	f := startAuthFixtureOpts(t, func(o *app.Options) { o.Audit = audit.Options{Path: auditPath} })
	env := testbed.Env(t)
	if err := env.Cluster("c1").Grant(t.Context(), "carol", "", impersonationRules...); err != nil {
		t.Fatal(err)
	}
	bobSees, _, _ := f.visible(t, "bob")
	if len(bobSees) != 2 {
		t.Fatalf("bob sees %v, want his two Pods of c3", bobSees)
	}
	if carolSees, _, _ := f.visible(t, "carol"); len(carolSees) != 0 {
		t.Fatalf("carol sees %v herself, want nothing", carolSees)
	}
	asBob := http.Header{"Impersonate-User": {"bob"}}
	asBobFully := http.Header{"Impersonate-User": {"bob"}, "Impersonate-Group": {"devs"}, "Impersonate-Uid": {"bob-uid"}, "Impersonate-Extra-Scopes": {"view"}}

	t.Run("graphql", func(t *testing.T) {
		for _, h := range []http.Header{asBob, asBobFully} {
			if got, _, _ := f.visibleAs(t, "carol", h); !cmp.Equal(got, bobSees) {
				t.Errorf("carol as %v sees %v, want bob's %v", h, got, bobSees)
			}
		}
		for _, tt := range []struct {
			name, user string
			header     http.Header
			status     int
			code, msg  string
		}{
			{"another user", "carol", http.Header{"Impersonate-User": {"alice"}}, http.StatusForbidden, "FORBIDDEN",
				`users "alice" is forbidden: User "carol" cannot impersonate resource "users" in API group "" at the cluster scope`},
			{"another group", "carol", http.Header{"Impersonate-User": {"bob"}, "Impersonate-Group": {"system:masters"}}, http.StatusForbidden, "FORBIDDEN",
				`groups "system:masters" is forbidden: User "carol" cannot impersonate resource "groups" in API group "" at the cluster scope`},
			{"another extra", "carol", http.Header{"Impersonate-User": {"bob"}, "Impersonate-Extra-Scopes": {"admin"}}, http.StatusForbidden, "FORBIDDEN",
				`userextras.authentication.k8s.io "admin" is forbidden: User "carol" cannot impersonate resource "userextras/scopes" in API group "authentication.k8s.io" at the cluster scope`},
			{"another UID", "carol", http.Header{"Impersonate-User": {"bob"}, "Impersonate-Uid": {"alice-uid"}}, http.StatusForbidden, "FORBIDDEN",
				`uids.authentication.k8s.io "alice-uid" is forbidden: User "carol" cannot impersonate resource "uids" in API group "authentication.k8s.io" at the cluster scope`},
			{"a caller without rights", "alice", asBob, http.StatusForbidden, "FORBIDDEN",
				`users "bob" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope`},
			{"a group without a user", "carol", http.Header{"Impersonate-Group": {"devs"}}, http.StatusBadRequest, "BAD_REQUEST",
				`requested group "devs" without impersonating a user`},
		} {
			t.Run(tt.name, func(t *testing.T) {
				status, r, err := f.postAs(token(t, tt.user), tt.header, visibleQuery)
				if err != nil {
					t.Fatal(err)
				}
				if status != tt.status || len(r.Errors) != 1 || r.Errors[0].Extensions.Code != tt.code || r.Errors[0].Message != tt.msg || len(r.Data) > 0 {
					t.Errorf("got %d %s %+v; want %d %s %q", status, r.Data, r.Errors, tt.status, tt.code, tt.msg)
				}
			})
		}
	})

	t.Run("websocket", func(t *testing.T) {
		carol := token(t, "carol")
		// In connection_init's payload, as a browser sends it.
		got, code := wsVisible(t, f.addr, nil, map[string]any{"authorization": "Bearer " + carol, "Impersonate-User": "bob", "Impersonate-Group": []string{"devs"}})
		if code != 0 || !cmp.Equal(got, bobSees) {
			t.Errorf("carol as bob in connection_init: %v, close %d; want %v", got, code, bobSees)
		}
		// In the upgrade request's headers, as a backend sends them.
		got, code = wsVisible(t, f.addr, http.Header{"Authorization": {"Bearer " + carol}, "Impersonate-User": {"bob"}}, map[string]any{})
		if code != 0 || !cmp.Equal(got, bobSees) {
			t.Errorf("carol as bob in the headers: %v, close %d; want %v", got, code, bobSees)
		}
		if _, code := wsVisible(t, f.addr, nil, map[string]any{"authorization": "Bearer " + carol, "Impersonate-User": "alice"}); code != 4403 {
			t.Errorf("carol as alice in connection_init: close %d, want 4403", code)
		}
		if _, code := wsVisible(t, f.addr, http.Header{"Authorization": {"Bearer " + carol}, "Impersonate-User": {"alice"}}, nil); code != http.StatusForbidden {
			t.Errorf("carol as alice in the headers: %d, want HTTP 403", code)
		}
	})

	t.Run("mcp", func(t *testing.T) {
		count := func(header http.Header) (map[string]int, error) {
			cs, err := mcpConnect(t, "http://"+f.addr+"/mcp", header)
			if err != nil {
				return nil, err
			}
			res, err := cs.CallTool(t.Context(), &mcpsdk.CallToolParams{Name: "count_resources", Arguments: map[string]any{
				"groupBy": "CLUSTER", "namespaces": []string{nsA, nsB}, "kinds": []string{"ConfigMap", "Pod"}}})
			if err != nil || res.IsError {
				return nil, fmt.Errorf("count_resources: %v %+v", err, res)
			}
			var out struct {
				Groups []struct {
					Value string
					Count int
				}
			}
			b, _ := json.Marshal(res.StructuredContent)
			if err := json.Unmarshal(b, &out); err != nil {
				return nil, err
			}
			counts := map[string]int{}
			for _, g := range out.Groups {
				counts[g.Value] = g.Count
			}
			return counts, nil
		}
		carol := http.Header{"Authorization": {"Bearer " + token(t, "carol")}}
		got, err := count(carol)
		if err != nil || len(got) != 0 {
			t.Errorf("carol counts %v, %v; want nothing", got, err)
		}
		asBob := carol.Clone()
		asBob.Set("Impersonate-User", "bob")
		got, err = count(asBob)
		if diff := cmp.Diff(map[string]int{"c3": 2}, got); err != nil || diff != "" {
			t.Errorf("carol as bob counts (-want +got), %v:\n%s", err, diff)
		}
		asAlice := carol.Clone()
		asAlice.Set("Impersonate-User", "alice")
		if _, err := count(asAlice); err == nil || !strings.Contains(err.Error(), "Forbidden") {
			t.Errorf("carol as alice: %v, want Forbidden", err)
		}
	})

	t.Run("audit", func(t *testing.T) {
		type line struct {
			Stage            string
			RequestURI       string
			Verb             string
			User             struct{ Username string }
			ImpersonatedUser *struct {
				Username string
				UID      string
				Groups   []string
				Extra    map[string][]string
			}
			ResponseStatus *struct{ Code int }
			Annotations    map[string]string
		}
		var lines []line
		var raw []byte
		find := func(match func(l line) bool) (line, bool) {
			for _, l := range lines {
				if match(l) {
					return l, true
				}
			}
			return line{}, false
		}
		impersonatedFully := func(l line) bool {
			i := l.ImpersonatedUser
			return l.RequestURI == "/graphql" && l.User.Username == "carol" && i != nil && i.Username == "bob" && i.UID == "bob-uid" &&
				cmp.Equal(i.Groups, []string{"devs", "system:authenticated"}) && cmp.Equal(i.Extra, map[string][]string{"scopes": {"view"}})
		}
		refused := func(l line) bool {
			return l.User.Username == "alice" && l.ResponseStatus != nil && l.ResponseStatus.Code == http.StatusForbidden &&
				l.Annotations[audit.AnnotationDecision] == "forbid" && strings.Contains(l.Annotations[audit.AnnotationReason], `cannot impersonate resource "users"`)
		}
		wsOperation := func(l line) bool {
			return l.Annotations[audit.AnnotationConnection] != "" && l.User.Username == "carol" && l.ImpersonatedUser != nil &&
				l.ImpersonatedUser.Username == "bob" && l.Annotations[audit.AnnotationClusters] == "c3" && l.Stage == audit.StageResponseComplete
		}
		viaMCP := func(l line) bool {
			return l.RequestURI == "/mcp" && l.ImpersonatedUser != nil && l.ImpersonatedUser.Username == "bob" && l.Verb == "post"
		}
		testcluster.Eventually(t, 10*time.Second, "the audit lines", func() (bool, string) {
			var err error
			raw, err = os.ReadFile(auditPath)
			if err != nil {
				return false, err.Error()
			}
			lines = nil
			for _, s := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
				var l line
				if err := json.Unmarshal([]byte(s), &l); err != nil {
					return false, fmt.Sprintf("line %q: %v", s, err)
				}
				lines = append(lines, l)
			}
			_, a := find(impersonatedFully)
			_, b := find(refused)
			_, c := find(wsOperation)
			_, d := find(viaMCP)
			return a && b && c && d, fmt.Sprint(a, b, c, d)
		})
		l, _ := find(impersonatedFully)
		want := map[string]string{
			audit.AnnotationOperationType: "query", audit.AnnotationHTTPMethod: "POST", audit.AnnotationClusters: "c3", audit.AnnotationResources: "pods",
		}
		for k, v := range want {
			if l.Annotations[k] != v {
				t.Errorf("annotation %s = %q, want %q: %+v", k, l.Annotations[k], v, l)
			}
		}
		if l.ResponseStatus == nil || l.ResponseStatus.Code != http.StatusOK {
			t.Errorf("status %+v, want 200", l.ResponseStatus)
		}
		for _, u := range []string{"alice", "bob", "carol"} {
			if strings.Contains(string(raw), token(t, u)) {
				t.Errorf("the token of %s is in the audit log", u)
			}
		}
	})
}

// wsVisible runs visibleQuery over a WebSocket opened with header, whose
// connection_init carries payload: the objects it sees, or the close code
// (an HTTP status when the upgrade is refused).
func wsVisible(t *testing.T, addr string, header http.Header, payload map[string]any) ([]string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, "ws://"+addr+"/graphql", &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}, HTTPHeader: header})
	if err != nil {
		if resp != nil {
			return nil, resp.StatusCode
		}
		t.Fatal(err)
	}
	defer c.CloseNow()
	init, _ := json.Marshal(map[string]any{"type": "connection_init", "payload": payload})
	sub, _ := json.Marshal(map[string]any{"type": "subscribe", "id": "1", "payload": map[string]any{"query": visibleQuery}})
	for _, msg := range [][]byte{init, sub} {
		if err := c.Write(ctx, websocket.MessageText, msg); err != nil {
			return nil, int(websocket.CloseStatus(err))
		}
	}
	for {
		_, data, err := c.Read(ctx)
		if err != nil {
			return nil, int(websocket.CloseStatus(err))
		}
		var m struct {
			Type    string
			Payload struct {
				Data *struct {
					Resources struct {
						Edges []struct {
							Node struct{ Cluster, Namespace, Kind, Name string }
						}
					}
				}
			}
		}
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		switch m.Type {
		case "next":
			var out []string
			for _, e := range m.Payload.Data.Resources.Edges {
				n := e.Node
				out = append(out, n.Cluster+"/"+n.Namespace+"/"+n.Kind+"/"+n.Name)
			}
			return out, 0
		case "error":
			t.Fatalf("query failed: %s", data)
		}
	}
}

// headers adds its headers to every request.
type headers struct {
	h    http.Header
	next http.RoundTripper
}

func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.h {
		r.Header[k] = v
	}
	return h.next.RoundTrip(r)
}

// mcpConnect opens an MCP client session (the MCP Go SDK's client) whose
// requests carry header.
func mcpConnect(t *testing.T, url string, header http.Header) (*mcpsdk.ClientSession, error) {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	c := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "test", Version: "v0"}, nil)
	cs, err := c.Connect(t.Context(), &mcpsdk.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: headers{header, tr}}}, nil)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs, nil
}
