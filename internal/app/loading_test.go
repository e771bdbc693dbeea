package app

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestRequestsWaitForTheLoad: while the snapshot loads, an API request
// waits, and one whose context ends first gets 503 with Retry-After;
// /readyz's check says the snapshot is loading. Once the load ended,
// requests go on and the check passes; after a load the process stopping
// cut short, they get 503.
func TestRequestsWaitForTheLoad(t *testing.T) {
	w := &warmStart{done: make(chan struct{})}
	a := &Aggregator{snapshot: w}
	h := a.loaded(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) { rw.WriteHeader(http.StatusNoContent) }))

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/graphql", nil).WithContext(ctx))
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
		t.Errorf("a request given up while loading: %d, Retry-After %q; want 503 with Retry-After", rec.Code, rec.Header().Get("Retry-After"))
	}
	if err := w.ready(nil); err == nil {
		t.Error("/readyz's snapshot check passes while the snapshot loads")
	}

	served := make(chan int, 1)
	go func() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/graphql", nil))
		served <- rec.Code
	}()
	select {
	case code := <-served:
		t.Fatalf("a request answered %d while the snapshot loads", code)
	case <-time.After(50 * time.Millisecond):
	}
	close(w.done)
	if code := <-served; code != http.StatusNoContent {
		t.Errorf("the waiting request got %d once loaded, want the handler's 204", code)
	}
	if err := w.ready(nil); err != nil {
		t.Errorf("/readyz's snapshot check after the load: %v", err)
	}

	// A load the process stopping cut short: the index is empty.
	stopped := &Aggregator{snapshot: &warmStart{done: make(chan struct{}), err: context.Canceled, stopped: true}}
	close(stopped.snapshot.done)
	rec = httptest.NewRecorder()
	stopped.loaded(h).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/graphql", nil))
	if rec.Code != http.StatusServiceUnavailable {
		t.Errorf("a request once the stopping process cut the load short: %d, want 503", rec.Code)
	}
}
