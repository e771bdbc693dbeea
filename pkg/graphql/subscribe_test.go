package graphql

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/fleetcache/fleetcache/internal/graphqltest"
	"github.com/fleetcache/fleetcache/pkg/authn"
	"github.com/fleetcache/fleetcache/pkg/authz"
	"github.com/fleetcache/fleetcache/pkg/fanout"
	"github.com/fleetcache/fleetcache/pkg/graphql/cursor"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
	"github.com/fleetcache/fleetcache/pkg/index/views"
)

// startServer returns a Server whose Start runs until the test ends.
func startServer(t testing.TB, ix *index.Index, h Health, opts Options) *Server {
	t.Helper()
	s := newServer(t, ix, h, opts)
	runServer(t, s)
	return s
}

// runServer runs s.Start until stop, which returns Start's error; the
// test's cleanup stops it too, and reports the error.
func runServer(t testing.TB, s *Server) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			err = <-done
		})
		return err
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("Start: %v", err)
		}
	})
	return stop
}

// subscribe starts a subscription that must start; it is closed when the
// test ends.
func subscribe(t testing.TB, s *Server, query string, vars map[string]any) *Subscription {
	t.Helper()
	sub, res := s.Subscribe(t.Context(), Request{Query: query, Variables: vars})
	if sub == nil {
		t.Fatalf("Subscribe returned no subscription: %+v", res)
	}
	t.Cleanup(sub.Close)
	return sub
}

// got is a decoded payload of a resourceEvents subscription.
type got struct {
	Type, Name, Cursor string
	Labels             map[string]string
	Heartbeat          bool
	ExtCursor          string
}

func (g got) String() string { return g.Type + " " + g.Name }

const eventsQuery = graphqltest.EventsQuery

// next returns the next payload, failing after 10 s.
func next(t testing.TB, sub *Subscription) got {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	res, err := sub.Next(ctx)
	if err != nil {
		t.Fatalf("Next: %v (%+v)", err, res)
	}
	return decode(t, res)
}

func decode(t testing.TB, res *Result) got {
	t.Helper()
	if len(res.Errors) > 0 {
		t.Fatalf("payload has errors: %+v", res.Errors)
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Data *struct {
			ResourceEvents struct {
				Type, Cursor string
				Resource     struct {
					Name   string
					Labels map[string]string
				}
			}
		}
		Extensions struct {
			Cursor    string
			Heartbeat bool
		}
	}
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	g := got{ExtCursor: p.Extensions.Cursor, Heartbeat: p.Extensions.Heartbeat}
	if p.Data != nil {
		e := p.Data.ResourceEvents
		g.Type, g.Name, g.Cursor, g.Labels = e.Type, e.Resource.Name, e.Cursor, e.Resource.Labels
	}
	return g
}

// nextN returns the next n payloads as "TYPE name".
func nextN(t testing.TB, sub *Subscription, n int) []string {
	t.Helper()
	out := []string{}
	for range n {
		out = append(out, next(t, sub).String())
	}
	return out
}

// quiet checks that no payload arrives for a while.
func quiet(t testing.TB, sub *Subscription) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if res, err := sub.Next(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Next = %v, %v; want nothing", res, err)
	}
}

func rev(t testing.TB, s *Server, text string) uint64 {
	t.Helper()
	c, err := cursor.DecodeRevision(text)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Check(s.ix.Epoch()); err != nil {
		t.Fatal(err)
	}
	return c.Revision
}

func TestResourceEvents(t *testing.T) {
	f := newFixture(t)
	s := startServer(t, f.ix, f.tracker, Options{})
	web := map[string]string{"app": "web"}
	db := map[string]string{"app": "db"}
	sub := subscribe(t, s, eventsQuery, map[string]any{"filter": map[string]any{"clusters": []any{"c1"}, "labelSelector": "app=web"}})

	f.ix.Upsert(version(t, "c1", "ns", "a", "1", web))
	f.ix.Upsert(version(t, "c2", "ns", "other-cluster", "1", web))
	f.ix.Upsert(version(t, "c1", "ns", "b", "1", db))
	f.ix.Upsert(version(t, "c1", "ns", "a", "2", web))
	f.ix.Upsert(version(t, "c1", "ns", "a", "3", db))  // leaves
	f.ix.Upsert(version(t, "c1", "ns", "b", "2", web)) // enters
	f.ix.Upsert(version(t, "c1", "ns", "b", "3", db))  // leaves
	f.ix.Delete(object.Key{Cluster: "c1", Resource: "configmaps", Namespace: "ns", Name: "a"})
	f.ix.Delete(object.Key{Cluster: "c1", Resource: "configmaps", Namespace: "ns", Name: "b"})
	f.ix.Upsert(version(t, "c1", "ns", "c", "1", web))
	f.ix.RemoveCluster("c1")

	want := []string{"ADDED a", "MODIFIED a", "DELETED a", "ADDED b", "DELETED b", "ADDED c"}
	var events []got
	for range len(want) {
		events = append(events, next(t, sub))
	}
	// RemoveCluster deletes every object of c1; of these, the
	// subscription sees the fixture's app=web objects and c.
	removed := planner.List(f.ix, planner.Filter{Clusters: []string{"c1"}}, nil, 0)
	if len(removed.Objects) != 0 {
		t.Fatalf("c1 still has %d objects", len(removed.Objects))
	}
	for {
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		res, err := sub.Next(ctx)
		cancel()
		if err != nil {
			break
		}
		events = append(events, decode(t, res))
	}
	var names []string
	var last uint64
	for _, e := range events {
		names = append(names, e.String())
		r := rev(t, s, e.Cursor)
		if r <= last {
			t.Errorf("cursor of %s at revision %d after %d", e, r, last)
		}
		last = r
		if e.ExtCursor != e.Cursor {
			t.Errorf("extensions.cursor %q differs from the event's cursor %q", e.ExtCursor, e.Cursor)
		}
	}
	for _, n := range []string{"web-1", "web-2", "web-abc-1", "web-abc-2", "web-canary", "settings", "web", "web-abc", "c"} {
		want = append(want, "DELETED "+n)
	}
	if diff := cmp.Diff(want, names, cmp.Transformer("sort", func(s []string) []string {
		// The removals come in index order; compare them as a set.
		out := append([]string(nil), s[:6]...)
		rest := append([]string(nil), s[6:]...)
		slices.Sort(rest)
		return append(out, rest...)
	})); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	// A DELETED for an object that stopped matching carries its state.
	if e := events[2]; e.Labels["app"] != "db" {
		t.Errorf("DELETED a has labels %v, want its new labels app=db", e.Labels)
	}
}

// TestResumeWithSince subscribes, reads some events, closes, lets changes
// happen, and resumes from the last cursor: exactly the missed events
// arrive, then the live ones.
func TestResumeWithSince(t *testing.T) {
	f := newFixture(t)
	s := startServer(t, f.ix, f.tracker, Options{})
	filter := map[string]any{"namespaces": []any{"ns"}}
	sub := subscribe(t, s, eventsQuery, map[string]any{"filter": filter})
	f.ix.Upsert(version(t, "c1", "ns", "a", "1", nil))
	f.ix.Upsert(version(t, "c1", "ns", "b", "1", nil))
	next(t, sub)
	last := next(t, sub).Cursor
	sub.Close()
	if _, err := sub.Next(t.Context()); err != io.EOF {
		t.Fatalf("Next after Close = %v, want io.EOF", err)
	}

	f.ix.Upsert(version(t, "c1", "ns", "a", "2", nil))
	f.ix.Upsert(version(t, "c1", "other", "x", "1", nil))
	f.ix.Delete(object.Key{Cluster: "c1", Resource: "configmaps", Namespace: "ns", Name: "b"})
	f.ix.Upsert(version(t, "c1", "ns", "c", "1", nil))

	sub = subscribe(t, s, eventsQuery, map[string]any{"filter": filter, "since": last})
	if diff := cmp.Diff([]string{"MODIFIED a", "DELETED b", "ADDED c"}, nextN(t, sub, 3)); diff != "" {
		t.Errorf("replayed (-want +got):\n%s", diff)
	}
	f.ix.Upsert(version(t, "c1", "ns", "d", "1", nil))
	if diff := cmp.Diff([]string{"ADDED d"}, nextN(t, sub, 1)); diff != "" {
		t.Errorf("live (-want +got):\n%s", diff)
	}
	quiet(t, sub)

	// A connection's revision works as since too.
	var p page
	data(t, s, `{ resources(filter: {namespaces: ["ns"]}) { revision } }`, nil, &p)
	f.ix.Upsert(version(t, "c1", "ns", "e", "1", nil))
	sub = subscribe(t, s, eventsQuery, map[string]any{"filter": filter, "since": p.Resources.Revision})
	if diff := cmp.Diff([]string{"ADDED e"}, nextN(t, sub, 1)); diff != "" {
		t.Errorf("from a revision (-want +got):\n%s", diff)
	}
}

// TestHandoffUnderLoad starts subscriptions, with and without since, while
// a writer changes the index, and checks that each receives exactly the
// matching changes after its start, in order: no gap and no duplicate
// where replay meets the hub.
func TestHandoffUnderLoad(t *testing.T) {
	ix := index.New(index.Options{})
	s := startServer(t, ix, health.NewTracker(ix, health.Options{}), Options{Fanout: fanout.Options{Buffer: 100000}})
	// Under -short (make test-unit), a third of the changes and followers.
	changes, followers := 3000, 30
	if testing.Short() {
		changes, followers = 1000, 10
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		r := rand.New(rand.NewPCG(1, 1))
		for i := range changes {
			name := fmt.Sprintf("o-%d", r.IntN(50))
			switch r.IntN(4) {
			case 0:
				ix.Delete(object.Key{Cluster: "c1", Resource: "configmaps", Namespace: "ns", Name: name})
			default:
				ix.Upsert(version(t, "c1", "ns", name, fmt.Sprint(i), map[string]string{"app": []string{"web", "db"}[r.IntN(2)]}))
			}
			if i%100 == 0 {
				time.Sleep(time.Millisecond)
			}
		}
	})
	type follower struct {
		sub   *Subscription
		start uint64 // since, or 0 for a follower without since
	}
	var fs []follower
	for i := range followers {
		vars := map[string]any{"filter": map[string]any{"labelSelector": "app=web"}}
		start := uint64(0)
		if cur := ix.Revision(); i%2 == 1 && cur > 0 {
			start = uint64(rand.IntN(int(cur)))
			vars["since"] = cursor.EncodeRevision(cursor.Revision{Epoch: ix.Epoch(), Revision: start})
		}
		sub := subscribe(t, s, eventsQuery, vars)
		fs = append(fs, follower{sub, start})
		time.Sleep(time.Duration(rand.IntN(3)) * time.Millisecond)
	}
	wg.Wait()
	end := ix.Revision()
	all, err := ix.Events(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	m := planner.NewMatcher(planner.Filter{Selector: mustSelector(t, "app=web")})
	for i, f := range fs {
		var gotEvents []string
		first := uint64(0)
		if f.start == 0 {
			// It starts at the revision Subscribe read, which the test
			// does not know: from its first event on, nothing may lack.
			g := next(t, f.sub)
			first = rev(t, s, g.Cursor)
			gotEvents = append(gotEvents, fmt.Sprintf("%d %s %s", first, g.Type, g.Name))
			first--
		}
		var want []string
		for _, ev := range all {
			if ev.Revision > max(f.start, first) {
				if typ, obj := fanout.Classify(m, &ev); typ != 0 {
					want = append(want, fmt.Sprintf("%d %s %s", ev.Revision, typ, obj.Name))
				}
			}
		}
		for len(gotEvents) < len(want) {
			g := next(t, f.sub)
			gotEvents = append(gotEvents, fmt.Sprintf("%d %s %s", rev(t, s, g.Cursor), g.Type, g.Name))
		}
		if diff := cmp.Diff(want, gotEvents); diff != "" {
			t.Fatalf("follower %d from %d to %d (-want +got):\n%s", i, f.start, end, diff)
		}
		quiet(t, f.sub)
	}
}

func TestSinceErrors(t *testing.T) {
	ix := index.New(index.Options{Retention: 5})
	s := startServer(t, ix, health.NewTracker(ix, health.Options{}), Options{})
	for i := range 20 {
		ix.Upsert(version(t, "c1", "ns", fmt.Sprint(i), "1", nil))
	}
	other := index.New(index.Options{})
	for _, tc := range []struct {
		name    string
		vars    map[string]any
		code    string
		started bool // Subscribe returns a subscription that ends with the error
	}{
		{name: "older than retained", vars: map[string]any{"since": cursor.EncodeRevision(cursor.Revision{Epoch: ix.Epoch(), Revision: 3})}, code: CodeCursorExpired, started: true},
		{name: "other epoch", vars: map[string]any{"since": cursor.EncodeRevision(cursor.Revision{Epoch: other.Epoch(), Revision: 18})}, code: CodeCursorExpired, started: true},
		{name: "page cursor", vars: map[string]any{"since": cursor.EncodePage(object.Position{Cluster: "c1"})}, code: CodeBadUserInput},
		{name: "garbage", vars: map[string]any{"since": "not-a-cursor"}, code: CodeBadUserInput},
		{name: "ahead of the index", vars: map[string]any{"since": cursor.EncodeRevision(cursor.Revision{Epoch: ix.Epoch(), Revision: 1000})}, code: CodeBadUserInput},
		{name: "bad label selector", vars: map[string]any{"filter": map[string]any{"labelSelector": "a in (b"}}, code: CodeBadUserInput},
		{name: "since of the wrong type", vars: map[string]any{"since": 12}, code: CodeBadUserInput},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sub, res := s.Subscribe(t.Context(), Request{Query: eventsQuery, Variables: tc.vars})
			if tc.started {
				if sub == nil {
					t.Fatalf("no subscription: %+v", res)
				}
				defer sub.Close()
				res, err := sub.Next(t.Context())
				if !errors.Is(err, ErrEnded) {
					t.Fatalf("Next = %v, want ErrEnded", err)
				}
				if diff := cmp.Diff([]string{tc.code}, codes(res)); diff != "" {
					t.Errorf("codes (-want +got):\n%s", diff)
				}
				if res2, err := sub.Next(t.Context()); err != ErrEnded || res2 != res {
					t.Errorf("second Next = %v, %v; want the same end", res2, err)
				}
				return
			}
			if sub != nil {
				sub.Close()
				t.Fatal("Subscribe started a subscription")
			}
			if diff := cmp.Diff([]string{tc.code}, codes(res)); diff != "" {
				t.Errorf("codes (-want +got):\n%s", diff)
			}
			if res.Executed {
				t.Error("Executed = true")
			}
		})
	}
	// Within retention, it works.
	sub := subscribe(t, s, eventsQuery, map[string]any{"since": cursor.EncodeRevision(cursor.Revision{Epoch: ix.Epoch(), Revision: 17})})
	if diff := cmp.Diff([]string{"ADDED 17", "ADDED 18", "ADDED 19"}, nextN(t, sub, 3)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestReplayExpires: changes to replay that leave the retention window
// before Next reads them end the subscription with CURSOR_EXPIRED.
func TestReplayExpires(t *testing.T) {
	ix := index.New(index.Options{Retention: 10})
	s := newServer(t, ix, health.NewTracker(ix, health.Options{}), Options{})
	for i := range 5 {
		ix.Upsert(version(t, "c1", "ns", fmt.Sprint(i), "1", nil))
	}
	sub := subscribe(t, s, eventsQuery, map[string]any{"since": cursor.EncodeRevision(cursor.Revision{Epoch: ix.Epoch(), Revision: 1})})
	// The hub starts only after the changes to replay have left the
	// retention window: a hub that ran already could replay them first.
	for i := range 20 {
		ix.Upsert(version(t, "c1", "ns", fmt.Sprint(i), "2", nil))
	}
	runServer(t, s)
	res, err := sub.Next(t.Context())
	if !errors.Is(err, ErrEnded) || len(codes(res)) != 1 || codes(res)[0] != CodeCursorExpired {
		t.Fatalf("Next = %+v, %v; want CURSOR_EXPIRED", res, err)
	}
	waitFor(t, "the member to leave the hub", func() bool { return s.hub.Subscribers() == 0 })
}

// TestSlowConsumer: a subscription that does not read is ended once its
// buffer overflows, while the index and another subscription go on.
func TestSlowConsumer(t *testing.T) {
	ix := index.New(index.Options{})
	s := startServer(t, ix, health.NewTracker(ix, health.Options{}), Options{Fanout: fanout.Options{Buffer: 10}})
	slow := subscribe(t, s, eventsQuery, nil)
	fast := subscribe(t, s, eventsQuery, nil)
	// The writer goes on when the fast subscriber has each change: it
	// never waits for the slow one.
	for i := range 100 {
		ix.Upsert(version(t, "c1", "ns", fmt.Sprint(i), "1", nil))
		if g := next(t, fast); g.Name != fmt.Sprint(i) {
			t.Fatalf("fast subscriber got %s, want ADDED %d", g, i)
		}
	}
	waitFor(t, "the slow member to leave the hub", func() bool { return s.hub.Subscribers() == 1 })
	if res, err := slow.Next(t.Context()); res != nil || !errors.Is(err, ErrSlowConsumer) {
		t.Fatalf("slow Next = %v, %v; want ErrSlowConsumer", res, err)
	}
}

// TestHubLinger: after a dispatch the hub waits before it hands out the
// next changes (see fanout.Options.MaxLinger), so that a burst reaches each subscriber
// in one wake-up; the changes that came meanwhile all go out after it,
// and a stop ends the wait at once.
func TestHubLinger(t *testing.T) {
	ix := index.New(index.Options{})
	start := func(pause time.Duration) (*Server, *Subscription, func() error) {
		s := newServer(t, ix, health.NewTracker(ix, health.Options{}), Options{Fanout: fanout.Options{LingerPerDelivery: pause, MaxLinger: pause}})
		stop := runServer(t, s)
		return s, subscribe(t, s, eventsQuery, nil), stop
	}
	expect := func(sub *Subscription, want ...string) {
		t.Helper()
		for _, w := range want {
			if g := next(t, sub); g.String() != w {
				t.Fatalf("got %s, want %s", g, w)
			}
		}
	}

	const pause = 300 * time.Millisecond
	_, sub, _ := start(pause)
	begin := time.Now()
	ix.Upsert(version(t, "c1", "ns", "a", "1", nil))
	expect(sub, "ADDED a") // after a quiet spell: at once
	ix.Upsert(version(t, "c1", "ns", "b", "1", nil))
	ix.Upsert(version(t, "c1", "ns", "c", "1", nil))
	expect(sub, "ADDED b", "ADDED c")
	if d := time.Since(begin); d < pause {
		t.Errorf("b and c came %v after a's change, within the linger of %v", d, pause)
	}

	_, sub, stop := start(time.Hour)
	ix.Upsert(version(t, "c1", "ns", "d", "1", nil))
	expect(sub, "ADDED d")
	ix.Upsert(version(t, "c1", "ns", "e", "1", nil)) // held back by the linger
	begin = time.Now()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(begin); d > 10*time.Second {
		t.Errorf("Start returned %v after its context ended", d)
	}
	if res, err := sub.Next(t.Context()); !errors.Is(err, ErrServerStopped) {
		t.Errorf("Next = %+v, %v; want ErrServerStopped", res, err)
	}
}

// TestReady: Ready says whether Next would return at once: with a change
// queued or to replay, or once the subscription ended.
func TestReady(t *testing.T) {
	ix := index.New(index.Options{})
	s := startServer(t, ix, health.NewTracker(ix, health.Options{}), Options{})
	start := ix.Revision()
	sub := subscribe(t, s, eventsQuery, nil)
	if sub.Ready() {
		t.Error("Ready before any change")
	}
	ix.Upsert(version(t, "c1", "ns", "a", "1", nil))
	ix.Upsert(version(t, "c1", "ns", "b", "1", nil))
	for _, want := range []string{"ADDED a", "ADDED b"} {
		waitFor(t, "a change for Next", sub.Ready)
		if g := next(t, sub); g.String() != want {
			t.Fatalf("got %s, want %s", g, want)
		}
	}
	if sub.Ready() {
		t.Error("Ready with every change returned")
	}
	sub.Close()
	if !sub.Ready() {
		t.Error("not Ready once closed")
	}

	replay := subscribe(t, s, eventsQuery, map[string]any{"since": epochCursor(s, start)})
	if !replay.Ready() {
		t.Error("not Ready with changes to replay")
	}
}

// countingAuthorizer lets everyone see the objects of the namespaces in
// allowed, for ttl, and counts the decisions asked; with fail set, they
// fail.
type countingAuthorizer struct {
	mu      sync.Mutex
	allowed map[string]bool
	ttl     time.Duration
	fail    bool
	calls   int
}

func (a *countingAuthorizer) Scope(context.Context, *authn.User, []views.Contents, authz.NamespaceLister) authz.Scope {
	return authz.Scope{Full: true}
}

func (a *countingAuthorizer) Visible(_ context.Context, _ *authn.User, _, namespace, _ string) (bool, time.Duration, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls++
	if a.fail {
		return false, 0, errors.New("review failed")
	}
	return a.allowed[namespace], a.ttl, nil
}

func (a *countingAuthorizer) set(f func(*countingAuthorizer)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	f(a)
}

func (a *countingAuthorizer) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.calls
}

// TestEventDecisionsReused: a subscriber's events are checked against its
// rights, a decision per place (cluster, namespace, type) reused for the
// next events there as long as the Authorizer says it holds, rather than
// asked per event; a failed review hides the event and is asked again for
// the next.
func TestEventDecisionsReused(t *testing.T) {
	ix := index.New(index.Options{})
	az := &countingAuthorizer{allowed: map[string]bool{"shown": true}, ttl: time.Minute}
	s := startServer(t, ix, health.NewTracker(ix, health.Options{}), Options{Authorizer: az})
	sub, res := s.Subscribe(authn.WithUser(t.Context(), &authn.User{Name: "alice"}), Request{Query: eventsQuery})
	if sub == nil {
		t.Fatalf("Subscribe: %+v", res)
	}
	t.Cleanup(sub.Close)
	expect := func(want string) {
		t.Helper()
		if g := next(t, sub); g.String() != want {
			t.Fatalf("got %s, want %s", g, want)
		}
	}
	for i := range 5 {
		ix.Upsert(version(t, "c1", "shown", fmt.Sprint("cm-", i), "1", nil))
		ix.Upsert(version(t, "c1", "hidden", fmt.Sprint("cm-", i), "1", nil))
	}
	for i := range 5 {
		expect(fmt.Sprint("ADDED cm-", i))
	}
	if n := az.count(); n != 2 {
		t.Errorf("10 events in 2 namespaces took %d decisions, want 2", n)
	}

	az.set(func(a *countingAuthorizer) { a.fail = true })
	ix.Upsert(version(t, "c1", "other", "failed", "1", nil))
	ix.Upsert(version(t, "c1", "shown", "marker", "1", nil))
	expect("ADDED marker") // after the event whose review failed
	az.set(func(a *countingAuthorizer) { a.fail, a.allowed["other"] = false, true })
	ix.Upsert(version(t, "c1", "other", "after", "1", nil))
	expect("ADDED after")
	if n := az.count(); n != 4 {
		t.Errorf("%d decisions, want 4: the failed one asked again", n)
	}

	// Decisions that hold no longer are asked for each event.
	az.set(func(a *countingAuthorizer) { a.ttl, a.allowed["brief"] = 0, true })
	ix.Upsert(version(t, "c1", "brief", "x", "1", nil))
	ix.Upsert(version(t, "c1", "brief", "y", "1", nil))
	expect("ADDED x")
	expect("ADDED y")
	if n := az.count(); n != 6 {
		t.Errorf("%d decisions, want 6: one per event of a decision that expired", n)
	}
}

func TestHeartbeat(t *testing.T) {
	ix := index.New(index.Options{})
	s := startServer(t, ix, health.NewTracker(ix, health.Options{}), Options{Fanout: fanout.Options{HeartbeatInterval: 20 * time.Millisecond}})
	sub := subscribe(t, s, eventsQuery, map[string]any{"filter": map[string]any{"namespaces": []any{"watched"}}})
	ix.Upsert(version(t, "c1", "elsewhere", "a", "1", nil))
	ix.Upsert(version(t, "c1", "elsewhere", "b", "1", nil))
	var hb got
	waitFor(t, "a heartbeat at the current revision", func() bool {
		hb = next(t, sub)
		return hb.Heartbeat && rev(t, s, hb.ExtCursor) == ix.Revision()
	})
	if hb.Type != "" || hb.Cursor != "" {
		t.Errorf("heartbeat carries data: %+v", hb)
	}
	// Resuming from it replays nothing.
	ix.Upsert(version(t, "c1", "watched", "c", "1", nil))
	sub2 := subscribe(t, s, eventsQuery, map[string]any{"filter": map[string]any{"namespaces": []any{"watched"}}, "since": hb.ExtCursor})
	if diff := cmp.Diff([]string{"ADDED c"}, nextN(t, sub2, 1)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestClusterHealth(t *testing.T) {
	f := newFixture(t)
	s := startServer(t, f.ix, f.tracker, Options{})
	const q = `subscription($c: String) { clusterHealth(cluster: $c) { name status removed } }`
	type cluster struct {
		Name, Status string
		Removed      bool
	}
	nextCluster := func(sub *Subscription) cluster {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		res, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		var d struct{ ClusterHealth cluster }
		if err := json.Unmarshal(mustJSON(t, res.Data), &d); err != nil {
			t.Fatal(err)
		}
		return d.ClusterHealth
	}
	all := subscribe(t, s, q, nil)
	one := subscribe(t, s, q, map[string]any{"c": "c2"})
	var initial []cluster
	for range 3 {
		initial = append(initial, nextCluster(all))
	}
	want := []cluster{{"c1", "SYNCED", false}, {"c2", "SYNCED", false}, {"c3", "DISCONNECTED", false}}
	if diff := cmp.Diff(want, initial); diff != "" {
		t.Errorf("initial (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(cluster{"c2", "SYNCED", false}, nextCluster(one)); diff != "" {
		t.Errorf("initial c2 (-want +got):\n%s", diff)
	}

	f.tracker.Probe("c1", errors.New("connection refused"))
	f.tracker.Probe("c2", errors.New("connection refused"))
	f.tracker.Probe("c2", nil) // reachable again, but not current until relisted
	for _, typ := range []*object.Type{nsType, cmType, podType, deployType, rsType} {
		f.tracker.ResourceStarting("c2", typ.Resource, typ.Kind)
		f.tracker.ResourceSynced("c2", typ.Resource)
	}
	f.tracker.RemoveCluster("c3")
	// Each relisted type is a change of its own; keep one per status.
	var changes, c2 []cluster
	for len(changes) == 0 || !changes[len(changes)-1].Removed {
		ch := nextCluster(all)
		if len(changes) == 0 || changes[len(changes)-1] != ch {
			changes = append(changes, ch)
		}
	}
	want = []cluster{{"c1", "DISCONNECTED", false}, {"c2", "DISCONNECTED", false}, {"c2", "SYNCING", false}, {"c2", "SYNCED", false}, {"c3", "DISCONNECTED", true}}
	if diff := cmp.Diff(want, changes); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	for len(c2) == 0 || c2[len(c2)-1].Status != "SYNCED" {
		ch := nextCluster(one)
		if len(c2) == 0 || c2[len(c2)-1] != ch {
			c2 = append(c2, ch)
		}
	}
	if diff := cmp.Diff(want[1:4], c2); diff != "" {
		t.Errorf("c2 (-want +got):\n%s", diff)
	}
	quiet(t, one)
}

// TestSubscriptionLifecycle: Close and the context end a waiting Next, and
// stopping the server ends every subscription.
func TestSubscriptionLifecycle(t *testing.T) {
	f := newFixture(t)
	s := newServer(t, f.ix, f.tracker, Options{})
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx) }()

	for _, q := range []string{eventsQuery, `subscription { clusterHealth(cluster: "none") { name } }`} {
		sub := subscribe(t, s, q, nil)
		waiting := make(chan error, 1)
		go func() { _, err := sub.Next(t.Context()); waiting <- err }()
		// Mostly, Next waits by now; either way it must end with io.EOF.
		time.Sleep(10 * time.Millisecond)
		sub.Close()
		sub.Close()
		if err := <-waiting; err != io.EOF {
			t.Errorf("Next ended by Close: %v, want io.EOF", err)
		}

		sub = subscribe(t, s, q, nil)
		nctx, cancel := context.WithCancel(t.Context())
		go func() { _, err := sub.Next(nctx); waiting <- err }()
		time.Sleep(10 * time.Millisecond) // as above: not needed for the outcome
		cancel()
		if err := <-waiting; err != context.Canceled {
			t.Errorf("Next ended by its context: %v, want context.Canceled", err)
		}
	}
	if n := s.hub.Subscribers(); n != 1 {
		t.Errorf("hub has %d members, want 1", n)
	}

	var subs []*Subscription
	for _, q := range []string{eventsQuery, `subscription { clusterHealth(cluster: "none") { name } }`} {
		subs = append(subs, subscribe(t, s, q, nil))
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, sub := range subs {
		if _, err := sub.Next(t.Context()); err != ErrServerStopped {
			t.Errorf("Next after the server stopped: %v, want ErrServerStopped", err)
		}
	}
	if err := s.Start(t.Context()); err == nil {
		t.Error("second Start succeeded")
	}
	sub := subscribe(t, s, eventsQuery, nil)
	if _, err := sub.Next(t.Context()); err != ErrServerStopped {
		t.Errorf("Next of a subscription after the server stopped: %v, want ErrServerStopped", err)
	}
	if n := s.hub.Subscribers(); n != 0 {
		t.Errorf("hub has %d members after stopping, want 0", n)
	}
}

func TestSubscribeRequests(t *testing.T) {
	f := newFixture(t)
	s := startServer(t, f.ix, f.tracker, Options{})
	for _, tc := range []struct {
		name, query string
		code        string // "" for a query that works
	}{
		{name: "query", query: `{ clusters { name } }`},
		{name: "parse error", query: `subscription {`, code: CodeParseFailed},
		{name: "unknown field", query: `subscription { resources { totalCount } }`, code: CodeValidationFailed},
		{name: "two fields", query: `subscription { resourceEvents { type } clusterHealth { name } }`, code: CodeValidationFailed},
		{name: "two fields through a fragment", query: `subscription { ...F clusterHealth { name } } fragment F on Subscription { clusterHealth { status } }`,
			code: CodeValidationFailed},
		{name: "typename", query: `subscription { __typename }`, code: CodeValidationFailed},
		{name: "skipped", query: `subscription { clusterHealth @skip(if: true) { name } }`, code: CodeValidationFailed},
		{name: "missing variable", query: `subscription($s: String!) { resourceEvents(since: $s) { type } }`, code: CodeBadUserInput},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sub, res := s.Subscribe(t.Context(), Request{Query: tc.query})
			if sub != nil {
				sub.Close()
				t.Fatal("subscription started")
			}
			if tc.code == "" {
				if len(res.Errors) > 0 || !res.Executed {
					t.Errorf("query result %+v", res)
				}
				return
			}
			if diff := cmp.Diff([]string{tc.code}, codes(res)); diff != "" {
				t.Errorf("codes (-want +got):\n%s", diff)
			}
			if res.Executed {
				t.Error("Executed = true")
			}
		})
	}
	// Without a streaming transport, a subscription is refused.
	res := s.Execute(t.Context(), Request{Query: `subscription { clusterHealth { name } }`})
	if diff := cmp.Diff([]string{CodeBadRequest}, codes(res)); diff != "" {
		t.Errorf("Execute codes (-want +got):\n%s", diff)
	}
	doc, errs := s.prepare(`subscription { clusterHealth { name } }`)
	if errs != nil {
		t.Fatal(errs)
	}
	op, err := selectOperation(doc.ast, "")
	if err != nil {
		t.Fatal(err)
	}
	res = s.execute(t.Context(), doc, op, nil)
	if diff := cmp.Diff([]string{CodeBadRequest}, codes(res)); diff != "" {
		t.Errorf("execute codes (-want +got):\n%s", diff)
	}
}

// TestSharedExecution: subscriptions with the same query and variables
// (since aside) share one execution, and one encoding, per event.
func TestSharedExecution(t *testing.T) {
	ix := index.New(index.Options{})
	s := startServer(t, ix, health.NewTracker(ix, health.Options{}), Options{})
	ix.Upsert(version(t, "c1", "ns", "a", "1", nil))
	since := cursor.EncodeRevision(cursor.Revision{Epoch: ix.Epoch(), Revision: ix.Revision()})
	filter := map[string]any{"namespaces": []any{"ns"}}
	a := subscribe(t, s, eventsQuery, map[string]any{"filter": filter})
	b := subscribe(t, s, eventsQuery, map[string]any{"filter": filter, "since": since})
	c := subscribe(t, s, `subscription($f: ResourceFilter) { resourceEvents(filter: $f) { type } }`, map[string]any{"f": filter})
	d := subscribe(t, s, eventsQuery, map[string]any{"filter": map[string]any{"namespaces": []any{"other"}}})
	if fg, eg := s.hub.Groups(); fg != 2 || eg != 3 {
		t.Errorf("%d filter groups and %d execution groups, want 2 and 3", fg, eg)
	}
	ix.Upsert(version(t, "c1", "ns", "b", "1", nil))
	ra, err := a.Next(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	rb, err := b.Next(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	rc, err := c.Next(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if ra != rb || ra == rc {
		t.Error("a and b do not share their payload, or c shares it")
	}
	if ra.encoded == nil {
		t.Error("shared payload not encoded once")
	}
	quiet(t, d)
}

func mustSelector(t testing.TB, s string) labels.Selector {
	t.Helper()
	sel, err := labels.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

// FuzzSubscribe checks that any document and since value either start a
// subscription or give coded errors, without a panic.
func FuzzSubscribe(f *testing.F) {
	ix := index.New(index.Options{})
	for i := range 5 {
		ix.Upsert(version(f, "c1", "ns", fmt.Sprint(i), "1", nil))
	}
	for _, seed := range []struct{ q, since string }{
		{eventsQuery, ""},
		{eventsQuery, cursor.EncodeRevision(cursor.Revision{Epoch: ix.Epoch(), Revision: 2})},
		{eventsQuery, cursor.EncodeRevision(cursor.Revision{Epoch: "other", Revision: 2})},
		{eventsQuery, cursor.EncodePage(object.Position{Cluster: "c1"})},
		{`subscription { clusterHealth { name status } }`, ""},
		{`subscription S { ...F } fragment F on Subscription { resourceEvents { cursor } }`, ""},
		{`subscription { resourceEvents @include(if: false) { type } }`, "x"},
		{`{ clusters { name } }`, ""},
	} {
		f.Add(seed.q, seed.since)
	}
	s := newServer(f, ix, health.NewTracker(ix, health.Options{}), Options{DocumentCacheSize: 16})
	f.Fuzz(func(t *testing.T, q, since string) {
		vars := map[string]any{}
		if since != "" {
			vars["since"] = since
		}
		sub, res := s.Subscribe(t.Context(), Request{Query: q, Variables: vars})
		if (sub == nil) == (res == nil) {
			t.Fatalf("Subscribe(%q) = %v, %v: want a subscription or a result", q, sub, res)
		}
		if sub == nil {
			if !res.Executed {
				for _, e := range res.Errors {
					if code(e) == "" {
						t.Fatalf("Subscribe(%q): error without code: %v", q, e)
					}
				}
			}
			return
		}
		defer sub.Close()
		ctx, cancel := context.WithTimeout(t.Context(), time.Millisecond)
		defer cancel()
		_, _ = sub.Next(ctx)
	})
}

// epochCursor returns the revision cursor of rev in s's index.
func epochCursor(s *Server, rev uint64) string {
	return cursor.EncodeRevision(cursor.Revision{Epoch: s.ix.Epoch(), Revision: rev})
}
