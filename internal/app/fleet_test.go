package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetcache/fleetcache/internal/app"
	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/clusters"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/informers"
)

// TestStartServesWhatItHas starts 150 clusters (aliases of the test servers)
// with one list at a time: while the others wait their turn, PENDING, a
// query already answers from the clusters that synced and names every other
// cluster in staleClusters, as a restarted replica does (issue 16).
func TestStartServesWhatItHas(t *testing.T) {
	env := testbed.Env(t)
	opts := app.Options{Informers: informers.Options{Resources: []string{"configmaps"}, MaxConcurrentLists: 1}}
	agg, err := app.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	servers := env.Clusters()
	for _, s := range servers {
		dc := testcluster.Dynamic(t, s.AdminConfig())
		testcluster.CreateNamespace(t, dc, "fleet-start")
		testcluster.Seed(t, dc, configMapsGVR, 100, func(i int) *unstructured.Unstructured {
			return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"namespace": "fleet-start", "name": fmt.Sprintf("cm-%03d", i)}}}
		})
	}
	const n = 150
	for i := range n {
		s := servers[i%len(servers)]
		if err := agg.Registry.Add(clusters.Cluster{Name: fmt.Sprintf("%s-%02d", s.Name(), i), Config: s.AdminConfig()}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- agg.Start(ctx) }()
	srv := httptest.NewServer(agg.Handler)
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("aggregator: %v", err)
		}
		srv.Close()
	})
	c := graphqlClient{url: srv.URL + "/graphql", client: srv.Client()}
	const query = `{ resources(filter: {kinds: ["ConfigMap"]}, first: 1) { totalCount staleClusters } }`
	type answer struct {
		Data struct {
			Resources struct {
				TotalCount    int
				StaleClusters []string
			}
		}
	}
	seenPartial := false
	testcluster.Eventually(t, 3*time.Minute, "every cluster SYNCED and none stale", func() (bool, string) {
		statuses, _ := agg.Health.Clusters()
		var a answer
		if err := json.Unmarshal(c.do(t, query, nil), &a); err != nil {
			t.Fatal(err)
		}
		r := a.Data.Resources
		var notSynced, synced, waiting []string
		for _, s := range statuses {
			if s.Status != health.Synced {
				notSynced = append(notSynced, s.Name)
			} else {
				synced = append(synced, s.Name)
			}
			if s.Status == health.Pending {
				waiting = append(waiting, s.Name)
			}
		}
		// Statuses read before the query: a cluster may sync in between
		// (or start), never the other way round.
		for _, name := range r.StaleClusters {
			if slices.Contains(synced, name) {
				st, _ := agg.Health.Cluster(name)
				t.Errorf("staleClusters names %s, which was SYNCED already; now %s %q", name, st.Status, st.Message)
			}
		}
		if r.TotalCount > 0 && len(r.StaleClusters) > 0 && len(waiting) > 0 {
			seenPartial = true
		}
		return len(statuses) == n && len(notSynced) == 0 && len(r.StaleClusters) == 0,
			fmt.Sprintf("%d not SYNCED, %d stale, %d objects", len(notSynced), len(r.StaleClusters), r.TotalCount)
	})
	if !seenPartial {
		t.Errorf("never saw an answer with objects from synced clusters while others waited their turn")
	}
}

var configMapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
