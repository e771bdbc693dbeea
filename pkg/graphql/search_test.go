package graphql

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/object"
)

// TestSearch: the filter's search applies to resources, totalCount and
// facets, with the other filters.
func TestSearch(t *testing.T) {
	f := newFixture(t)
	s := newServer(t, f.ix, f.tracker, Options{})
	for _, tc := range []struct {
		name   string
		filter map[string]any
		want   []string
	}{
		{name: "name", filter: map[string]any{"search": "canary"}, want: []string{"c1/web/web-canary Pod"}},
		{name: "every word, any case", filter: map[string]any{"search": "WEB abc"},
			want: []string{"c1/web/web-abc ReplicaSet", "c1/web/web-abc-1 Pod", "c1/web/web-abc-2 Pod"}},
		{name: "annotation value", filter: map[string]any{"search": "settings team"},
			want: []string{"c1/web/settings ConfigMap", "c2/web/settings ConfigMap", "c3/web/settings ConfigMap"}},
		{name: "label value prefix, with clusters and kinds", filter: map[string]any{"search": "f", "clusters": []any{"c2"}, "kinds": []any{"Pod"}},
			want: []string{"c2/web/web-1 Pod", "c2/web/web-2 Pod"}},
		{name: "namespace, with a field selector", filter: map[string]any{"search": "data", "fieldSelector": "cluster=c3"},
			want: []string{"c3//data Namespace", "c3/data/db-config ConfigMap"}},
		{name: "nothing", filter: map[string]any{"search": "nginx"}, want: []string{}},
		{name: "empty selects all", filter: map[string]any{"search": " - ", "clusters": []any{"c2"}, "kinds": []any{"Pod"}},
			want: []string{"c2/web/web-1 Pod", "c2/web/web-2 Pod"}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkFilter(t, s, tc.filter, tc.want) })
	}
	t.Run("too many words", func(t *testing.T) {
		res := run(t, s, `{ resources(filter: {search: "a b c d e f g h i j k l m n o p q"}) { totalCount } }`, nil)
		if diff := cmp.Diff([]string{CodeBadUserInput}, codes(res)); diff != "" {
			t.Fatalf("codes (-want +got):\n%s", diff)
		}
		if msg := res.Errors[0].Message; !strings.Contains(msg, "more than 16 words") {
			t.Errorf("message %q does not say why", msg)
		}
	})
}

// TestSearchSubscription: an object whose label starts matching a
// subscription's search arrives as ADDED, one that stops as DELETED.
func TestSearchSubscription(t *testing.T) {
	ix := index.New(index.Options{})
	s := startServer(t, ix, health.NewTracker(ix, health.Options{}), Options{})
	sub, res := s.Subscribe(t.Context(), Request{Query: `subscription { resourceEvents(filter: {search: "redis"}) { type resource { kind name children { kind name } } } }`})
	if sub == nil {
		t.Fatalf("Subscribe: %+v", res)
	}
	t.Cleanup(sub.Close)
	o := newObject(t, spec{cluster: "c1", typ: cmType, namespace: "web", name: "cache", labels: map[string]string{"app": "web"}})
	with := func(rv, app string) *object.Object {
		c := *o
		c.ResourceVersion, c.Labels = rv, object.Labels{{Key: "app", Value: app}}
		return &c
	}
	ix.Upsert(o)                  // does not match
	ix.Upsert(with("2", "redis")) // starts matching
	ix.Upsert(with("3", "redis-ha"))
	ix.Upsert(with("4", "valkey")) // stops
	ix.Upsert(newObject(t, spec{cluster: "c1", typ: cmType, namespace: "web", name: "redis-marker"}))
	want := []string{"ADDED ConfigMap/cache children []", "MODIFIED ConfigMap/cache children []", "DELETED ConfigMap/cache children []",
		"ADDED ConfigMap/redis-marker children []"}
	if diff := cmp.Diff(want, eventsUpTo(t, sub, want[len(want)-1])); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}
