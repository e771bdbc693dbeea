package app_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/fleetcache/fleetcache/internal/app"
)

// getPprof fetches path of the aggregator at addr with a bearer token ("":
// none) and returns the status and the body.
func getPprof(t *testing.T, addr, path, token string) (int, string) {
	t.Helper()
	status, body, err := send(t.Context(), http.MethodGet, "http://"+addr+path, token, nil)
	if err != nil {
		t.Fatal(err)
	}
	return status, string(body)
}

// send sends a request with a bearer token ("": none) and a JSON body (nil:
// none), and returns the status and the body. It reports errors rather
// than failing the test, so that other goroutines may call it.
func send(ctx context.Context, method, url, token string, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// TestProfiling checks where /debug/pprof/ is served: by default on a
// loopback address only, else as configured.
func TestProfiling(t *testing.T) {
	env := testbed.Env(t)
	kubeconfig := filepath.Join(t.TempDir(), "config")
	if err := env.WriteKubeconfig(kubeconfig, "admin", env.Cluster("c1")); err != nil {
		t.Fatal(err)
	}
	on, off := true, false
	for _, tc := range []struct {
		name      string
		host      string
		profiling *bool
		served    bool
	}{
		{name: "default on 127.0.0.1", host: "127.0.0.1", served: true},
		{name: "default on localhost", host: "localhost", served: true},
		{name: "default on every interface", host: "0.0.0.0", served: false},
		{name: "off on 127.0.0.1", host: "127.0.0.1", profiling: &off, served: false},
		{name: "on on every interface", host: "0.0.0.0", profiling: &on, served: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, port, err := net.SplitHostPort(freeAddr(t))
			if err != nil {
				t.Fatal(err)
			}
			addr := startRun(t, app.Options{Kubeconfigs: []string{kubeconfig}, Addr: net.JoinHostPort(tc.host, port), Profiling: tc.profiling})
			local := net.JoinHostPort("127.0.0.1", port)
			status, body := getPprof(t, local, "/debug/pprof/", "")
			if !tc.served {
				if status != http.StatusNotFound {
					t.Errorf("/debug/pprof/ on %s: %d, want 404", addr, status)
				}
				return
			}
			if status != http.StatusOK || !strings.Contains(body, "goroutine") {
				t.Fatalf("/debug/pprof/ on %s: %d %.200s, want the index of profiles", addr, status, body)
			}
			// The named profiles and the redirect from /debug/pprof.
			for _, path := range []string{"/debug/pprof/goroutine?debug=1", "/debug/pprof/heap?debug=1", "/debug/pprof"} {
				if status, body := getPprof(t, local, path, ""); status != http.StatusOK || len(body) == 0 {
					t.Errorf("%s: %d %.200s", path, status, body)
				}
			}
		})
	}
}

// TestProfilingOperatorsOnly checks that with authentication, profiles are
// served to the users whom the cluster that reviews tokens allows to get
// them (as a non-resource URL), and to nobody else.
func TestProfilingOperatorsOnly(t *testing.T) {
	env := testbed.Env(t)
	ctx := t.Context()
	c1 := env.Cluster("c1")
	if err := c1.Grant(ctx, "carol", "", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/debug/pprof/*", "/debug/pprof"}}); err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "config")
	if err := env.WriteKubeconfig(kubeconfig, "admin", c1); err != nil {
		t.Fatal(err)
	}
	addr := startRun(t, app.Options{Kubeconfigs: []string{kubeconfig},
		Auth: app.AuthOptions{Authn: app.AuthnTokenReview, AuthnConfig: c1.AdminConfig()}})
	tok := func(user string) string { return c1.UserConfig(user).BearerToken }
	got := map[string]int{}
	for who, token := range map[string]string{"no token": "", "a rejected token": "not-a-token", "alice": tok("alice"), "carol": tok("carol"), "admin": tok("admin")} {
		got[who], _ = getPprof(t, addr, "/debug/pprof/heap?debug=1", token)
	}
	want := map[string]int{
		"no token": http.StatusUnauthorized, "a rejected token": http.StatusUnauthorized,
		"alice": http.StatusForbidden, // no grant
		"carol": http.StatusOK,        // get on /debug/pprof/*
		"admin": http.StatusOK,        // system:masters
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
	if status, body := getPprof(t, addr, "/debug/pprof/", tok("alice")); !strings.Contains(body, `user "alice" may not get /debug/pprof/`) {
		t.Errorf("alice's refusal: %d %q, want it to name the user, verb and path", status, body)
	}
}
