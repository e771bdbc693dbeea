package api_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/fleetcache/fleetcache/internal/nodetest"
	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/transport"
)

// TestRateLimitWithRealClients opens subscriptions faster than the limit
// allows with the real graphql-ws and graphql-sse npm clients, against
// changes made through a real API server: the one over the limit fails
// with what each client reports (graphql-ws: the RATE_LIMITED error;
// graphql-sse: the 429), the others go on delivering events on the same
// connection, and once the bucket refills the refused one opens.
func TestRateLimitWithRealClients(t *testing.T) {
	env := testbed.Env(t)
	dir := nodetest.Install(t, streamingPackages...)
	for _, tc := range []struct{ name, script string }{
		{name: "graphql-ws", script: "ws_client.js"},
		{name: "graphql-sse", script: "sse_client.js"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A fleet each: the clients of both subtests share 127.0.0.1.
			f := startLiveFleet(t, transport.Options{RateLimit: transport.RateLimit{SubscriptionsPerSecond: 0.5, SubscriptionBurst: 2}},
				"namespaces", "configmaps")
			f.waitSynced(t)
			ns := fmt.Sprintf("limited-%s-%d", strings.TrimPrefix(tc.name, "graphql-"), rand.IntN(1e6))
			c1 := env.Cluster("c1")
			createNamespace(t, dyn(t, c1), ns)
			var page struct{ Resources struct{ Revision string } }
			f.mustQuery(t, `{ resources(first: 0) { revision } }`, nil, &page)
			vars := map[string]any{"filter": map[string]any{"namespaces": []string{ns}, "kinds": []string{"ConfigMap"}}, "since": page.Resources.Revision}

			// Three at once, over the burst of 2. The server may take the
			// graphql-sse client's three requests in any order: whichever
			// it takes last is refused, and nothing else is reported
			// before the first change.
			client := startNodeClient(t, dir, tc.script, f.url)
			ids := []string{"a", "b", "c"}
			for _, id := range ids {
				client.subscribe(id, liveQuery, vars)
			}
			r := client.next()
			for r.ID == "" { // graphql-ws reports connected
				r = client.next()
			}
			if r.Type != "error" {
				t.Fatalf("subscription %s: %s %s, want an error for one of three", r.ID, r.Type, r.Payload)
			}
			refused := r.ID
			switch tc.name {
			case "graphql-ws":
				var e struct{ Errors []gqlError }
				if err := json.Unmarshal(r.Error, &e); err != nil || len(e.Errors) != 1 || e.Errors[0].Extensions.Code != transport.CodeRateLimited ||
					!strings.Contains(e.Errors[0].Message, "retry in") {
					t.Fatalf("refused subscription: error %s, want one RATE_LIMITED error saying when to retry", r.Error)
				}
			case "graphql-sse":
				if !strings.Contains(string(r.Error), "429") {
					t.Fatalf("refused subscription: error %s, want the 429", r.Error)
				}
			}

			// The admitted ones go on, on the same connection.
			configMaps(t, c1, ns).create("x", "web")
			// Read the reports in their order: both subscriptions' events
			// interleave.
			got := map[string]string{}
			for len(got) < 2 {
				r := client.next()
				e, ok := addedName(t, r)
				if r.ID == "" || !ok {
					continue
				}
				if r.ID == refused || got[r.ID] != "" {
					t.Fatalf("subscription %s: unexpected %s %s", r.ID, r.Type, r.Payload)
				}
				got[r.ID] = e
			}
			for id, e := range got {
				if e != "ADDED x" {
					t.Errorf("subscription %s: %s, want ADDED x", id, e)
				}
			}

			// The bucket refills at one subscription every 2s.
			var first report
			testcluster.Eventually(t, 30*time.Second, "the refused subscription to open", func() (bool, string) {
				client.subscribe(refused, liveQuery, vars)
				first = client.reportOf(refused)
				return first.Type == "next", first.Type + " " + string(first.Error)
			})
			// It replays from since: the change it would have missed.
			if e, _ := addedName(t, first); e != "ADDED x" {
				t.Errorf("subscription %s, admitted: %s, want ADDED x", refused, first.Payload)
			}
		})
	}
}

// addedName returns the event of a resourceEvents report as "TYPE name",
// and false for other reports (heartbeats, errors, connected).
func addedName(t *testing.T, r report) (string, bool) {
	t.Helper()
	if r.Type != "next" {
		return "", false
	}
	var p struct {
		Data *struct {
			ResourceEvents struct {
				Type     string
				Resource struct{ Name string }
			}
		}
	}
	if err := json.Unmarshal(r.Payload, &p); err != nil {
		t.Fatalf("decode %s: %v", r.Payload, err)
	}
	if p.Data == nil {
		return "", false
	}
	return p.Data.ResourceEvents.Type + " " + p.Data.ResourceEvents.Resource.Name, true
}
