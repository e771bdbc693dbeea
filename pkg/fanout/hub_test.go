package fanout

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/feed"
	"github.com/fleetcache/fleetcache/pkg/index/fieldselector"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var cmType = &object.Type{Resource: "configmaps", GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespaced: true}

// put stores a ConfigMap labelled app=app in ix.
func put(t *testing.T, ix *index.Index, name, app, rv string) {
	t.Helper()
	o, err := object.NewObject("c1", cmType, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"namespace": "ns", "name": name, "uid": "uid-" + name, "resourceVersion": rv, "labels": map[string]any{"app": app}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	ix.Upsert(o)
}

func selector(t *testing.T, s string) labels.Selector {
	t.Helper()
	sel, err := labels.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

// run runs h until the test ends.
func run[G, P any](t *testing.T, h *Hub[G, P]) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := h.Start(ctx); err != nil {
			t.Error(err)
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// next returns the subscriber's next change as "TYPE name", within a few
// seconds.
func next(t *testing.T, s *Subscriber[string, string]) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	d, err := s.Next(ctx)
	if err != nil {
		t.Fatalf("Next: %v", err)
	}
	if d.Heartbeat {
		return "heartbeat"
	}
	return fmt.Sprintf("%s %s", d.Type, d.Object.Name)
}

// TestHandoff: a subscriber that starts before the hub's position replays
// the changes up to it from the feed, then takes the hub's: no gap, no
// duplicate, in order; a modified object that starts or stops matching is
// ADDED or DELETED.
func TestHandoff(t *testing.T) {
	ix := index.New(index.Options{})
	h := New[string, string](ix, Options{})
	run(t, h)
	start := ix.Revision()
	put(t, ix, "a", "web", "1")
	put(t, ix, "b", "db", "2")
	// Another subscriber keeps the hub moving past the first changes.
	other := h.Subscribe(Request[string]{Filter: planner.Filter{}, Group: "g", Start: start})
	defer other.Close()
	next(t, other)
	next(t, other)
	s := h.Subscribe(Request[string]{Filter: planner.Filter{Selector: selector(t, "app=web")}, Group: "g", Start: start})
	defer s.Close()
	put(t, ix, "b", "web", "3") // starts matching
	put(t, ix, "a", "db", "4")  // stops matching
	want := []string{"ADDED a", "ADDED b", "DELETED a"}
	for _, w := range want {
		if got := next(t, s); got != w {
			t.Fatalf("got %q, want %q", got, w)
		}
	}
	if s.Ready() {
		t.Error("Ready with nothing left")
	}
}

// TestGroupsShare: subscribers of one filter and group get the same
// delivery, whose payload is made once, and the first one's value.
func TestGroupsShare(t *testing.T) {
	ix := index.New(index.Options{})
	h := New[string, string](ix, Options{})
	run(t, h)
	a := h.Subscribe(Request[string]{Group: "g", Value: "first", Start: ix.Revision()})
	defer a.Close()
	b := h.Subscribe(Request[string]{Group: "g", Value: "second", Start: ix.Revision()})
	defer b.Close()
	c := h.Subscribe(Request[string]{Group: "other", Value: "third", Start: ix.Revision()})
	defer c.Close()
	if b.Value() != "first" || c.Value() != "third" {
		t.Errorf("values %q %q, want first third", b.Value(), c.Value())
	}
	if f, g := h.Groups(); f != 1 || g != 2 {
		t.Errorf("%d filters, %d groups, want 1 and 2", f, g)
	}
	put(t, ix, "a", "web", "1")
	built := 0
	build := func(c *Change) string { built++; return c.Object.Name }
	for _, s := range []*Subscriber[string, string]{a, b} {
		d, err := s.Next(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if p := d.Payload(build); p != "a" {
			t.Errorf("payload %q", p)
		}
	}
	if built != 1 {
		t.Errorf("payload built %d times for one group, want 1", built)
	}
}

// TestVisible: hidden changes are skipped.
func TestVisible(t *testing.T) {
	ix := index.New(index.Options{})
	h := New[string, string](ix, Options{})
	run(t, h)
	s := h.Subscribe(Request[string]{Start: ix.Revision(), Visible: func(_ context.Context, c *Change) bool { return c.Object.Name != "secret" }})
	defer s.Close()
	put(t, ix, "secret", "web", "1")
	put(t, ix, "public", "web", "2")
	if got := next(t, s); got != "ADDED public" {
		t.Errorf("got %q, want ADDED public", got)
	}
}

// TestSlowConsumer: a subscriber whose queue overflows ends with
// ErrSlowConsumer, is counted out of the hub, and holds up nobody.
func TestSlowConsumer(t *testing.T) {
	ix := index.New(index.Options{})
	h := New[string, string](ix, Options{Buffer: 2})
	slow := h.Subscribe(Request[string]{Start: ix.Revision()})
	fast := h.Subscribe(Request[string]{Start: ix.Revision(), Group: "fast"})
	defer fast.Close()
	run(t, h)
	for i := range 3 {
		put(t, ix, fmt.Sprint("o", i), "web", fmt.Sprint(i))
		next(t, fast)
	}
	if _, err := slow.Next(t.Context()); !errors.Is(err, ErrSlowConsumer) {
		t.Errorf("slow subscriber: %v, want ErrSlowConsumer", err)
	}
	// Next sees the error as soon as the hub sets it; the hub counts the
	// subscriber out just after, once it has woken the others.
	deadline := time.Now().Add(5 * time.Second)
	for h.Subscribers() != 1 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := h.Subscribers(); n != 1 {
		t.Errorf("%d subscribers, want 1", n)
	}
}

// TestExpired: a replay whose start the feed dropped ends with an
// *ExpiredError wrapping feed.ErrExpired.
func TestExpired(t *testing.T) {
	ix := index.New(index.Options{Retention: 2})
	h := New[string, string](ix, Options{})
	start := ix.Revision()
	for i := range 5 {
		put(t, ix, fmt.Sprint("o", i), "web", fmt.Sprint(i))
	}
	// The hub's position is the feed's revision: the subscriber replays
	// from start, which is gone.
	h.pos.Store(ix.Revision())
	s := h.Subscribe(Request[string]{Start: start})
	defer s.Close()
	_, err := s.Next(t.Context())
	var expired *ExpiredError
	if !errors.As(err, &expired) || !errors.Is(err, feed.ErrExpired) {
		t.Errorf("Next: %v, want an ExpiredError wrapping feed.ErrExpired", err)
	}
}

// TestHeartbeat: an idle subscriber gets a heartbeat with the revision it
// has caught up with.
func TestHeartbeat(t *testing.T) {
	ix := index.New(index.Options{})
	h := New[string, string](ix, Options{HeartbeatInterval: 20 * time.Millisecond})
	run(t, h)
	s := h.Subscribe(Request[string]{Start: ix.Revision()})
	defer s.Close()
	put(t, ix, "a", "web", "1")
	if got := next(t, s); got != "ADDED a" {
		t.Fatalf("got %q", got)
	}
	d, err := s.Next(t.Context())
	if err != nil || !d.Heartbeat || d.Revision != ix.Revision() {
		t.Errorf("Next: %+v, %v; want a heartbeat at revision %d", d, err, ix.Revision())
	}
}

// TestStopAndClose: Close ends a waiting Next with io.EOF; a stopped hub
// ends its subscribers with ErrStopped and refuses new ones.
func TestStopAndClose(t *testing.T) {
	ix := index.New(index.Options{})
	h := New[string, string](ix, Options{})
	closed := h.Subscribe(Request[string]{Start: ix.Revision()})
	done := make(chan error, 1)
	go func() { _, err := closed.Next(context.Background()); done <- err }()
	closed.Close()
	if err := <-done; err != io.EOF {
		t.Errorf("Next after Close: %v, want io.EOF", err)
	}
	s := h.Subscribe(Request[string]{Start: ix.Revision()})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := h.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	if err := h.Start(ctx); err == nil {
		t.Error("a second Start returned nil, want an error")
	}
	if _, err := s.Next(context.Background()); !errors.Is(err, ErrStopped) {
		t.Errorf("Next after stop: %v, want ErrStopped", err)
	}
	late := h.Subscribe(Request[string]{Start: ix.Revision()})
	if _, err := late.Next(context.Background()); !errors.Is(err, ErrStopped) {
		t.Errorf("Subscribe after stop: %v, want ErrStopped", err)
	}
}

// TestFilterKey: equal filters share a key, whatever the order of their
// lists and requirements.
func TestFilterKey(t *testing.T) {
	a := planner.Filter{Clusters: []string{"b", "a", "a"}, Selector: selector(t, "y=1,x=2")}
	b := planner.Filter{Clusters: []string{"a", "b"}, Selector: selector(t, "x=2, y=1")}
	c := planner.Filter{Clusters: []string{"a"}, Selector: selector(t, "x=2,y=1")}
	if filterKey(a) != filterKey(b) || filterKey(a) == filterKey(c) || filterKey(planner.Filter{}) == filterKey(c) {
		t.Errorf("keys: %s %s %s", filterKey(a), filterKey(b), filterKey(c))
	}
	// Field selectors too: by their canonical form.
	d := planner.Filter{Fields: fields(t, "status.phase==Running, spec.nodeName")}
	e := planner.Filter{Fields: fields(t, "spec.nodeName,status.phase=Running")}
	if filterKey(d) != filterKey(e) || filterKey(d) == filterKey(planner.Filter{}) {
		t.Errorf("keys: %s %s", filterKey(d), filterKey(e))
	}
}

func fields(t *testing.T, s string) fieldselector.Selector {
	t.Helper()
	sel, err := fieldselector.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

// TestFieldSelectorTransitions: a modified object whose field starts or
// stops matching a field selector is ADDED or DELETED, as with labels.
func TestFieldSelectorTransitions(t *testing.T) {
	ix := index.New(index.Options{})
	h := New[string, string](ix, Options{})
	run(t, h)
	putPhase := func(name, phase, rv string) {
		t.Helper()
		o, err := object.NewObject("c1", cmType, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]any{"phase": phase},
			"metadata": map[string]any{"namespace": "ns", "name": name, "uid": "uid-" + name, "resourceVersion": rv},
		}})
		if err != nil {
			t.Fatal(err)
		}
		ix.Upsert(o)
	}
	s := h.Subscribe(Request[string]{Filter: planner.Filter{Fields: fields(t, "data.phase=Running")}, Group: "g", Start: ix.Revision()})
	defer s.Close()
	putPhase("a", "Running", "1") // matches
	putPhase("b", "Pending", "2") // does not
	putPhase("a", "Running", "3") // still matches
	putPhase("a", "Failed", "4")  // stops matching
	putPhase("b", "Running", "5") // starts matching
	putPhase("a", "Running", "6") // matches again
	for _, w := range []string{"ADDED a", "MODIFIED a", "DELETED a", "ADDED b", "ADDED a"} {
		if got := next(t, s); got != w {
			t.Fatalf("got %q, want %q", got, w)
		}
	}
}
