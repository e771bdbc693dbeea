package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/fleetcache/fleetcache/internal/app"
	"github.com/fleetcache/fleetcache/internal/apptest"
	"github.com/fleetcache/fleetcache/internal/nodetest"
	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/transport"
)

// streamingPackages are the npm packages of the real-client subscription
// tests, pinned: graphql-ws needs ws on Node 20, both need graphql.
var streamingPackages = []string{"graphql-ws@6.4.2", "ws@8.23.0", "graphql-sse@2.6.1", "graphql@16.15.0"}

// startLiveFleet is startFleet with transport options of its own.
func startLiveFleet(t *testing.T, opts transport.Options, resources ...string) *fleet {
	t.Helper()
	return newFleet(t, app.Options{Informers: apptest.Informers(resources...), Transport: opts})
}

// nodeClient is a node process running testdata/ws_client.js or
// sse_client.js: the test sends it commands and reads its reports.
type nodeClient struct {
	t       *testing.T
	name    string
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	reports chan report
	stderr  *bytes.Buffer
	wg      sync.WaitGroup
}

// report is a line of a client's output.
type report struct {
	ID      string
	Type    string
	Payload json.RawMessage
	Error   json.RawMessage
	Code    int
}

// startNodeClient starts script with the endpoint's URL and the script's
// further arguments, and waits until it reads commands. It is killed when
// the test ends.
func startNodeClient(t *testing.T, dir, script, url string, args ...string) *nodeClient {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node not found (make testdeps installs it with apt): %v", err)
	}
	abs, err := filepath.Abs(filepath.Join("testdata", script))
	if err != nil {
		t.Fatal(err)
	}
	n := &nodeClient{t: t, name: script, reports: make(chan report, 1024), stderr: &bytes.Buffer{}}
	n.cmd = exec.Command(node, append([]string{abs, url}, args...)...)
	n.cmd.Dir = dir
	n.cmd.Env = append(os.Environ(), "NODE_PATH="+filepath.Join(dir, "node_modules"))
	n.cmd.Stderr = n.stderr
	if n.stdin, err = n.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := n.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	n.wg.Go(func() {
		defer close(n.reports)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			var r report
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Errorf("%s: bad report %q: %v", script, sc.Text(), err)
				continue
			}
			n.reports <- r
		}
	})
	t.Cleanup(n.kill)
	if r := n.next(); r.Type != "ready" {
		t.Fatalf("%s: first report %+v, want ready", script, r)
	}
	return n
}

// kill ends the process abruptly (the client's connections drop without
// a close handshake) and waits for it.
func (n *nodeClient) kill() {
	if n.cmd.ProcessState != nil {
		return
	}
	_ = n.cmd.Process.Kill()
	for range n.reports {
	}
	n.wg.Wait()
	_ = n.cmd.Wait()
	if n.t.Failed() && n.stderr.Len() > 0 {
		n.t.Logf("%s stderr:\n%s", n.name, n.stderr)
	}
}

func (n *nodeClient) send(cmd map[string]any) {
	n.t.Helper()
	b, err := json.Marshal(cmd)
	if err != nil {
		n.t.Fatal(err)
	}
	if _, err := n.stdin.Write(append(b, '\n')); err != nil {
		n.t.Fatalf("%s: send %s: %v", n.name, b, err)
	}
}

// next returns the next report, failing after a minute.
func (n *nodeClient) next() report {
	n.t.Helper()
	select {
	case r, ok := <-n.reports:
		if !ok {
			n.t.Fatalf("%s exited; stderr:\n%s", n.name, n.stderr)
		}
		return r
	case <-time.After(time.Minute):
		n.t.Fatalf("%s: no report for a minute; stderr:\n%s", n.name, n.stderr)
	}
	return report{}
}

// reportOf returns the next report of subscription id.
func (n *nodeClient) reportOf(id string) report {
	n.t.Helper()
	for {
		if r := n.next(); r.ID == id {
			return r
		}
	}
}

func (n *nodeClient) subscribe(id, query string, vars map[string]any) {
	n.t.Helper()
	n.send(map[string]any{"op": "subscribe", "id": id, "query": query, "variables": vars})
}

// liveEvent is a resourceEvents event as a client received it.
type liveEvent struct {
	Type, Cluster, Name, App, Cursor string
}

func (e liveEvent) String() string { return e.Type + " " + e.Cluster + "/" + e.Name }

const liveQuery = `subscription($filter: ResourceFilter, $since: String) {
  resourceEvents(filter: $filter, since: $since) { type cursor resource { cluster name labels } }
}`

// events reads the next count events of subscription id, skipping
// heartbeats and the other reports.
func (n *nodeClient) events(id string, count int) []liveEvent {
	n.t.Helper()
	var out []liveEvent
	for len(out) < count {
		r := n.next()
		switch {
		case r.ID != id:
			continue
		case r.Type != "next":
			n.t.Fatalf("%s: subscription %s: %s %s (after %d of %d events: %v)", n.name, id, r.Type, r.Error, len(out), count, out)
		}
		if e, ok := n.decodeEvent(id, r.Payload); ok {
			out = append(out, e)
		}
	}
	return out
}

// decodeEvent decodes the payload of a next report of subscription id:
// its event, or false for a heartbeat. Errors in the payload fail the test.
func (n *nodeClient) decodeEvent(id string, payload json.RawMessage) (liveEvent, bool) {
	n.t.Helper()
	var p struct {
		Data *struct {
			ResourceEvents struct {
				Type, Cursor string
				Resource     struct {
					Cluster, Name string
					Labels        map[string]string
				}
			}
		}
		Errors     []gqlError
		Extensions struct{ Heartbeat bool }
	}
	if err := json.Unmarshal(payload, &p); err != nil {
		n.t.Fatalf("%s: decode %s: %v", n.name, payload, err)
	}
	if len(p.Errors) > 0 {
		n.t.Fatalf("%s: subscription %s: errors %+v", n.name, id, p.Errors)
	}
	if p.Extensions.Heartbeat {
		return liveEvent{}, false
	}
	e := p.Data.ResourceEvents
	return liveEvent{Type: e.Type, Cluster: e.Resource.Cluster, Name: e.Resource.Name, App: e.Resource.Labels["app"], Cursor: e.Cursor}, true
}

// byCluster groups events by cluster, as "TYPE name app".
func byCluster(events []liveEvent) map[string][]string {
	out := map[string][]string{}
	for _, e := range events {
		out[e.Cluster] = append(out[e.Cluster], e.Type+" "+e.Name+" "+e.App)
	}
	return out
}

// cmClient is a ConfigMap client of namespace ns in cluster c.
type cmClient struct {
	t  *testing.T
	r  dynamic.ResourceInterface
	ns string
}

func configMaps(t *testing.T, c *testcluster.Cluster, ns string) cmClient {
	return cmClient{t: t, r: dyn(t, c).Resource(cached[1].gvr).Namespace(ns), ns: ns}
}

func (c cmClient) create(name, app string) {
	c.t.Helper()
	if _, err := c.r.Create(context.Background(), configMap(c.ns, name, map[string]any{"app": app}, nil), metav1.CreateOptions{}); err != nil {
		c.t.Fatalf("create %s: %v", name, err)
	}
}

// update changes a ConfigMap: its app label, or (app "") its data.
func (c cmClient) update(name, app string) {
	c.t.Helper()
	u, err := c.r.Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	if app != "" {
		u.SetLabels(map[string]string{"app": app})
	} else if err := unstructured.SetNestedField(u.Object, fmt.Sprint(rand.Int()), "data", "x"); err != nil {
		c.t.Fatal(err)
	}
	if _, err := c.r.Update(context.Background(), u, metav1.UpdateOptions{}); err != nil {
		c.t.Fatalf("update %s: %v", name, err)
	}
}

func (c cmClient) delete(name string) {
	c.t.Helper()
	if err := c.r.Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		c.t.Fatalf("delete %s: %v", name, err)
	}
}

// inEveryCluster runs fn for each cluster, concurrently.
func inEveryCluster(t *testing.T, ns string, fn func(cmClient)) {
	env := testbed.Env(t)
	var wg sync.WaitGroup
	for _, c := range env.Clusters() {
		wg.Go(func() { fn(configMaps(t, c, ns)) })
	}
	wg.Wait()
}

// TestSubscriptionsWithRealClients follows changes made through the three
// API servers with the real graphql-ws and graphql-sse npm clients: the
// right ADDED, MODIFIED and DELETED events, objects entering and leaving
// the filter by a label change, and no event lost across a client's
// disconnect: it resumes from its last cursor and gets exactly what a
// client that stayed got meanwhile, in order.
func TestSubscriptionsWithRealClients(t *testing.T) {
	env := testbed.Env(t)
	dir := nodetest.Install(t, streamingPackages...)
	f := startLiveFleet(t, transport.Options{}, "namespaces", "configmaps")
	f.waitSynced(t)
	for _, tc := range []struct{ name, script string }{
		{name: "graphql-ws", script: "ws_client.js"},
		{name: "graphql-sse", script: "sse_client.js"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			begin := time.Now()
			ns := fmt.Sprintf("live-%s-%d", strings.TrimPrefix(tc.name, "graphql-"), rand.IntN(1e6))
			for _, c := range env.Clusters() {
				createNamespace(t, dyn(t, c), ns)
			}
			var page struct{ Resources struct{ Revision string } }
			f.mustQuery(t, `{ resources(first: 0) { revision } }`, nil, &page)
			vars := map[string]any{
				"filter": map[string]any{"namespaces": []string{ns}, "kinds": []string{"ConfigMap"}, "labelSelector": "app=web"},
				"since":  page.Resources.Revision,
			}
			// One client stays connected throughout; the other leaves and
			// comes back.
			stays := startNodeClient(t, dir, tc.script, f.url)
			stays.subscribe("web", liveQuery, vars)
			leaves := startNodeClient(t, dir, tc.script, f.url)
			leaves.subscribe("web", liveQuery, vars)

			inEveryCluster(t, ns, func(c cmClient) {
				c.create("a", "web")
				c.update("a", "")
				c.create("b", "db")
				c.update("b", "web") // enters the filter
				c.update("a", "db")  // leaves it
				c.delete("b")
			})
			want := map[string][]string{}
			for _, c := range env.Clusters() {
				want[c.Name()] = []string{"ADDED a web", "MODIFIED a web", "ADDED b web", "DELETED a db", "DELETED b web"}
			}
			first := leaves.events("web", 15)
			if diff := gocmp.Diff(want, byCluster(first)); diff != "" {
				t.Fatalf("events by cluster (-want +got):\n%s", diff)
			}
			checkDistinct(t, first)

			last := first[len(first)-1].Cursor
			leaves.kill()
			inEveryCluster(t, ns, func(c cmClient) {
				c.create("c", "web")
				c.update("c", "")
				c.create("d", "db")
				c.update("d", "web")
				c.delete("c")
			})
			all := stays.events("web", 15+12)
			if diff := gocmp.Diff(first, all[:15]); diff != "" {
				t.Fatalf("the clients disagree before the disconnect (-leaves +stays):\n%s", diff)
			}
			missed := all[15:]
			for _, c := range env.Clusters() {
				want[c.Name()] = []string{"ADDED c web", "MODIFIED c web", "ADDED d web", "DELETED c web"}
			}
			if diff := gocmp.Diff(want, byCluster(missed)); diff != "" {
				t.Fatalf("events while the client was away (-want +got):\n%s", diff)
			}

			back := startNodeClient(t, dir, tc.script, f.url)
			vars["since"] = last
			back.subscribe("web", liveQuery, vars)
			// Then a marker: nothing may come between the missed events
			// and it.
			marker := configMaps(t, env.Cluster("c1"), ns)
			resumed := back.events("web", len(missed))
			marker.create("marker", "web")
			if diff := gocmp.Diff(missed, resumed); diff != "" {
				t.Fatalf("after resuming (-missed +received):\n%s", diff)
			}
			m := back.events("web", 1)[0]
			if m.Type != "ADDED" || m.Name != "marker" {
				t.Fatalf("after the missed events: %v, want ADDED c1/marker", m)
			}
			if s := stays.events("web", 1)[0]; s != m {
				t.Fatalf("the clients disagree on the marker: %v and %v", s, m)
			}

			// A query over the same transport: one result, then complete.
			back.subscribe("q", `{ clusters { name } }`, nil)
			if r := back.reportOf("q"); r.Type != "next" || string(r.Payload) != `{"data":{"clusters":[{"name":"c1"},{"name":"c2"},{"name":"c3"}]}}` {
				t.Errorf("query: %s %s %s", r.Type, r.Payload, r.Error)
			}
			if r := back.reportOf("q"); r.Type != "complete" {
				t.Errorf("query: %s after the result, want complete", r.Type)
			}
			// A request error: graphql-ws hands the error message's errors
			// to the sink's error; graphql-sse gets them as a result, then
			// complete.
			back.subscribe("bad", liveQuery, map[string]any{"since": "not a cursor"})
			r := back.reportOf("bad")
			var errs struct{ Errors []gqlError }
			switch tc.name {
			case "graphql-ws":
				if r.Type != "error" {
					t.Fatalf("bad since: %s %s, want error", r.Type, r.Payload)
				}
				_ = json.Unmarshal(r.Error, &errs)
			case "graphql-sse":
				if r.Type != "next" {
					t.Fatalf("bad since: %s %s, want next", r.Type, r.Error)
				}
				_ = json.Unmarshal(r.Payload, &errs)
				if r := back.reportOf("bad"); r.Type != "complete" {
					t.Errorf("bad since: %s after the errors, want complete", r.Type)
				}
			}
			if len(errs.Errors) != 1 || errs.Errors[0].Extensions.Code != "BAD_USER_INPUT" {
				t.Errorf("bad since: errors %+v, want BAD_USER_INPUT", errs.Errors)
			}
			t.Logf("%d events, %d missed and resumed, in %s", len(all)+1, len(missed), time.Since(begin).Round(time.Millisecond))
		})
	}
}

// checkDistinct checks that no two events share a cursor.
func checkDistinct(t *testing.T, events []liveEvent) {
	t.Helper()
	seen := map[string]bool{}
	for _, e := range events {
		if seen[e.Cursor] {
			t.Errorf("cursor %s repeats", e.Cursor)
		}
		seen[e.Cursor] = true
	}
}
