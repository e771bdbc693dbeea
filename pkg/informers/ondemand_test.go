package informers

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetcache/fleetcache/internal/testcluster"
)

// TestOnDemandTransport: the transport is built for the first request,
// kept while a response body is open and while requests follow each other
// closely, dropped with its connections once unused for the idle time, and
// built again for the next request.
func TestOnDemandTransport(t *testing.T) {
	var open atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			open.Add(1)
		case http.StateClosed, http.StateHijacked:
			open.Add(-1)
		}
	}
	srv.Start()
	defer srv.Close()

	var builds atomic.Int64
	// Long enough that five requests idle/5 apart stay closer than idle on
	// a loaded machine (the unit layer runs beside other builds).
	const idle = 250 * time.Millisecond
	tr := newOnDemandTransport(idle, nil, func() (http.RoundTripper, error) {
		builds.Add(1)
		return &http.Transport{}, nil
	})
	defer tr.Close()
	client := &http.Client{Transport: tr}
	get := func() *http.Response {
		t.Helper()
		resp, err := client.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	held := func() bool {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		return tr.rt != nil
	}

	// A body left open keeps the transport past the idle time.
	resp := get()
	time.Sleep(3 * idle) // nothing to poll: the claim is that nothing happens
	if !held() {
		t.Fatal("transport dropped while a response body was open")
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	resp.Body.Close() // a second Close counts once

	// Requests closer together than the idle time share the transport and
	// its connection.
	for range 5 {
		resp := get()
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		time.Sleep(idle / 5)
	}
	if got := builds.Load(); got != 1 {
		t.Fatalf("%d transports built for requests closer than the idle time, want 1", got)
	}
	testcluster.Eventually(t, 5*time.Second, "the transport dropped and its connection closed once idle", func() (bool, string) {
		return !held() && open.Load() == 0, ""
	})

	resp = get()
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if got := builds.Load(); got != 2 {
		t.Fatalf("%d transports built after the first was dropped, want 2", got)
	}
}

// TestOnDemandTransportConcurrent: concurrent requests, some while the
// transport expires, all succeed, and Close leaves nothing behind (the
// package's tests run goleak).
func TestOnDemandTransportConcurrent(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	tr := newOnDemandTransport(time.Millisecond, nil, func() (http.RoundTripper, error) {
		return &http.Transport{}, nil
	})
	client := &http.Client{Transport: tr}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				resp, err := client.Get(srv.URL)
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	tr.Close()
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.rt != nil || tr.armed || tr.inFlight != 0 {
		t.Errorf("after Close: transport held %v, expiry armed %v, %d in flight", tr.rt != nil, tr.armed, tr.inFlight)
	}
}
