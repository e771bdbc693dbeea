package health_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetcache/fleetcache/pkg/health"
)

var (
	errRefused   = errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")
	errForbidden = errors.New(`configmaps is forbidden: User "alice" cannot list resource "configmaps"`)
)

func TestInitialSyncError(t *testing.T) {
	tests := []struct {
		name    string
		steps   func(tr *health.Tracker)
		wantErr string // "" when ready
	}{
		{
			name:    "registered",
			steps:   func(tr *health.Tracker) {},
			wantErr: "initial sync not done: PENDING: waiting for discovery",
		},
		{
			name:    "unreachable before discovery",
			steps:   func(tr *health.Tracker) { tr.Probe("c1", errRefused) },
			wantErr: "initial sync not done: DISCONNECTED: api server unreachable: " + errRefused.Error(),
		},
		{
			name: "one type listing",
			steps: func(tr *health.Tracker) {
				tr.ResourceStarting("c1", "pods", "Pod")
				tr.ResourceStarting("c1", "configmaps", "ConfigMap")
				tr.ResourceSynced("c1", "pods")
			},
			wantErr: "initial sync not done: SYNCING: initial sync in progress: [configmaps]",
		},
		{
			name: "synced",
			steps: func(tr *health.Tracker) {
				tr.ResourceStarting("c1", "pods", "Pod")
				tr.ResourceSynced("c1", "pods")
			},
		},
		{
			name: "forbidden type",
			steps: func(tr *health.Tracker) {
				tr.ResourceStarting("c1", "pods", "Pod")
				tr.ResourceSynced("c1", "pods")
				tr.ResourceStarting("c1", "configmaps", "ConfigMap")
				tr.ResourceError("c1", "configmaps", "ConfigMap", errForbidden)
			},
		},
		{
			name: "sync deadline passed",
			steps: func(tr *health.Tracker) {
				tr.ResourceStarting("c1", "pods", "Pod")
				tr.ResourceError("c1", "pods", "Pod", health.ErrSyncDeadline)
			},
		},
		{
			name: "unreachable before the first sync",
			steps: func(tr *health.Tracker) {
				tr.ResourceStarting("c1", "pods", "Pod")
				tr.ResourceUnreachable("c1", "pods", errRefused)
			},
			wantErr: "initial sync not done: DISCONNECTED: api server unreachable for [pods]: " + errRefused.Error(),
		},
		{
			name: "unreachable after the first sync",
			steps: func(tr *health.Tracker) {
				tr.ResourceStarting("c1", "pods", "Pod")
				tr.ResourceSynced("c1", "pods")
				tr.ResourceUnreachable("c1", "pods", errRefused)
				tr.Probe("c1", errRefused)
			},
		},
		{
			name: "restarted after the first sync",
			steps: func(tr *health.Tracker) {
				tr.ResourceStarting("c1", "pods", "Pod")
				tr.ResourceSynced("c1", "pods")
				tr.ResourceStarting("c1", "pods", "Pod")
			},
		},
		{
			name: "type added after the first sync",
			steps: func(tr *health.Tracker) {
				tr.ResourceStarting("c1", "pods", "Pod")
				tr.ResourceSynced("c1", "pods")
				tr.ResourceStarting("c1", "widgets.example.com", "Widget")
			},
			wantErr: "initial sync not done: SYNCING: initial sync in progress: [widgets.example.com]",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := health.NewTracker(nil, health.Options{})
			tr.AddCluster("c1")
			tt.steps(tr)
			s, _ := tr.Cluster("c1")
			err := health.InitialSyncError(s)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("InitialSyncError(%s) = %v, want nil", s.Status, err)
				}
				return
			}
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("InitialSyncError(%s) = %v, want %q", s.Status, err, tt.wantErr)
			}
			if !errors.Is(err, health.ErrInitialSync) {
				t.Errorf("error %v does not wrap ErrInitialSync", err)
			}
		})
	}
}

// fleet returns a Tracker with c1 synced and c2 still listing pods.
func fleet() *health.Tracker {
	tr := health.NewTracker(nil, health.Options{})
	tr.ResourceStarting("c1", "pods", "Pod")
	tr.ResourceSynced("c1", "pods")
	tr.ResourceStarting("c2", "pods", "Pod")
	return tr
}

func TestHandler(t *testing.T) {
	const c2Failed = "[-]cluster:c2 failed: initial sync not done: SYNCING: initial sync in progress: [pods]\n"
	tests := []struct {
		name       string
		handler    *health.Handler
		target     string
		wantStatus int
		wantBody   string
	}{
		{name: "healthz", handler: health.Healthz(), target: "/healthz", wantStatus: 200, wantBody: "ok"},
		{name: "healthz verbose", handler: health.Healthz(), target: "/healthz?verbose", wantStatus: 200,
			wantBody: "[+]ping ok\nhealthz check passed\n"},
		{name: "readyz, no cluster", handler: health.Readyz(health.NewTracker(nil, health.Options{}), health.ReadyzOptions{}),
			target: "/readyz?verbose=1", wantStatus: 200, wantBody: "[+]ping ok\nreadyz check passed\n"},
		{name: "readyz, a cluster syncing", handler: health.Readyz(fleet(), health.ReadyzOptions{}), target: "/readyz", wantStatus: 500,
			wantBody: "[+]ping ok\n[+]cluster:c1 ok\n" + c2Failed + "readyz check failed\n"},
		{name: "readyz verbose, a cluster syncing", handler: health.Readyz(fleet(), health.ReadyzOptions{}), target: "/readyz?verbose", wantStatus: 500,
			wantBody: "[+]ping ok\n[+]cluster:c1 ok\n" + c2Failed + "readyz check failed\n"},
		{name: "readyz excluding the syncing cluster", handler: health.Readyz(fleet(), health.ReadyzOptions{}), target: "/readyz?exclude=cluster:c2",
			wantStatus: 200, wantBody: "ok"},
		{name: "readyz verbose excluding the syncing cluster", handler: health.Readyz(fleet(), health.ReadyzOptions{}),
			target: "/readyz?verbose&exclude=cluster:c2", wantStatus: 200,
			wantBody: "[+]ping ok\n[+]cluster:c1 ok\n[+]cluster:c2 excluded: ok\nreadyz check passed\n"},
		{name: "readyz excluding an unknown check", handler: health.Readyz(fleet(), health.ReadyzOptions{}),
			target: "/readyz?verbose&exclude=cluster:c9&exclude=cluster:c2&exclude=etcd", wantStatus: 200,
			wantBody: "[+]ping ok\n[+]cluster:c1 ok\n[+]cluster:c2 excluded: ok\n" +
				`warn: some health checks cannot be excluded: no matches for "cluster:c9","etcd"` + "\nreadyz check passed\n"},
		{name: "readyz with the syncing cluster excluded by options", handler: health.Readyz(fleet(), health.ReadyzOptions{Exclude: []string{"c2"}}),
			target: "/readyz?verbose", wantStatus: 200, wantBody: "[+]ping ok\n[+]cluster:c1 ok\nreadyz check passed\n"},
		{name: "readyz disabled by options", handler: health.Readyz(fleet(), health.ReadyzOptions{Disabled: true}),
			target: "/readyz?verbose", wantStatus: 200, wantBody: "[+]ping ok\nreadyz check passed\n"},
		{name: "custom check with a multi-line reason", target: "/livez",
			handler: health.NewHandler("livez", func() []health.Check {
				return []health.Check{{Name: "disk", Check: func(*http.Request) error { return errors.New("full\nreally") }}}
			}),
			wantStatus: 500, wantBody: "[-]disk failed: full really\nlivez check failed\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			tt.handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tt.target, nil))
			if rec.Code != tt.wantStatus {
				t.Errorf("status %d, want %d", rec.Code, tt.wantStatus)
			}
			if diff := cmp.Diff(tt.wantBody, rec.Body.String()); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "text/plain; charset=utf-8" {
				t.Errorf("Content-Type %q", ct)
			}
		})
	}
}

func TestServeCheck(t *testing.T) {
	tests := []struct {
		name       string
		check      string
		wantStatus int
		wantBody   string
	}{
		{name: "passing", check: "cluster:c1", wantStatus: 200, wantBody: "ok"},
		{name: "failing", check: "cluster:c2", wantStatus: 500,
			wantBody: "internal server error: initial sync not done: SYNCING: initial sync in progress: [pods]\n"},
		{name: "ping", check: "ping", wantStatus: 200, wantBody: "ok"},
		{name: "unknown", check: "cluster:c9", wantStatus: 404, wantBody: `no readyz check named "cluster:c9"` + "\n"},
	}
	h := health.Readyz(fleet(), health.ReadyzOptions{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeCheck(rec, httptest.NewRequest(http.MethodGet, "/readyz/"+tt.check, nil), tt.check)
			if rec.Code != tt.wantStatus {
				t.Errorf("status %d, want %d", rec.Code, tt.wantStatus)
			}
			if diff := cmp.Diff(tt.wantBody, rec.Body.String()); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
		})
	}
}
