package planner_test

import (
	"fmt"
	"github.com/fleetcache/fleetcache/internal/indextest"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
	"github.com/fleetcache/fleetcache/pkg/index/views"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetcache/fleetcache/pkg/index/search"
)

func mustSearch(t testing.TB, s string) search.Query {
	t.Helper()
	q, err := search.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// searchFleet is objects with names, namespaces, labels, annotations and
// images to search.
func searchFleet() []*object.Object {
	return []*object.Object{
		indextest.Obj("c1", indextest.PodType, "shop", "redis-0", indextest.WithLabels("app", "redis", "tier", "cache"),
			indextest.WithRaw(`{"metadata":{"annotations":{"example.com/owner":"Team-Storage"}},"spec":{"containers":[{"image":"docker.io/library/redis:7.2"}]}}`)),
		indextest.Obj("c1", indextest.PodType, "shop", "web-7d9f8c-abcde", indextest.WithLabels("app", "web"),
			indextest.WithRaw(`{"spec":{"containers":[{"image":"nginx:1.25"},{"image":"envoyproxy/envoy:v1.30"}]}}`)),
		indextest.Obj("c1", indextest.DeploymentType, "shop", "web", indextest.WithLabels("app", "web"),
			indextest.WithRaw(`{"spec":{"template":{"spec":{"containers":[{"image":"nginx:1.25"}]}}}}`)),
		indextest.Obj("c2", indextest.PodType, "prod-payments", "api-1", indextest.WithLabels("app", "api"),
			indextest.WithRaw(`{"spec":{"initContainers":[{"image":"busybox"}],"containers":[{"image":"ghcr.io/acme/api:2"}]}}`)),
		// Two tokens that "redis" begins: the object is in both postings.
		indextest.Obj("c2", indextest.PodType, "tools", "redisinsight", indextest.WithLabels("app", "redis-ui"),
			indextest.WithRaw(`{"spec":{"containers":[{"image":"redis/redisinsight:latest"}]}}`)),
		indextest.Obj("c2", indextest.ConfigMapType, "prod-payments", "settings", indextest.WithRaw(`{"data":{"image":"nginx"}}`)),
		indextest.Obj("c2", indextest.NodeType, "", "node-1"),
	}
}

// TestSearch: each word must begin a token of the name, namespace, labels,
// annotation values or images; List (whole and in pages), Count, Facets
// and a Matcher agree.
func TestSearch(t *testing.T) {
	const (
		redis     = "c1/pods/shop/redis-0"
		webPod    = "c1/pods/shop/web-7d9f8c-abcde"
		webDeploy = "c1/deployments.apps/shop/web"
		api       = "c2/pods/prod-payments/api-1"
		insight   = "c2/pods/tools/redisinsight"
		settings  = "c2/configmaps/prod-payments/settings"
		node      = "c2/nodes//node-1"
	)
	ix := index.New(index.Options{})
	fleet := searchFleet()
	for _, o := range fleet {
		ix.Upsert(o)
	}
	tests := []struct {
		name string
		f    planner.Filter
		want []string
	}{
		{"image", planner.Filter{Search: mustSearch(t, "nginx")}, []string{webDeploy, webPod}},
		{"image prefix, case-insensitive", planner.Filter{Search: mustSearch(t, "ENV")}, []string{webPod}},
		{"a word begins two tokens of one object", planner.Filter{Search: mustSearch(t, "redis")}, []string{redis, insight}},
		{"many tokens", planner.Filter{Search: mustSearch(t, "r")}, []string{redis, insight}},
		{"name", planner.Filter{Search: mustSearch(t, "7d9")}, []string{webPod}},
		{"namespace", planner.Filter{Search: mustSearch(t, "payments")}, []string{api, settings}},
		{"label key", planner.Filter{Search: mustSearch(t, "tier")}, []string{redis}},
		{"label value", planner.Filter{Search: mustSearch(t, "cach")}, []string{redis}},
		{"annotation value", planner.Filter{Search: mustSearch(t, "storage")}, []string{redis}},
		{"init container", planner.Filter{Search: mustSearch(t, "busy")}, []string{api}},
		{"every word", planner.Filter{Search: mustSearch(t, "web nginx envoy")}, []string{webPod}},
		{"a word that matches nothing", planner.Filter{Search: mustSearch(t, "web mysql")}, nil},
		{"not inside a token", planner.Filter{Search: mustSearch(t, "ginx")}, nil},
		{"data is not searched", planner.Filter{Search: mustSearch(t, "settings nginx")}, nil},
		{"with kinds", planner.Filter{Kinds: []string{"Deployment.apps"}, Search: mustSearch(t, "nginx")}, []string{webDeploy}},
		{"with clusters and labels", planner.Filter{Clusters: []string{"c2"}, Selector: indextest.MustSelector(t, "app"), Search: mustSearch(t, "redis")}, []string{insight}},
		{"with namespaces", planner.Filter{Namespaces: []string{"shop"}, Search: mustSearch(t, "app")}, []string{redis, webDeploy, webPod}},
		{"with a field selector", planner.Filter{Search: mustSearch(t, "web"), Fields: indextest.MustFields(t, "spec.containers[].image=nginx:1.25")}, []string{webPod}},
		{"node", planner.Filter{Search: mustSearch(t, "node 1")}, []string{node}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, indextest.Keys(planner.List(ix, tt.f, nil, 0).Objects), indextest.CmpSorted[1]); diff != "" {
				t.Errorf("List (-want +got):\n%s", diff)
			}
			for _, limit := range []int{1, 2} {
				if diff := cmp.Diff(tt.want, indextest.Keys(indextest.ListAll(t, ix, tt.f, limit, nil)), indextest.CmpSorted[1]); diff != "" {
					t.Errorf("pages of %d (-want +got):\n%s", limit, diff)
				}
			}
			if n := planner.Count(ix, tt.f); n != len(tt.want) {
				t.Errorf("Count = %d, want %d", n, len(tt.want))
			}
			n := 0
			for _, fc := range views.Facets(ix, tt.f, views.FacetBy{Key: views.FacetCluster}) {
				n += fc.Count
			}
			if n != len(tt.want) {
				t.Errorf("Facets count %d, want %d", n, len(tt.want))
			}
			var matched []string
			m := planner.NewMatcher(tt.f)
			for _, o := range fleet {
				if m.Matches(o) {
					matched = append(matched, o.Key().String())
				}
			}
			if diff := cmp.Diff(tt.want, matched, indextest.CmpSorted); diff != "" {
				t.Errorf("Matcher (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSearchFollowsChanges: the token index follows modifications and
// deletions, and keeps no token of an object that left.
func TestSearchFollowsChanges(t *testing.T) {
	ix := index.New(index.Options{})
	p := indextest.Obj("c1", indextest.PodType, "shop", "p", indextest.WithLabels("app", "redis"), indextest.WithRaw(`{"spec":{"containers":[{"image":"redis:7"}]}}`))
	ix.Upsert(p)
	count := func(s string) int { return planner.Count(ix, planner.Filter{Search: mustSearch(t, s)}) }
	if count("redis") != 1 {
		t.Fatal("redis not found")
	}
	// The label changes, the image stays: still found by the image.
	p2 := indextest.Modified(p, "2", indextest.WithLabels("app", "cache"))
	ix.Upsert(p2)
	if count("redis") != 1 || count("cache") != 1 {
		t.Errorf("after the label change: redis %d, cache %d, want 1 and 1", count("redis"), count("cache"))
	}
	p3 := indextest.Modified(p2, "3", indextest.WithRaw(`{"spec":{"containers":[{"image":"valkey:8"}]}}`))
	ix.Upsert(p3)
	if count("redis") != 0 || count("valkey") != 1 {
		t.Errorf("after the image change: redis %d, valkey %d, want 0 and 1", count("redis"), count("valkey"))
	}
	if err := ix.Verify(); err != nil {
		t.Fatal(err)
	}
	ix.Delete(p3.Key())
	n := 0
	ix.Read(func(r index.Reader) { r.EachToken("", func(*index.Posting) bool { n++; return true }) })
	if n != 0 {
		t.Errorf("%d tokens left after the last object left", n)
	}
}

// TestSearchVisitsCandidatesOnly: a search reads the postings of the
// tokens its words begin, not the whole index.
func TestSearchVisitsCandidatesOnly(t *testing.T) {
	ix := index.New(index.Options{})
	for i := range 2000 {
		image := "nginx:1.25"
		if i%100 == 0 {
			image = fmt.Sprintf("redis:%d", i/100)
		}
		ix.Upsert(indextest.Obj("c1", indextest.PodType, fmt.Sprintf("ns-%d", i%10), fmt.Sprintf("p-%d", i),
			indextest.WithRaw(`{"spec":{"containers":[{"image":"`+image+`"}]}}`)))
	}
	for _, tc := range []struct {
		search string
		want   int
	}{
		{"redis", 20},     // one token: an exact plan
		{"redis 1", 11},   // redis:1, redis:10 to redis:19
		{"ns 3 redis", 1}, // p-300
	} {
		before := ix.Scanned()
		if n := planner.Count(ix, planner.Filter{Search: mustSearch(t, tc.search)}); n != tc.want {
			t.Errorf("%q counts %d, want %d", tc.search, n, tc.want)
		}
		if visited := ix.Scanned() - before; visited > 40 {
			t.Errorf("%q visited %d objects, want at most 40", tc.search, visited)
		}
	}
}
