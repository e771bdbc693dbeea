package graphql

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetcache/fleetcache/pkg/authn"
	"github.com/fleetcache/fleetcache/pkg/inventory"
)

func labelled(c map[string]map[string]string) map[string]inventory.Info {
	out := map[string]inventory.Info{}
	for name, l := range c {
		out[name] = inventory.Info{Labels: l}
	}
	return out
}

func TestClusterSelectorQueries(t *testing.T) {
	f := newFixture(t)
	inv := inventory.NewStore()
	inv.Set(labelled(map[string]map[string]string{
		"c1": {"env": "prod", "region": "eu"}, "c2": {"env": "prod", "region": "us"}, "c3": {"env": "dev", "region": "eu"},
	}))
	s := newServer(t, f.ix, f.tracker, Options{Inventory: inv})
	total := func(filter map[string]any) int {
		var d struct{ Resources struct{ TotalCount int } }
		data(t, s, `query($f: ResourceFilter) { resources(filter: $f) { totalCount } }`, map[string]any{"f": filter}, &d)
		return d.Resources.TotalCount
	}
	for _, tc := range []struct {
		name   string
		filter map[string]any
		want   int
	}{
		{"selector", map[string]any{"clusterSelector": "env=prod"}, 19},
		{"selector and clusters", map[string]any{"clusterSelector": "env=prod", "clusters": []any{"c2", "c3"}}, 6},
		{"set selector", map[string]any{"clusterSelector": "region in (eu),env!=prod"}, 6},
		{"no cluster matches: nothing, not everything", map[string]any{"clusterSelector": "env=qa"}, 0},
		{"no selector", map[string]any{}, 25},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if n := total(tc.filter); n != tc.want {
				t.Errorf("totalCount %d, want %d", n, tc.want)
			}
		})
	}

	var facets struct {
		Facets []struct {
			Value string
			Count int
		}
	}
	data(t, s, `{ facets(by: CLUSTER_LABEL, labelKey: "region", filter: {clusterSelector: "env"}) { value count } }`, nil, &facets)
	if diff := cmp.Diff([]struct {
		Value string
		Count int
	}{{"eu", 19}, {"us", 6}}, facets.Facets); diff != "" {
		t.Errorf("facets (-want +got):\n%s", diff)
	}

	var cs struct {
		Clusters []struct {
			Name   string
			Labels map[string]string
		}
	}
	data(t, s, `{ clusters(selector: "region=eu") { name labels } }`, nil, &cs)
	if len(cs.Clusters) != 2 || cs.Clusters[0].Name != "c1" || cs.Clusters[1].Name != "c3" || cs.Clusters[0].Labels["env"] != "prod" {
		t.Errorf("clusters(selector) = %+v, want c1 and c3 with their labels", cs.Clusters)
	}
	data(t, s, `{ clusters(selector: "env=qa") { name } }`, nil, &cs)
	if len(cs.Clusters) != 0 {
		t.Errorf("clusters(selector) matching none = %+v", cs.Clusters)
	}

	for _, q := range []string{
		`{ resources(filter: {clusterSelector: "env in (prod"}) { totalCount } }`,
		`{ clusters(selector: "!!") { name } }`,
		`{ facets(by: CLUSTER_LABEL) { value } }`,
	} {
		if got := codes(run(t, s, q, nil)); !slices.Equal(got, []string{CodeBadUserInput}) {
			t.Errorf("%s: codes %v, want BAD_USER_INPUT", q, got)
		}
	}
}

// TestClusterSelectorRelabel follows a subscription filtered by a cluster
// selector through relabels: a cluster that starts matching brings its
// objects as ADDED, one that stops takes them away as DELETED, after the
// changes that came before the relabel.
func TestClusterSelectorRelabel(t *testing.T) {
	f := newFixture(t)
	inv := inventory.NewStore()
	inv.Set(labelled(map[string]map[string]string{"c1": {"env": "prod"}, "c2": {"env": "dev"}}))
	s := startServer(t, f.ix, f.tracker, Options{Inventory: inv})
	sub := subscribe(t, s, eventsQuery, map[string]any{"filter": map[string]any{"clusterSelector": "env=prod", "namespaces": []any{"ns"}}})

	f.ix.Upsert(version(t, "c1", "ns", "a", "1", nil))
	f.ix.Upsert(version(t, "c2", "ns", "b", "1", nil))
	if diff := cmp.Diff([]string{"ADDED a"}, nextN(t, sub, 1)); diff != "" {
		t.Fatalf("before the relabel (-want +got):\n%s", diff)
	}
	// A change just before the relabel arrives before its consequences.
	f.ix.Upsert(version(t, "c1", "ns", "x", "1", nil))
	inv.Set(labelled(map[string]map[string]string{"c1": {"env": "dev"}, "c2": {"env": "prod"}}))
	if diff := cmp.Diff([]string{"ADDED x", "DELETED a", "DELETED x", "ADDED b"}, nextN(t, sub, 4)); diff != "" {
		t.Errorf("at the relabel (-want +got):\n%s", diff)
	}
	f.ix.Upsert(version(t, "c1", "ns", "d", "1", nil))
	f.ix.Upsert(version(t, "c2", "ns", "c", "1", nil))
	if diff := cmp.Diff([]string{"ADDED c"}, nextN(t, sub, 1)); diff != "" {
		t.Errorf("after the relabel (-want +got):\n%s", diff)
	}
	// A relabel that changes no membership sends nothing; one that drops
	// every cluster takes everything away.
	inv.Set(labelled(map[string]map[string]string{"c1": {"env": "dev", "team": "x"}, "c2": {"env": "prod"}}))
	inv.Set(labelled(map[string]map[string]string{"c1": {"env": "dev"}, "c2": {"env": "qa"}}))
	if diff := cmp.Diff([]string{"DELETED b", "DELETED c"}, nextN(t, sub, 2)); diff != "" {
		t.Errorf("dropping every cluster (-want +got):\n%s", diff)
	}
	f.ix.Upsert(version(t, "c2", "ns", "e", "1", nil))
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if res, err := sub.Next(ctx); err == nil {
		t.Errorf("an event with no cluster selected: %+v", decode(t, res))
	}
}

// TestClusterSelectorRelabelAuthorized: the objects a relabel brings or
// takes away are checked against the caller's rights like any event, so a
// relabel reveals nothing the caller may not see.
func TestClusterSelectorRelabelAuthorized(t *testing.T) {
	f := newFixture(t)
	inv := inventory.NewStore()
	inv.Set(labelled(map[string]map[string]string{"c1": {"env": "dev"}}))
	a := &countingAuthorizer{allowed: map[string]bool{"mine": true}, ttl: time.Minute}
	s := startServer(t, f.ix, f.tracker, Options{Inventory: inv, Authorizer: a})
	f.ix.Upsert(version(t, "c1", "mine", "visible", "1", nil))
	f.ix.Upsert(version(t, "c1", "theirs", "hidden", "1", nil))
	sub, res := s.Subscribe(authn.WithUser(t.Context(), &authn.User{Name: "alice"}),
		Request{Query: eventsQuery, Variables: map[string]any{"filter": map[string]any{"clusterSelector": "env=prod", "namespaces": []any{"mine", "theirs"}}}})
	if sub == nil {
		t.Fatalf("Subscribe: %+v", res)
	}
	t.Cleanup(sub.Close)
	inv.Set(labelled(map[string]map[string]string{"c1": {"env": "prod"}}))
	if diff := cmp.Diff([]string{"ADDED visible"}, nextN(t, sub, 1)); diff != "" {
		t.Errorf("joining (-want +got):\n%s", diff)
	}
	inv.Set(labelled(map[string]map[string]string{"c1": {"env": "dev"}}))
	if diff := cmp.Diff([]string{"DELETED visible"}, nextN(t, sub, 1)); diff != "" {
		t.Errorf("leaving (-want +got):\n%s", diff)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if res, err := sub.Next(ctx); err == nil {
		t.Errorf("an event after the relabels: %+v", decode(t, res))
	}
}

// TestClusterHealthRelabel: clusterHealth sends a cluster again when its
// labels change, so that a portal showing them stays current; a relabel of
// another cluster sends nothing.
func TestClusterHealthRelabel(t *testing.T) {
	f := newFixture(t)
	inv := inventory.NewStore()
	inv.Set(labelled(map[string]map[string]string{"c1": {"env": "dev"}, "c2": {"env": "dev"}}))
	s := startServer(t, f.ix, f.tracker, Options{Inventory: inv})
	sub := subscribe(t, s, `subscription { clusterHealth(cluster: "c1") { name labels } }`, nil)
	labels := func() map[string]string {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		res, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		var d struct {
			ClusterHealth struct{ Labels map[string]string }
		}
		if err := json.Unmarshal(mustJSON(t, res.Data), &d); err != nil {
			t.Fatal(err)
		}
		return d.ClusterHealth.Labels
	}
	if got := labels(); got["env"] != "dev" {
		t.Fatalf("initial labels %v", got)
	}
	inv.Set(labelled(map[string]map[string]string{"c1": {"env": "dev"}, "c2": {"env": "prod"}}))
	inv.Set(labelled(map[string]map[string]string{"c1": {"env": "prod"}, "c2": {"env": "prod"}}))
	if got := labels(); got["env"] != "prod" {
		t.Errorf("labels after the relabel %v, want env=prod", got)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if res, err := sub.Next(ctx); err == nil {
		t.Errorf("another event: %s", mustJSON(t, res.Data))
	}
}

// TestClusterSelectorCloseWhileSwitching closes subscriptions while relabels
// make them switch clusters: Close may come at any time (the race detector
// checks it), and a closed subscription ends with io.EOF.
func TestClusterSelectorCloseWhileSwitching(t *testing.T) {
	f := newFixture(t)
	inv := inventory.NewStore()
	s := startServer(t, f.ix, f.tracker, Options{Inventory: inv})
	for i := range 20 {
		sub := subscribe(t, s, eventsQuery, map[string]any{"filter": map[string]any{"clusterSelector": "env=prod"}})
		done := make(chan error, 1)
		go func() { // ends with Next's error; the test waits for it
			for {
				if _, err := sub.Next(t.Context()); err != nil {
					done <- err
					return
				}
			}
		}()
		env := []string{"prod", "dev"}[i%2]
		inv.Set(labelled(map[string]map[string]string{"c1": {"env": env}, "c2": {"env": "prod"}}))
		sub.Close()
		select {
		case err := <-done:
			if !errors.Is(err, io.EOF) {
				t.Fatalf("Next after Close: %v, want io.EOF", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Next still waits 10s after Close")
		}
	}
}
