package api_test

import (
	"fmt"
	"math/rand/v2"
	"net/url"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/fleetcache/fleetcache/internal/nodetest"
	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/transport"
)

// TestReplicaStopRealClient runs two replicas over the three clusters behind
// a TCP proxy that plays their Service, and the real graphql-ws client,
// retrying and keeping its subscription's since at the last cursor it
// received (testdata/ws_client.js, "resume"), subscribed through it:
//
//   - its connection is cut (1006): it reconnects to the same replica and
//     resumes exactly after its last event: the changes made while it was
//     away, then a marker, nothing missing and nothing twice;
//   - its replica stops, after the proxy sends new connections to the other
//     one (as the Service does during the chart's preStop sleep): it sees
//     1001, a close code graphql-ws retries on, reconnects to the other
//     replica and subscribes again with its last cursor, which that replica
//     resumes (cursors from the members' clocks): the objects created after
//     it, then a marker, nothing from before.
//
// The client relies on graphql-ws's own retry rules (no shouldRetry of its
// own): a close code it treats as terminal fails the test.
func TestReplicaStopRealClient(t *testing.T) {
	env := testbed.Env(t)
	dir := nodetest.Install(t, streamingPackages...)
	first := startLiveFleet(t, transport.Options{}, "namespaces", "configmaps")
	second := startLiveFleet(t, transport.Options{}, "namespaces", "configmaps")
	first.waitSynced(t)
	second.waitSynced(t)
	service, err := testcluster.StartProxy(hostOf(t, first.url))
	if err != nil {
		t.Fatal(err)
	}
	defer service.Close()

	ns := fmt.Sprintf("replicas-%d", rand.IntN(1e6))
	for _, c := range env.Clusters() {
		createNamespace(t, dyn(t, c), ns)
	}
	filter := map[string]any{"namespaces": []string{ns}, "kinds": []string{"ConfigMap"}}
	var page struct{ Resources struct{ Revision string } }
	first.mustQuery(t, `{ resources(first: 0) { revision } }`, nil, &page)
	client := startNodeClient(t, dir, "ws_client.js", "http://"+service.Addr()+"/graphql", "resume")
	client.subscribe("web", liveQuery, map[string]any{"filter": filter, "since": page.Resources.Revision})
	c1 := configMaps(t, env.Cluster("c1"), ns)
	c1.create("a", "web")
	if e := client.events("web", 1)[0]; e.Type != "ADDED" || e.Name != "a" {
		t.Fatalf("first event %v, want ADDED c1/a", e)
	}

	// A cut connection: the same replica, resumed.
	service.Cut()
	inEveryCluster(t, ns, func(c cmClient) { c.create("b", "web") })
	if err := service.Restore(); err != nil {
		t.Fatal(err)
	}
	client.expectReconnect(1006)
	missed := client.events("web", 3)
	want := map[string][]string{}
	for _, c := range env.Clusters() {
		want[c.Name()] = []string{"ADDED b web"}
	}
	if diff := gocmp.Diff(want, byCluster(missed)); diff != "" {
		t.Fatalf("events after reconnecting to the same replica (-want +got):\n%s", diff)
	}
	c1.create("marker", "web")
	if e := client.events("web", 1)[0]; e.Type != "ADDED" || e.Name != "marker" {
		t.Fatalf("after the missed events: %v, want ADDED c1/marker", e)
	}

	// The replica stops: the other one, through the Service, resumed.
	service.Retarget(hostOf(t, second.url))
	first.stop()
	client.expectReconnect(1001)
	inEveryCluster(t, ns, func(c cmClient) { c.create("c", "web") })
	// A resume on another index catches up from the cursor's clocks and may
	// deliver a state the client already has: every event is "the object is
	// now this" (docs/design.md); the change the cursor was taken at may
	// come again, as its clock holds from the next revision.
	seen := map[string]bool{}
	for len(seen) < len(env.Clusters()) {
		e := client.events("web", 1)[0]
		if e.Name == "marker" && e.Cluster == "c1" && e.Type != "DELETED" {
			continue // the last change before the move, repeated: allowed
		}
		if e.Name != "c" || e.Type == "DELETED" {
			t.Fatalf("after moving to the other replica: %v, want c ADDED or MODIFIED in each cluster", e)
		}
		seen[e.Cluster] = true
	}
	c1.create("marker2", "web")
	for {
		e := client.events("web", 1)[0]
		if e.Name == "marker2" && e.Type == "ADDED" && e.Cluster == "c1" {
			break
		}
		if e.Name != "c" || e.Type == "DELETED" {
			t.Fatalf("before the marker: %v, want ADDED c1/marker2 (or c again)", e)
		}
	}
}

// expectReconnect reads the client's reports until it has reconnected: a
// close with code, then a new connection; connection attempts that failed
// meanwhile (1006) and heartbeats are skipped. Any other report fails the
// test.
func (n *nodeClient) expectReconnect(code int) {
	n.t.Helper()
	closed := false
	for {
		r := n.next()
		switch {
		case r.Type == "next":
			if e, ok := n.decodeEvent(r.ID, r.Payload); ok {
				n.t.Fatalf("%s: event %v while waiting for a reconnect", n.name, e)
			}
		case r.Type == "closed" && !closed && r.Code == code:
			closed = true
		case r.Type == "closed" && closed && r.Code == 1006:
		case r.Type == "connected" && closed:
			return
		default:
			n.t.Fatalf("%s: %+v, want closed with %d, then connected", n.name, r, code)
		}
	}
}

// hostOf returns the host:port of a URL.
func hostOf(t *testing.T, u string) string {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	return p.Host
}
