package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"

	"github.com/fleetcache/fleetcache/internal/app"
	"github.com/fleetcache/fleetcache/internal/apptest"
	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/fanout"
	"github.com/fleetcache/fleetcache/pkg/graphql"
	"github.com/fleetcache/fleetcache/pkg/graphql/cursor"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
)

// subFleet is the aggregator over the three test clusters, caching
// configmaps: the subscription tests call Subscribe and Next on its API.
type subFleet struct {
	*fleet
	api *graphql.Server
}

// startSubFleet starts a subFleet and waits until every cluster is SYNCED;
// it stops when the test ends, or earlier with stop.
func startSubFleet(t *testing.T, ixOpts index.Options, opts graphql.Options) *subFleet {
	t.Helper()
	env := testbed.Env(t)
	f := newFleet(t, app.Options{Index: ixOpts, Informers: apptest.Informers("configmaps"), GraphQL: opts})
	agg := f.Aggregator
	sf := &subFleet{fleet: f, api: agg.API}
	testcluster.Eventually(t, 90*time.Second, "every cluster SYNCED", func() (bool, string) {
		st, _ := agg.Health.Clusters()
		n := 0
		for _, c := range st {
			if c.Status == health.Synced {
				n++
			}
		}
		return n == len(env.Clusters()), fmt.Sprint(st)
	})
	return sf
}

const realEventsQuery = `subscription($filter: ResourceFilter, $since: String) {
  resourceEvents(filter: $filter, since: $since) { type cursor resource { cluster namespace name uid resourceVersion } }
}`

// realEvent is a decoded resourceEvents payload.
type realEvent struct {
	Type, Cursor                      string
	Cluster, Namespace, Name, UID, RV string
	Heartbeat                         bool
	HeartbeatCursor                   string
}

// String is "TYPE cluster/name".
func (e realEvent) String() string { return e.Type + " " + e.Cluster + "/" + e.Name }

func (f *subFleet) subscribe(t *testing.T, query string, vars map[string]any) *graphql.Subscription {
	t.Helper()
	sub, res := f.api.Subscribe(t.Context(), graphql.Request{Query: query, Variables: vars})
	if sub == nil {
		t.Fatalf("Subscribe: %s", mustMarshal(t, res))
	}
	t.Cleanup(sub.Close)
	return sub
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// nextPayload returns the next payload within timeout; ok is false when
// none came.
func nextPayload(t *testing.T, sub *graphql.Subscription, timeout time.Duration) (realEvent, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	res, err := sub.Next(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		return realEvent{}, false
	}
	if err != nil {
		t.Fatalf("Next: %v %s", err, mustMarshal(t, res))
	}
	e, err := decodeEvent(res)
	if err != nil {
		t.Fatal(err)
	}
	return e, true
}

// decodeEvent decodes a resourceEvents payload that must have no errors.
func decodeEvent(res *graphql.Result) (realEvent, error) {
	b, err := json.Marshal(res)
	if err != nil {
		return realEvent{}, err
	}
	if len(res.Errors) > 0 {
		return realEvent{}, fmt.Errorf("payload with errors: %s", b)
	}
	var p struct {
		Data *struct {
			ResourceEvents struct {
				Type, Cursor string
				Resource     struct {
					Cluster, Name, UID, ResourceVersion string
					Namespace                           *string
				}
			}
		}
		Extensions struct {
			Cursor    string
			Heartbeat bool
		}
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return realEvent{}, err
	}
	if p.Data == nil {
		return realEvent{Heartbeat: p.Extensions.Heartbeat, HeartbeatCursor: p.Extensions.Cursor}, nil
	}
	e := p.Data.ResourceEvents
	out := realEvent{Type: e.Type, Cursor: e.Cursor, Cluster: e.Resource.Cluster, Name: e.Resource.Name, UID: e.Resource.UID, RV: e.Resource.ResourceVersion}
	if e.Resource.Namespace != nil {
		out.Namespace = *e.Resource.Namespace
	}
	return out, nil
}

// nextEvents returns the next n events, skipping heartbeats.
func nextEvents(t *testing.T, sub *graphql.Subscription, n int) []realEvent {
	t.Helper()
	var out []realEvent
	deadline := time.Now().Add(90 * time.Second)
	for len(out) < n {
		if time.Now().After(deadline) {
			t.Fatalf("got %d of %d events: %v", len(out), n, out)
		}
		e, ok := nextPayload(t, sub, time.Until(deadline))
		if ok && !e.Heartbeat {
			out = append(out, e)
		}
	}
	return out
}

// drain returns the events until the subscription has caught up with the
// index at its current revision, which it shows with a heartbeat (its
// HeartbeatInterval must be short).
func (f *subFleet) drain(t *testing.T, sub *graphql.Subscription) []realEvent {
	t.Helper()
	var out []realEvent
	target := f.Index.Revision()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		e, ok := nextPayload(t, sub, time.Until(deadline))
		if !ok {
			break
		}
		if !e.Heartbeat {
			out = append(out, e)
			continue
		}
		if c, err := cursor.DecodeRevision(e.HeartbeatCursor); err != nil {
			t.Fatal(err)
		} else if c.Revision >= target {
			return out
		}
	}
	t.Fatalf("no heartbeat at revision %d; events %v", target, out)
	return nil
}

func eventNames(events []realEvent) []string {
	out := []string{}
	for _, e := range events {
		out = append(out, e.String())
	}
	return out
}

// namespaces counts the namespaces freshNamespace made.
var namespaces atomic.Int64

// freshNamespace returns a namespace name no test used yet in this
// process (the clusters outlive a test; -count=2 runs it again).
func freshNamespace(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, namespaces.Add(1))
}

// cmKey is the index key of a ConfigMap.
func cmKey(cluster, ns, name string) object.Key {
	return object.Key{Cluster: cluster, Resource: "configmaps", Namespace: ns, Name: name}
}

// waitIndexed waits until the index holds u's version of its ConfigMap.
func (f *subFleet) waitIndexed(t *testing.T, cluster string, u *unstructured.Unstructured) {
	t.Helper()
	testcluster.Eventually(t, 30*time.Second, "the index to hold "+cluster+"/"+u.GetName()+" at "+u.GetResourceVersion(), func() (bool, string) {
		o := f.Index.Get(cmKey(cluster, u.GetNamespace(), u.GetName()))
		if o == nil {
			return false, "absent"
		}
		return o.ResourceVersion == u.GetResourceVersion(), o.ResourceVersion
	})
}

// waitGone waits until the index no longer holds a ConfigMap.
func (f *subFleet) waitGone(t *testing.T, cluster, ns, name string) {
	t.Helper()
	testcluster.Eventually(t, 30*time.Second, "the index to drop "+cluster+"/"+name, func() (bool, string) {
		return f.Index.Get(cmKey(cluster, ns, name)) == nil, "present"
	})
}

// editCM changes a ConfigMap: its labels if lbls is not nil, its data if
// data is not nil.
func editCM(t *testing.T, d dynamic.Interface, ns, name string, lbls map[string]string, data map[string]any) *unstructured.Unstructured {
	t.Helper()
	r := d.Resource(cached[1].gvr).Namespace(ns)
	u, err := r.Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if lbls != nil {
		u.SetLabels(lbls)
	}
	if data != nil {
		u.Object["data"] = data
	}
	out, err := r.Update(t.Context(), u, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update %s/%s: %v", ns, name, err)
	}
	return out
}

func deleteCM(t *testing.T, d dynamic.Interface, ns, name string) {
	t.Helper()
	if err := d.Resource(cached[1].gvr).Namespace(ns).Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete %s/%s: %v", ns, name, err)
	}
}

// TestResourceEventsOnRealClusters changes ConfigMaps through the API
// servers, one change reaching the index before the next is made, and
// checks the events of a filtered subscription, including objects entering
// and leaving the filter by a label change; then it resumes after a
// disconnect with since and gets exactly the missed events.
func TestResourceEventsOnRealClusters(t *testing.T) {
	env := testbed.Env(t)
	ns := freshNamespace("sub-events")
	d := map[string]dynamic.Interface{}
	for _, c := range env.Clusters() {
		d[c.Name()] = dyn(t, c)
		createNamespace(t, d[c.Name()], ns)
	}
	f := startSubFleet(t, index.Options{}, graphql.Options{Fanout: fanout.Options{HeartbeatInterval: 200 * time.Millisecond}})
	web := map[string]any{"app": "web"}
	vars := map[string]any{"filter": map[string]any{"namespaces": []any{ns}, "kinds": []any{"ConfigMap"}, "labelSelector": "app=web"}}
	sub := f.subscribe(t, realEventsQuery, vars)

	created := func(c string, name string, lbls map[string]any) {
		f.waitIndexed(t, c, create(t, d[c], cached[1].gvr, configMap(ns, name, lbls, nil)))
	}
	edited := func(c, name string, lbls map[string]string, data map[string]any) {
		f.waitIndexed(t, c, editCM(t, d[c], ns, name, lbls, data))
	}
	deleted := func(c, name string) {
		deleteCM(t, d[c], ns, name)
		f.waitGone(t, c, ns, name)
	}
	created("c1", "a", web)
	created("c2", "b", map[string]any{"app": "db"})
	edited("c1", "a", nil, map[string]any{"k": "v2"})
	edited("c1", "a", map[string]string{"app": "db"}, nil)  // leaves
	edited("c2", "b", map[string]string{"app": "web"}, nil) // enters
	created("c3", "c", web)
	deleted("c2", "b")
	want := []string{"ADDED c1/a", "MODIFIED c1/a", "DELETED c1/a", "ADDED c2/b", "ADDED c3/c", "DELETED c2/b"}
	got := f.drain(t, sub)
	if diff := gocmp.Diff(want, eventNames(got)); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}

	// The client disconnects after its last event; changes happen; it
	// resumes from that event's cursor.
	last := got[len(got)-1].Cursor
	sub.Close()
	edited("c3", "c", nil, map[string]any{"k": "v2"})
	edited("c1", "a", map[string]string{"app": "web"}, nil) // enters again
	created("c2", "other", map[string]any{"app": "db"})
	deleted("c3", "c")
	vars["since"] = last
	sub = f.subscribe(t, realEventsQuery, vars)
	want = []string{"MODIFIED c3/c", "ADDED c1/a", "DELETED c3/c"}
	if diff := gocmp.Diff(want, eventNames(f.drain(t, sub))); diff != "" {
		t.Fatalf("resumed events (-want +got):\n%s", diff)
	}
	// Then it follows live.
	deleted("c1", "a")
	if diff := gocmp.Diff([]string{"DELETED c1/a"}, eventNames(f.drain(t, sub))); diff != "" {
		t.Fatalf("live events (-want +got):\n%s", diff)
	}
}

// subOutage stops a cluster's API server, changes its ConfigMaps through a
// second API server on the same etcd prefix (compacting etcd with
// compact, so that the informers relist after a 410), restarts it, and
// checks that a subscription started before the outage receives the
// corresponding events, and that clusterHealth reports the outage.
func subOutage(t *testing.T, cluster string, compact bool) {
	env := testbed.Env(t)
	c := env.Cluster(cluster)
	dc := dyn(t, c)
	ns := freshNamespace("sub-outage")
	if compact {
		ns = freshNamespace("sub-compacted")
	}
	createNamespace(t, dc, ns)
	for _, name := range []string{"keep", "change", "gone", "recreate"} {
		create(t, dc, cached[1].gvr, configMap(ns, name, map[string]any{"v": "1"}, nil))
	}
	f := startSubFleet(t, index.Options{}, graphql.Options{Fanout: fanout.Options{HeartbeatInterval: 200 * time.Millisecond}})
	testcluster.Eventually(t, 30*time.Second, "4 ConfigMaps indexed", func() (bool, string) {
		n := len(planner.List(f.Index, planner.Filter{Clusters: []string{cluster}, Namespaces: []string{ns}}, nil, 0).Objects)
		return n == 4, fmt.Sprint(n)
	})
	oldRecreate := f.Index.Get(cmKey(cluster, ns, "recreate")).UID
	sub := f.subscribe(t, realEventsQuery, map[string]any{"filter": map[string]any{"clusters": []any{cluster}, "namespaces": []any{ns}}})
	hs := f.subscribe(t, `subscription($c: String) { clusterHealth(cluster: $c) { name status stale } }`, map[string]any{"c": cluster})
	statuses := make(chan string)
	done := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer hs.Close()
	defer close(done)
	wg.Go(func() {
		for {
			res, err := hs.Next(context.Background())
			if err != nil {
				return
			}
			var p struct {
				Data struct{ ClusterHealth struct{ Status string } }
			}
			if err := json.Unmarshal(mustMarshal(t, res), &p); err != nil {
				t.Errorf("decode clusterHealth: %v", err)
			}
			select {
			case statuses <- p.Data.ClusterHealth.Status:
			case <-done:
				return
			}
		}
	})
	waitStatus := func(want string) {
		t.Helper()
		timeout := time.After(60 * time.Second)
		for {
			select {
			case s := <-statuses:
				if s == want {
					return
				}
			case <-timeout:
				t.Fatalf("clusterHealth never reported %s", want)
			}
		}
	}
	waitStatus("SYNCED")

	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			if err := c.Restart(context.Background()); err != nil {
				t.Errorf("restart %s: %v", cluster, err)
			}
		}
	})
	waitStatus("DISCONNECTED")
	second, err := c.StartSecondary(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	sc, err := dynamic.NewForConfig(second.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	create(t, sc, cached[1].gvr, configMap(ns, "new", map[string]any{"v": "1"}, nil))
	editCM(t, sc, ns, "change", nil, map[string]any{"k": "v2"})
	deleteCM(t, sc, ns, "gone")
	deleteCM(t, sc, ns, "recreate")
	recreated := create(t, sc, cached[1].gvr, configMap(ns, "recreate", map[string]any{"v": "again"}, nil))
	if compact {
		if _, err := env.Compact(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if err := second.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(t.Context()); err != nil {
		t.Fatal(err)
	}
	restarted = true
	waitStatus("SYNCED")
	f.waitIndexed(t, cluster, recreated)

	got := f.drain(t, sub)
	byName := map[string][]string{}
	for _, e := range got {
		byName[e.Name] = append(byName[e.Name], e.Type)
	}
	want := map[string][]string{"new": {"ADDED"}, "change": {"MODIFIED"}, "gone": {"DELETED"}, "recreate": {"DELETED", "ADDED"}}
	if diff := gocmp.Diff(want, byName); diff != "" {
		t.Errorf("events after the outage by object (-want +got):\n%s\nevents: %v", diff, got)
	}
	for _, e := range got {
		if e.Name == "recreate" {
			wantUID := string(oldRecreate)
			if e.Type == "ADDED" {
				wantUID = string(recreated.GetUID())
			}
			if e.UID != wantUID {
				t.Errorf("%s has UID %s, want %s", e, e.UID, wantUID)
			}
		}
	}
}

func TestResourceEventsAcrossOutage(t *testing.T) { subOutage(t, "c2", false) }

func TestResourceEventsAcrossCompaction(t *testing.T) { subOutage(t, "c3", true) }

// TestListThenFollow lists, then follows from the list's revision while
// ConfigMaps are created, changed and deleted in two clusters: the
// client's mirror equals the index at the end.
func TestListThenFollow(t *testing.T) {
	env := testbed.Env(t)
	ns := freshNamespace("sub-mirror")
	cs := []*testcluster.Cluster{env.Cluster("c1"), env.Cluster("c2")}
	var ds []dynamic.Interface
	for _, c := range cs {
		d := dyn(t, c)
		ds = append(ds, d)
		createNamespace(t, d, ns)
		for i := range 10 {
			create(t, d, cached[1].gvr, configMap(ns, fmt.Sprintf("cm-%d", i), map[string]any{"app": "web"}, nil))
		}
	}
	f := startSubFleet(t, index.Options{}, graphql.Options{Fanout: fanout.Options{HeartbeatInterval: 200 * time.Millisecond}})
	filter := map[string]any{"namespaces": []any{ns}, "labelSelector": "app=web"}

	// Churn: create, relabel (in and out of the filter), change and
	// delete, until told to stop.
	ctx, stop := context.WithCancel(t.Context())
	var churn sync.WaitGroup
	var changes sync.Map // count by cluster index
	for i, d := range ds {
		churn.Go(func() {
			r := rand.New(rand.NewPCG(uint64(i), 7))
			cms := d.Resource(cached[1].gvr).Namespace(ns)
			n := 0
			for ctx.Err() == nil {
				name := fmt.Sprintf("cm-%d", r.IntN(20))
				var err error
				switch r.IntN(4) {
				case 0:
					_, err = cms.Create(ctx, configMap(ns, name, map[string]any{"app": "web"}, nil), metav1.CreateOptions{})
				case 1:
					err = cms.Delete(ctx, name, metav1.DeleteOptions{})
				default:
					var u *unstructured.Unstructured
					if u, err = cms.Get(ctx, name, metav1.GetOptions{}); err == nil {
						u.SetLabels(map[string]string{"app": []string{"web", "db"}[r.IntN(2)]})
						u.Object["data"] = map[string]any{"n": fmt.Sprint(n)}
						_, err = cms.Update(ctx, u, metav1.UpdateOptions{})
					}
				}
				if err == nil {
					n++
				}
			}
			changes.Store(i, n)
		})
	}
	defer churn.Wait()
	defer stop()
	time.Sleep(300 * time.Millisecond) // let the churn start: this is no synchronization

	type state struct{ UID, RV string }
	mirror := map[string]state{}
	res := f.api.Execute(t.Context(), graphql.Request{
		Query:     `query($f: ResourceFilter) { resources(filter: $f, first: 1000) { revision edges { node { cluster name uid resourceVersion } } } }`,
		Variables: map[string]any{"f": filter},
	})
	if len(res.Errors) > 0 {
		t.Fatalf("list: %s", mustMarshal(t, res))
	}
	var wrapper struct {
		Resources struct {
			Revision string
			Edges    []struct {
				Node struct{ Cluster, Name, UID, ResourceVersion string }
			}
		}
	}
	if err := json.Unmarshal(mustMarshal(t, res.Data), &wrapper); err != nil {
		t.Fatal(err)
	}
	for _, e := range wrapper.Resources.Edges {
		mirror[e.Node.Cluster+"/"+e.Node.Name] = state{e.Node.UID, e.Node.ResourceVersion}
	}
	sub := f.subscribe(t, realEventsQuery, map[string]any{"filter": filter, "since": wrapper.Resources.Revision})
	applied := 0
	apply := func(events []realEvent) {
		for _, e := range events {
			k := e.Cluster + "/" + e.Name
			switch e.Type {
			case "ADDED", "MODIFIED":
				mirror[k] = state{e.UID, e.RV}
			case "DELETED":
				delete(mirror, k)
			}
			applied++
		}
	}
	// Follow while the churn goes on.
	for deadline := time.Now().Add(30 * time.Second); applied < 100 && time.Now().Before(deadline); {
		e, ok := nextPayload(t, sub, 10*time.Second)
		if ok && !e.Heartbeat {
			apply([]realEvent{e})
		}
	}
	stop()
	churn.Wait()

	// The index converges to the API servers; the mirror follows it.
	want := map[string]state{}
	testcluster.Eventually(t, 60*time.Second, "the index to hold what the API servers list", func() (bool, string) {
		want = map[string]state{}
		for i, d := range ds {
			l, err := d.Resource(cached[1].gvr).Namespace(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "app=web"})
			if err != nil {
				t.Fatal(err)
			}
			for _, u := range l.Items {
				want[cs[i].Name()+"/"+u.GetName()] = state{string(u.GetUID()), u.GetResourceVersion()}
			}
		}
		idx := map[string]state{}
		for _, o := range planner.List(f.Index, planner.Filter{Namespaces: []string{ns}, Selector: mustParseSelector(t, "app=web")}, nil, 0).Objects {
			idx[o.Cluster+"/"+o.Name] = state{string(o.UID), o.ResourceVersion}
		}
		diff := gocmp.Diff(want, idx)
		return diff == "", diff
	})
	apply(f.drain(t, sub))
	if diff := gocmp.Diff(want, mirror); diff != "" {
		t.Errorf("mirror (-index +mirror):\n%s", diff)
	}
	n0, _ := changes.Load(0)
	n1, _ := changes.Load(1)
	t.Logf("listed %d objects, then applied %d events; %v + %v changes made", len(wrapper.Resources.Edges), applied, n0, n1)
	if applied < 100 {
		t.Errorf("only %d events followed", applied)
	}
}

// TestCursorExpiredOnRealClusters: a since older than the retained
// changes resumes from its clocks (docs/design.md, "Cursors from the
// members' clocks"); one from an aggregator that since restarted, with a
// deletion in between that the new one cannot know, ends the subscription
// with CURSOR_EXPIRED; a page cursor is BAD_USER_INPUT.
func TestCursorExpiredOnRealClusters(t *testing.T) {
	env := testbed.Env(t)
	ns := freshNamespace("sub-expire")
	d := dyn(t, env.Cluster("c1"))
	createNamespace(t, d, ns)
	f := startSubFleet(t, index.Options{Retention: 20}, graphql.Options{})
	var list struct {
		Resources struct {
			Revision string
			Edges    []struct{ Cursor string }
		}
	}
	listRevision := func(f *subFleet) {
		t.Helper()
		res := f.api.Execute(t.Context(), graphql.Request{Query: `{ resources(first: 1) { revision edges { cursor } } }`})
		if err := json.Unmarshal(mustMarshal(t, res.Data), &list); err != nil || len(res.Errors) > 0 {
			t.Fatalf("list: %v %s", err, mustMarshal(t, res))
		}
	}
	listRevision(f)
	old, page := list.Resources.Revision, list.Resources.Edges[0].Cursor
	var lastCM *unstructured.Unstructured
	for i := range 30 {
		lastCM = create(t, d, cached[1].gvr, configMap(ns, fmt.Sprintf("cm-%d-%d", time.Now().UnixNano(), i), nil, nil))
	}
	f.waitIndexed(t, "c1", lastCM)

	expectEnd := func(f *subFleet, since, code string) {
		t.Helper()
		sub, res := f.api.Subscribe(t.Context(), graphql.Request{Query: realEventsQuery, Variables: map[string]any{"since": since}})
		if sub != nil {
			defer sub.Close()
			var err error
			res, err = sub.Next(t.Context())
			if !errors.Is(err, graphql.ErrEnded) {
				t.Fatalf("Next = %v, want ErrEnded", err)
			}
		}
		if len(res.Errors) != 1 || res.Errors[0].Extensions["code"] != code {
			t.Errorf("since %s: %s, want %s", since, mustMarshal(t, res), code)
		}
	}
	// The changes after old left the feed (retention 20): the clocks
	// resume it, the 30 ConfigMaps among what it catches up with.
	resumed := f.subscribe(t, realEventsQuery, map[string]any{"since": old, "filter": map[string]any{"namespaces": []any{ns}}})
	caught := map[string]bool{}
	for _, e := range nextEvents(t, resumed, 30) {
		caught[e.Name] = true
	}
	if !caught[lastCM.GetName()] || len(caught) != 30 {
		t.Errorf("resumed from clocks past the retained changes: %d ConfigMaps, the last one %t", len(caught), caught[lastCM.GetName()])
	}
	expectEnd(f, page, graphql.CodeBadUserInput)

	// Restart: a new aggregator, a new index epoch; a ConfigMap deleted
	// while none runs is a deletion the new one cannot know.
	listRevision(f)
	recent := list.Resources.Revision
	f.stop()
	if err := d.Resource(cached[1].gvr).Namespace(ns).Delete(t.Context(), lastCM.GetName(), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f2 := startSubFleet(t, index.Options{}, graphql.Options{})
	expectEnd(f2, recent, graphql.CodeCursorExpired)
	listRevision(f2)
	sub := f2.subscribe(t, realEventsQuery, map[string]any{"since": list.Resources.Revision, "filter": map[string]any{"namespaces": []any{ns}}})
	create(t, d, cached[1].gvr, configMap(ns, "after-restart", nil, nil))
	if diff := gocmp.Diff([]string{"ADDED c1/after-restart"}, eventNames(nextEvents(t, sub, 1))); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestSlowConsumerOnRealClusters: a subscriber that does not read is ended
// once its buffer overflows; ingestion and another subscriber go on.
func TestSlowConsumerOnRealClusters(t *testing.T) {
	env := testbed.Env(t)
	const n = 40
	ns := freshNamespace("sub-slow")
	d := dyn(t, env.Cluster("c1"))
	createNamespace(t, d, ns)
	f := startSubFleet(t, index.Options{}, graphql.Options{Fanout: fanout.Options{Buffer: 10}})
	vars := map[string]any{"filter": map[string]any{"namespaces": []any{ns}}}
	slow := f.subscribe(t, realEventsQuery, vars)
	fast := f.subscribe(t, realEventsQuery, vars)
	got := make(chan []string, 1)
	go func() {
		var out []string
		for len(out) < n {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			res, err := fast.Next(ctx)
			cancel()
			if err != nil {
				t.Errorf("fast subscriber: %v", err)
				break
			}
			e, err := decodeEvent(res)
			if err != nil {
				t.Error(err)
				break
			}
			out = append(out, e.String())
		}
		got <- out
	}()
	prefix := fmt.Sprintf("cm-%d-", time.Now().UnixNano())
	var want []string
	for i := range n {
		create(t, d, cached[1].gvr, configMap(ns, fmt.Sprintf("%s%02d", prefix, i), nil, nil))
		want = append(want, fmt.Sprintf("ADDED c1/%s%02d", prefix, i))
	}
	if diff := gocmp.Diff(want, <-got); diff != "" {
		t.Errorf("fast subscriber (-want +got):\n%s", diff)
	}
	if res, err := slow.Next(t.Context()); !errors.Is(err, graphql.ErrSlowConsumer) {
		t.Errorf("slow subscriber: %v %s, want ErrSlowConsumer", err, mustMarshal(t, res))
	}
	if got := len(planner.List(f.Index, planner.Filter{Namespaces: []string{ns}}, nil, 0).Objects); got < n {
		t.Errorf("index holds %d ConfigMaps of %s, want at least %d", got, ns, n)
	}
}

func mustParseSelector(t *testing.T, s string) labels.Selector {
	t.Helper()
	sel, err := labels.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return sel
}
