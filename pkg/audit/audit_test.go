package audit

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/fleetcache/fleetcache/pkg/authn"
)

// logFile returns the path of a new audit log file, and a function that
// reads its lines, decoded.
func logFile(t *testing.T) (string, func() []map[string]any) {
	path := filepath.Join(t.TempDir(), "audit.log")
	return path, func() []map[string]any {
		t.Helper()
		data, err := os.ReadFile(path)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		var out []map[string]any
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			if line == "" {
				continue
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("line %q: %v", line, err)
			}
			out = append(out, m)
		}
		return out
	}
}

func fakeClock() func() time.Time {
	var mu sync.Mutex
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(250 * time.Millisecond)
		return now
	}
}

// TestMiddleware: a line per request with who asked what and the decision;
// a long request writes a line when its response starts too; the request's
// headers (its token) are never written.
func TestMiddleware(t *testing.T) {
	path, lines := logFile(t)
	log, err := New(Options{Path: path, Now: fakeClock()})
	if err != nil {
		t.Fatal(err)
	}
	alice := &authn.User{Name: "alice", UID: "a-1", Groups: []string{"system:authenticated"}}
	bob := &authn.User{Name: "bob", Groups: []string{"system:authenticated"}}
	h := log.Middleware(FullURI)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ev := From(r.Context())
		ev.SetUser(alice)
		ev.SetImpersonated(bob)
		ev.SetResource("watch", ObjectRef{Resource: "pods", Namespace: "ns", APIVersion: "v1"}, "c1")
		ev.Touch("c1", "pods")
		ev.Decide(true, "")
		w.WriteHeader(http.StatusOK)
		ev.Started()
		ev.Started() // once only
	}))
	req := httptest.NewRequest(http.MethodGet, "/clusters/c1/api/v1/namespaces/ns/pods?watch=true", nil)
	req.Header.Set("Authorization", "Bearer secret-token")
	req.Header.Set("User-Agent", "kubectl/v1.36.3")
	req.RemoteAddr = "127.0.0.1:5555"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)

	got := lines()
	if len(got) != 2 {
		t.Fatalf("%d lines, want 2: %v", len(got), got)
	}
	id := rec.Header().Get(HeaderAuditID)
	common := map[string]any{
		"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Metadata", "auditID": id,
		"requestURI": "/clusters/c1/api/v1/namespaces/ns/pods?watch=true", "verb": "watch",
		"user":             map[string]any{"username": "alice", "uid": "a-1", "groups": []any{"system:authenticated"}},
		"impersonatedUser": map[string]any{"username": "bob", "groups": []any{"system:authenticated"}},
		"sourceIPs":        []any{"127.0.0.1"}, "userAgent": "kubectl/v1.36.3",
		"objectRef":                map[string]any{"resource": "pods", "namespace": "ns", "apiVersion": "v1"},
		"requestReceivedTimestamp": "2026-11-28T12:00:00.250000Z",
	}
	started := clone(common)
	started["stage"], started["stageTimestamp"] = "ResponseStarted", "2026-11-28T12:00:00.500000Z"
	started["annotations"] = map[string]any{"authorization.k8s.io/decision": "allow", "fleetcache.io/http-method": "GET",
		"fleetcache.io/clusters": "c1", "fleetcache.io/resources": "pods"}
	complete := clone(common)
	complete["stage"], complete["stageTimestamp"] = "ResponseComplete", "2026-11-28T12:00:00.750000Z"
	complete["responseStatus"] = map[string]any{"metadata": map[string]any{}, "code": float64(200)}
	complete["annotations"] = map[string]any{"authorization.k8s.io/decision": "allow", "fleetcache.io/http-method": "GET",
		"fleetcache.io/clusters": "c1", "fleetcache.io/resources": "pods", "fleetcache.io/latency-seconds": "0.500000"}
	if diff := cmp.Diff([]map[string]any{started, complete}, got); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
	if strings.Contains(fmtLines(got), "secret-token") {
		t.Error("the token is in the log")
	}
}

func clone(m map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

func fmtLines(lines []map[string]any) string {
	b, _ := json.Marshal(lines)
	return string(b)
}

// TestSub: each operation of a WebSocket is an event of its own, with the
// connection's caller, and the connection is an event of 101.
func TestSub(t *testing.T) {
	path, read := logFile(t)
	log, err := New(Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	h := log.Middleware(PathOnly)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ev := From(r.Context())
		ev.SetUser(&authn.User{Name: "alice"})
		op := ev.Sub("1")
		op.SetOperation("Watch", "subscription")
		op.Started()
		op.SetErrors([]string{"SLOW_CONSUMER"})
		op.Complete(http.StatusOK)
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		conn.Close()
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/graphql?query=secret")
	if err == nil {
		resp.Body.Close()
	}
	var lines []map[string]any
	deadline := time.Now().Add(10 * time.Second)
	for len(lines) < 3 && time.Now().Before(deadline) {
		lines = read()
	}
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3: %v", len(lines), lines)
	}
	type line struct {
		AuditID, Stage, RequestURI string
		User                       struct{ Username string }
		ResponseStatus             *struct{ Code int }
		Annotations                map[string]string
	}
	var got []line
	b, _ := json.Marshal(lines)
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	conn := got[2].AuditID
	want := []line{
		{AuditID: conn + "/1", Stage: StageResponseStarted, RequestURI: "/graphql", User: struct{ Username string }{"alice"},
			Annotations: map[string]string{AnnotationConnection: conn, AnnotationOperationName: "Watch", AnnotationOperationType: "subscription", AnnotationHTTPMethod: "GET"}},
		{AuditID: conn + "/1", Stage: StageResponseComplete, RequestURI: "/graphql", User: struct{ Username string }{"alice"}, ResponseStatus: &struct{ Code int }{200},
			Annotations: map[string]string{AnnotationConnection: conn, AnnotationOperationName: "Watch", AnnotationOperationType: "subscription", AnnotationHTTPMethod: "GET", AnnotationErrors: "SLOW_CONSUMER"}},
		{AuditID: conn, Stage: StageResponseComplete, RequestURI: "/graphql", User: struct{ Username string }{"alice"}, ResponseStatus: &struct{ Code int }{101},
			Annotations: map[string]string{AnnotationHTTPMethod: "GET"}},
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreMapEntries(func(k, _ string) bool { return k == AnnotationLatency })); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
}

// TestOff: level None, or no path, writes nothing and leaves handlers as
// they are; a path appends to its file.
func TestOff(t *testing.T) {
	var out bytes.Buffer
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if From(r.Context()) != nil {
			t.Error("an event without a log")
		}
		From(r.Context()).SetUser(&authn.User{Name: "x"}) // nil-safe
	})
	for _, opts := range []Options{{Path: "-", Level: LevelNone, Stdout: &out}, {Stdout: &out}} {
		log, err := New(opts)
		if err != nil {
			t.Fatal(err)
		}
		log.Middleware(FullURI)(next).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
	}
	if out.Len() != 0 {
		t.Errorf("lines written: %s", out.String())
	}
	if _, err := New(Options{Level: "Request"}); err == nil {
		t.Error("level Request accepted")
	}

	path := filepath.Join(t.TempDir(), "audit.log")
	log, err := New(Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		log.Middleware(FullURI)(http.NotFoundHandler()).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/fleet/api", nil))
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "\n"); n != 2 {
		t.Errorf("%d lines in the file, want 2:\n%s", n, data)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode %v, want 0600", fi.Mode().Perm())
	}
}
