package graphql

import (
	"bytes"
	"encoding/json"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/views"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetcache/fleetcache/internal/graphqltest"
	"github.com/fleetcache/fleetcache/pkg/graphql/cursor"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
)

// page is the part of a ResourceConnection most tests read.
type page struct {
	Resources struct {
		Edges []struct {
			Cursor string
			Node   struct {
				Cluster, Kind, Name string
				Namespace           *string
			}
		}
		PageInfo struct {
			HasNextPage bool
			EndCursor   *string
		}
		TotalCount    int
		Revision      string
		StaleClusters []string
	}
}

// names returns "cluster/namespace/name Kind" for each edge.
func (p page) names() []string {
	out := []string{}
	for _, e := range p.Resources.Edges {
		ns := ""
		if e.Node.Namespace != nil {
			ns = *e.Node.Namespace
		}
		out = append(out, e.Node.Cluster+"/"+ns+"/"+e.Node.Name+" "+e.Node.Kind)
	}
	return out
}

const pageQuery = graphqltest.PageQuery

func TestResourcesFilters(t *testing.T) {
	f := newFixture(t)
	s := newServer(t, f.ix, f.tracker, Options{})
	for _, tc := range []struct {
		name   string
		filter map[string]any
		want   []string
	}{
		{
			name:   "clusters",
			filter: map[string]any{"clusters": []any{"c2"}},
			want: []string{
				"c2//data Namespace", "c2//web Namespace", "c2/data/db-config ConfigMap",
				"c2/web/settings ConfigMap", "c2/web/web-1 Pod", "c2/web/web-2 Pod",
			},
		},
		{
			name:   "kinds with group",
			filter: map[string]any{"kinds": []any{"Deployment.apps", "ReplicaSet.apps"}},
			want:   []string{"c1/web/web Deployment", "c1/web/web-abc ReplicaSet"},
		},
		{
			name:   "bare kind in every group",
			filter: map[string]any{"kinds": []any{"Event"}},
			want:   []string{"c1/web/ev Event", "c1/web/ev Event"},
		},
		{
			name:   "namespaces, cluster-scoped",
			filter: map[string]any{"namespaces": []any{""}, "clusters": []any{"c1"}},
			want:   []string{"c1//data Namespace", "c1//web Namespace"},
		},
		{
			name:   "namespaces",
			filter: map[string]any{"namespaces": []any{"data"}},
			want:   []string{"c1/data/db-config ConfigMap", "c2/data/db-config ConfigMap", "c3/data/db-config ConfigMap"},
		},
		{
			name:   "label selector",
			filter: map[string]any{"labelSelector": "app=web,tier in (fe),!canary", "clusters": []any{"c1"}, "kinds": []any{"Pod"}},
			want:   []string{"c1/web/web-1 Pod", "c1/web/web-2 Pod", "c1/web/web-abc-1 Pod", "c1/web/web-abc-2 Pod"},
		},
		{
			name:   "label selector alone",
			filter: map[string]any{"labelSelector": "canary"},
			want:   []string{"c1/web/web-canary Pod"},
		},
		{
			name:   "name contains",
			filter: map[string]any{"nameContains": "abc"},
			want:   []string{"c1/web/web-abc ReplicaSet", "c1/web/web-abc-1 Pod", "c1/web/web-abc-2 Pod"},
		},
		{
			name:   "owner uid",
			filter: map[string]any{"ownerUid": uidOf("c1", rsType, "web", "web-abc")},
			want:   []string{"c1/web/web-abc-1 Pod", "c1/web/web-abc-2 Pod"},
		},
		{
			name: "all combined",
			filter: map[string]any{
				"clusters": []any{"c1", "c2"}, "kinds": []any{"Pod"}, "namespaces": []any{"web"},
				"labelSelector": "tier=fe", "nameContains": "-1",
			},
			want: []string{"c1/web/web-1 Pod", "c1/web/web-abc-1 Pod", "c2/web/web-1 Pod"},
		},
		{
			name:   "nothing matches",
			filter: map[string]any{"clusters": []any{"nope"}},
			want:   []string{},
		},
		{
			name:   "empty lists do not constrain",
			filter: map[string]any{"clusters": []any{}, "kinds": []any{}, "nameContains": "db-"},
			want:   []string{"c1/data/db-config ConfigMap", "c2/data/db-config ConfigMap", "c3/data/db-config ConfigMap"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got page
			data(t, s, pageQuery, map[string]any{"filter": tc.filter}, &got)
			if diff := cmp.Diff(tc.want, got.names()); diff != "" {
				t.Errorf("objects (-want +got):\n%s", diff)
			}
			if got.Resources.TotalCount != len(tc.want) {
				t.Errorf("totalCount = %d, want %d", got.Resources.TotalCount, len(tc.want))
			}
			if got.Resources.PageInfo.HasNextPage {
				t.Error("hasNextPage on the only page")
			}
		})
	}
}

func TestResourcesPaging(t *testing.T) {
	f := newFixture(t)
	s := newServer(t, f.ix, f.tracker, Options{})
	all := planner.List(f.ix, planner.Filter{}, nil, 0).Objects
	var want []string
	for _, o := range all {
		want = append(want, o.Cluster+"/"+o.Namespace+"/"+o.Name+" "+o.Type.Kind)
	}

	var got []string
	vars := map[string]any{"first": 4}
	for pages := 0; ; pages++ {
		if pages > len(all) {
			t.Fatal("paging does not end")
		}
		var p page
		data(t, s, pageQuery, vars, &p)
		got = append(got, p.names()...)
		if n := len(p.Resources.Edges); n > 4 || (p.Resources.PageInfo.HasNextPage && n != 4) {
			t.Fatalf("page of %d edges, hasNextPage %v", n, p.Resources.PageInfo.HasNextPage)
		}
		if p.Resources.TotalCount != len(all) {
			t.Errorf("totalCount = %d, want %d", p.Resources.TotalCount, len(all))
		}
		if n := len(p.Resources.Edges); n > 0 {
			if end := p.Resources.PageInfo.EndCursor; end == nil || *end != p.Resources.Edges[n-1].Cursor {
				t.Errorf("endCursor = %v, want the last edge's cursor %s", end, p.Resources.Edges[n-1].Cursor)
			}
		}
		if !p.Resources.PageInfo.HasNextPage {
			break
		}
		vars["after"] = *p.Resources.PageInfo.EndCursor
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("paged objects (-index order +got):\n%s", diff)
	}

	t.Run("after an edge cursor", func(t *testing.T) {
		var first, rest page
		data(t, s, pageQuery, map[string]any{"first": 3}, &first)
		data(t, s, pageQuery, map[string]any{"first": 2, "after": first.Resources.Edges[0].Cursor}, &rest)
		if diff := cmp.Diff(want[1:3], rest.names()); diff != "" {
			t.Errorf("page after the first edge (-want +got):\n%s", diff)
		}
	})
	t.Run("first 0", func(t *testing.T) {
		var p page
		data(t, s, pageQuery, map[string]any{"first": 0}, &p)
		if len(p.Resources.Edges) != 0 || !p.Resources.PageInfo.HasNextPage || p.Resources.PageInfo.EndCursor != nil {
			t.Errorf("first 0 = %+v, want no edges, hasNextPage and no endCursor", p.Resources)
		}
		data(t, s, pageQuery, map[string]any{"first": 0, "filter": map[string]any{"clusters": []any{"none"}}}, &p)
		if p.Resources.PageInfo.HasNextPage {
			t.Error("first 0 of nothing has a next page")
		}
	})
	t.Run("default page size", func(t *testing.T) {
		small := newServer(t, f.ix, f.tracker, Options{DefaultPageSize: 5})
		var p page
		data(t, small, `{ resources { edges { cursor } pageInfo { hasNextPage } } }`, nil, &p)
		if len(p.Resources.Edges) != 5 || !p.Resources.PageInfo.HasNextPage {
			t.Errorf("default page = %d edges, hasNextPage %v; want 5 and true", len(p.Resources.Edges), p.Resources.PageInfo.HasNextPage)
		}
	})
	t.Run("revision", func(t *testing.T) {
		var p page
		data(t, s, pageQuery, nil, &p)
		rc, err := cursor.DecodeRevision(p.Resources.Revision)
		if err != nil {
			t.Fatal(err)
		}
		if rc.Epoch != f.ix.Epoch() || rc.Revision != f.ix.Revision() {
			t.Errorf("revision cursor = %+v, want epoch %s revision %d", rc, f.ix.Epoch(), f.ix.Revision())
		}
	})
}

// TestReadsOnlyWhatIsSelected checks that totalCount is computed only when
// selected, and the page only read when a field needs it.
func TestReadsOnlyWhatIsSelected(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		name  string
		query string
		want  map[string]int
	}{
		{name: "edges", query: `{ resources { edges { cursor } pageInfo { hasNextPage } revision } }`, want: map[string]int{"List": 1}},
		{name: "totalCount", query: `{ resources { totalCount } }`, want: map[string]int{"Count": 1}},
		// Read together when both are selected, whatever their order.
		{name: "both", query: `{ resources { totalCount edges { cursor } } }`, want: map[string]int{"ListCount": 1}},
		{name: "both, the count last", query: `{ resources { pageInfo { hasNextPage } totalCount } }`, want: map[string]int{"ListCount": 1}},
		{name: "both, in an inline fragment", query: `{ resources { ... on ResourceConnection { totalCount } edges { cursor } } }`, want: map[string]int{"ListCount": 1}},
		// A fragment spread may or may not select the page: apart.
		{name: "both, a fragment spread", query: `{ resources { totalCount ...e } } fragment e on ResourceConnection { edges { cursor } }`, want: map[string]int{"List": 1, "Count": 1}},
		// A sorted page is read apart from its count.
		{name: "both, sorted", query: `{ resources(sort: [{field: "name"}]) { totalCount edges { cursor } } }`, want: map[string]int{"Count": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ci := &countingIndex{Index: views.Of(f.ix), calls: map[string]int{}}
			s := newServerOf(t, ci, f.tracker, Options{})
			if res := run(t, s, tc.query, nil); len(res.Errors) > 0 {
				t.Fatal(res.Errors)
			}
			if diff := cmp.Diff(tc.want, ci.calls); diff != "" {
				t.Errorf("index calls (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStaleClusters(t *testing.T) {
	f := newFixture(t)
	s := newServer(t, f.ix, f.tracker, Options{})
	for _, tc := range []struct {
		name   string
		filter map[string]any
		want   []string
	}{
		{name: "all clusters", want: []string{"c3"}},
		{name: "healthy selection", filter: map[string]any{"clusters": []any{"c1", "c2"}}, want: []string{}},
		{name: "selection with the stale one", filter: map[string]any{"clusters": []any{"c3", "c1"}}, want: []string{"c3"}},
		{name: "unknown cluster", filter: map[string]any{"clusters": []any{"c9"}}, want: []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p page
			data(t, s, `query($filter: ResourceFilter) { resources(filter: $filter, first: 0) { staleClusters } }`,
				map[string]any{"filter": tc.filter}, &p)
			if diff := cmp.Diff(tc.want, p.Resources.StaleClusters); diff != "" {
				t.Errorf("staleClusters (-want +got):\n%s", diff)
			}
		})
	}
}

// facet is a Facet as a response holds it.
type facet struct {
	Value string
	Count int
}

func TestFacets(t *testing.T) {
	f := newFixture(t)
	s := newServer(t, f.ix, f.tracker, Options{})
	for _, tc := range []struct {
		name string
		args string
		want []facet
	}{
		{name: "cluster", args: `by: CLUSTER`, want: []facet{{"c1", 13}, {"c2", 6}, {"c3", 6}}},
		{name: "namespace of pods", args: `by: NAMESPACE, filter: {kinds: ["Pod"]}`, want: []facet{{"web", 9}}},
		{name: "namespace with cluster-scoped", args: `by: NAMESPACE, filter: {clusters: ["c2"]}`, want: []facet{{"web", 3}, {"", 2}, {"data", 1}}},
		{name: "kind", args: `by: KIND, filter: {clusters: ["c1"]}`,
			want: []facet{{"Pod", 5}, {"ConfigMap", 2}, {"Namespace", 2}, {"Deployment.apps", 1}, {"Event", 1}, {"Event.events.k8s.io", 1}, {"ReplicaSet.apps", 1}}},
		{name: "label", args: `by: LABEL, labelKey: "app", filter: {labelSelector: "tier"}`, want: []facet{{"web", 11}, {"db", 3}}},
		{name: "nothing", args: `by: LABEL, labelKey: "absent"`, want: []facet{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got struct{ Facets []facet }
			data(t, s, `{ facets(`+tc.args+`) { value count } }`, nil, &got)
			if diff := cmp.Diff(tc.want, got.Facets); diff != "" {
				t.Errorf("facets (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOwnersAndChildren(t *testing.T) {
	f := newFixture(t)
	s := newServer(t, f.ix, f.tracker, Options{})
	type ref struct{ Kind, Name, UID string }
	var got struct {
		Resource struct {
			Owners   []ref
			Children []struct {
				Kind, Name string
				Owners     []ref
				Children   []ref
			}
		}
	}
	data(t, s, `{ resource(cluster: "c1", kind: "ReplicaSet.apps", namespace: "web", name: "web-abc") {
		owners { kind name uid }
		children { kind name owners { kind name uid } children { kind name uid } }
	} }`, nil, &got)
	d := f.object(t, "c1/deployments.apps/web/web")
	rs := f.object(t, "c1/replicasets.apps/web/web-abc")
	if diff := cmp.Diff([]ref{{"Deployment", "web", string(d.UID)}}, got.Resource.Owners); diff != "" {
		t.Errorf("owners of the ReplicaSet (-want +got):\n%s", diff)
	}
	var children []string
	for _, c := range got.Resource.Children {
		children = append(children, c.Kind+" "+c.Name)
		if diff := cmp.Diff([]ref{{"ReplicaSet", "web-abc", string(rs.UID)}}, c.Owners); diff != "" {
			t.Errorf("owners of %s (-want +got):\n%s", c.Name, diff)
		}
		if len(c.Children) != 0 {
			t.Errorf("children of %s = %v, want none", c.Name, c.Children)
		}
	}
	if diff := cmp.Diff([]string{"Pod web-abc-1", "Pod web-abc-2"}, children); diff != "" {
		t.Errorf("children of the ReplicaSet (-want +got):\n%s", diff)
	}
}

// TestOwnerWithSameNameElsewhere checks that owners match by UID, and that
// a cluster-scoped owner is found.
func TestOwnerWithSameNameElsewhere(t *testing.T) {
	ix := index.New(index.Options{})
	ns := newObject(t, spec{cluster: "c1", typ: nsType, name: "team"})
	stranger := newObject(t, spec{cluster: "c1", typ: cmType, namespace: "team", name: "team"}) // same name, other UID
	cm := newObject(t, spec{cluster: "c1", typ: cmType, namespace: "team", name: "owned", owners: []*object.Object{ns}})
	other := newObject(t, spec{cluster: "c2", typ: nsType, name: "team"}) // same name, other cluster
	for _, o := range []*object.Object{ns, stranger, cm, other} {
		ix.Upsert(o)
	}
	s := newServer(t, ix, newFixture(t).tracker, Options{})
	var got struct {
		Resource struct {
			Owners []struct{ Cluster, Kind, UID string }
		}
	}
	data(t, s, `{ resource(cluster: "c1", kind: "ConfigMap", namespace: "team", name: "owned") { owners { cluster kind uid } } }`, nil, &got)
	want := []struct{ Cluster, Kind, UID string }{{"c1", "Namespace", string(ns.UID)}}
	if diff := cmp.Diff(want, got.Resource.Owners); diff != "" {
		t.Errorf("owners (-want +got):\n%s", diff)
	}
}

func TestResourceByKey(t *testing.T) {
	f := newFixture(t)
	s := newServer(t, f.ix, f.tracker, Options{})
	for _, tc := range []struct {
		name string
		args string
		want string // "cluster/resource/namespace/name", "" for null
		code string
	}{
		{name: "pod", args: `cluster: "c2", kind: "Pod", namespace: "web", name: "web-1"`, want: "c2/pods/web/web-1"},
		{name: "kind with group", args: `cluster: "c1", kind: "Deployment.apps", namespace: "web", name: "web"`, want: "c1/deployments.apps/web/web"},
		{name: "bare kind of a group", args: `cluster: "c1", kind: "Deployment", namespace: "web", name: "web"`, want: "c1/deployments.apps/web/web"},
		{name: "cluster-scoped", args: `cluster: "c3", kind: "Namespace", name: "web"`, want: "c3/namespaces//web"},
		{name: "cluster-scoped, null namespace", args: `cluster: "c3", kind: "Namespace", namespace: $null, name: "web"`, want: "c3/namespaces//web"},
		{name: "core event", args: `cluster: "c1", kind: "Event", namespace: "web", name: "ev"`, want: "c1/events/web/ev"},
		{name: "events.k8s.io event", args: `cluster: "c1", kind: "Event.events.k8s.io", namespace: "web", name: "ev"`, want: "c1/events.events.k8s.io/web/ev"},
		{name: "wrong kind", args: `cluster: "c1", kind: "ConfigMap", namespace: "web", name: "web-1"`},
		{name: "wrong group", args: `cluster: "c1", kind: "Deployment.extensions", namespace: "web", name: "web"`},
		{name: "other cluster", args: `cluster: "c2", kind: "Deployment.apps", namespace: "web", name: "web"`},
		{name: "unknown cluster", args: `cluster: "c9", kind: "Pod", namespace: "web", name: "web-1"`},
		{name: "empty kind", args: `cluster: "c1", kind: "", namespace: "web", name: "web-1"`, code: CodeBadUserInput},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := `{ resource(` + tc.args + `) { cluster resource namespace name } }`
			if strings.Contains(tc.args, "$null") {
				// graphql-go has no null literal: $null is a variable left unset.
				q = "query($null: String) " + q
			}
			res := run(t, s, q, nil)
			if tc.code != "" {
				if diff := cmp.Diff([]string{tc.code}, codes(res)); diff != "" {
					t.Fatalf("codes (-want +got):\n%s\n%v", diff, res.Errors)
				}
				return
			}
			if len(res.Errors) > 0 {
				t.Fatal(res.Errors)
			}
			var got struct {
				Resource *struct {
					Cluster, Resource, Name string
					Namespace               *string
				}
			}
			if err := json.Unmarshal(mustJSON(t, res.Data), &got); err != nil {
				t.Fatal(err)
			}
			key := ""
			if r := got.Resource; r != nil {
				ns := ""
				if r.Namespace != nil {
					ns = *r.Namespace
					if ns == "" {
						t.Error(`namespace "" instead of null`)
					}
				}
				key = r.Cluster + "/" + r.Resource + "/" + ns + "/" + r.Name
			}
			if key != tc.want {
				t.Errorf("resource = %q, want %q", key, tc.want)
			}
		})
	}
}

// TestAmbiguousKind looks up a bare kind that two groups serve, neither of
// them the core group.
func TestAmbiguousKind(t *testing.T) {
	widgetA := &object.Type{Resource: "widgets.a.example.com", GVR: schema.GroupVersionResource{Group: "a.example.com", Version: "v1", Resource: "widgets"}, Kind: "Widget", Namespaced: true}
	widgetB := &object.Type{Resource: "widgets.b.example.com", GVR: schema.GroupVersionResource{Group: "b.example.com", Version: "v1", Resource: "widgets"}, Kind: "Widget", Namespaced: true}
	ix := index.New(index.Options{})
	for _, ty := range []*object.Type{widgetA, widgetB} {
		ix.Upsert(newObject(t, spec{cluster: "c1", typ: ty, namespace: "web", name: "w"}))
	}
	s := newServer(t, ix, newFixture(t).tracker, Options{})
	res := run(t, s, `{ resource(cluster: "c1", kind: "Widget", namespace: "web", name: "w") { name } }`, nil)
	if diff := cmp.Diff([]string{CodeBadUserInput}, codes(res)); diff != "" {
		t.Fatalf("codes (-want +got):\n%s", diff)
	}
	if msg := res.Errors[0].Message; !strings.Contains(msg, "Widget.a.example.com, Widget.b.example.com") {
		t.Errorf("message %q does not name the candidates", msg)
	}
	var got struct{ Resource struct{ Resource string } }
	data(t, s, `{ resource(cluster: "c1", kind: "Widget.b.example.com", namespace: "web", name: "w") { resource } }`, nil, &got)
	if got.Resource.Resource != widgetB.Resource {
		t.Errorf("resource = %q, want %q", got.Resource.Resource, widgetB.Resource)
	}
}

// TestGolden checks larger responses against testdata/*.json.
func TestGolden(t *testing.T) {
	f := newFixture(t)
	s := newServer(t, f.ix, f.tracker, Options{})
	for _, tc := range []struct{ name, query string }{
		{name: "clusters", query: `{
			clusters { name status stale lastSyncTime lastEventTime objectCount message
				resources { resource kind status objectCount lastError lastSyncTime lastEventTime } }
			c2: cluster(name: "c2") { name status }
			none: cluster(name: "none") { name }
		}`},
		{name: "resources", query: `{
			resources(filter: {clusters: ["c1"], namespaces: ["web"], kinds: ["Pod", "Deployment.apps", "ReplicaSet.apps", "ConfigMap"]}, first: 3) {
				totalCount staleClusters
				pageInfo { hasNextPage endCursor }
				edges { cursor node {
					cluster apiVersion kind resource namespace name uid resourceVersion labels annotations creationTimestamp object
					owners { kind name } children { kind name }
				} }
			}
		}`},
		{name: "namespace", query: `{ resource(cluster: "c2", kind: "Namespace", name: "web") {
			cluster apiVersion kind namespace name labels annotations object owners { name } children { name } } }`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := run(t, s, tc.query, nil)
			if len(res.Errors) > 0 {
				t.Fatal(res.Errors)
			}
			golden(t, tc.name, mustJSON(t, res))
		})
	}
}

// TestObjectIsStoredBytes checks that object is the stored JSON, byte for
// byte, in the HTTP response.
func TestObjectIsStoredBytes(t *testing.T) {
	f := newFixture(t)
	s := newServer(t, f.ix, f.tracker, Options{})
	o := f.object(t, "c1/configmaps/web/settings")
	body := mustJSON(t, run(t, s, `{ resource(cluster: "c1", kind: "ConfigMap", namespace: "web", name: "settings") { object } }`, nil))
	if !bytes.Contains(body, o.Raw()) {
		t.Errorf("response %s does not hold the stored bytes %s", body, o.Raw())
	}
	var got struct {
		Data struct {
			Resource struct{ Object map[string]any }
		}
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	if got.Data.Resource.Object["data"].(map[string]any)["color"] != "blue" {
		t.Errorf("object = %v", got.Data.Resource.Object)
	}
}

func TestLabelsAndAnnotations(t *testing.T) {
	f := newFixture(t)
	s := newServer(t, f.ix, f.tracker, Options{})
	var got struct {
		A, B struct{ Labels, Annotations map[string]string }
	}
	data(t, s, `{
		a: resource(cluster: "c1", kind: "ConfigMap", namespace: "web", name: "settings") { labels annotations }
		b: resource(cluster: "c1", kind: "Event", namespace: "web", name: "ev") { labels annotations }
	}`, nil, &got)
	if diff := cmp.Diff(map[string]string{"app": "web", "tier": "fe"}, got.A.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"owner": "team-web@example.com"}, got.A.Annotations); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
	if got.B.Labels == nil || len(got.B.Labels) != 0 || got.B.Annotations == nil || len(got.B.Annotations) != 0 {
		t.Errorf("object without labels and annotations: %+v, want empty objects", got.B)
	}
}

func TestClustersFromHealth(t *testing.T) {
	f := newFixture(t)
	s := newServer(t, f.ix, f.tracker, Options{})
	var got struct {
		Clusters []struct {
			Name, Status string
			ObjectCount  int
			Message      *string
			Resources    []struct{ Resource, Status string }
		}
	}
	data(t, s, `{ clusters { name status objectCount message resources { resource status } } }`, nil, &got)
	var summary []string
	for _, c := range got.Clusters {
		summary = append(summary, c.Name+" "+c.Status)
		if c.ObjectCount != f.ix.ObjectCount(c.Name, "") {
			t.Errorf("%s objectCount = %d, want %d", c.Name, c.ObjectCount, f.ix.ObjectCount(c.Name, ""))
		}
		if (c.Message == nil) != (c.Status == "SYNCED") {
			t.Errorf("%s message = %v with status %s", c.Name, c.Message, c.Status)
		}
		if len(c.Resources) != 5 {
			t.Errorf("%s has %d resources, want 5", c.Name, len(c.Resources))
		}
	}
	if diff := cmp.Diff([]string{"c1 SYNCED", "c2 SYNCED", "c3 DISCONNECTED"}, summary); diff != "" {
		t.Errorf("clusters (-want +got):\n%s", diff)
	}
}

func TestIntrospection(t *testing.T) {
	f := newFixture(t)
	s := newServer(t, f.ix, f.tracker, Options{})
	var got struct {
		Schema struct {
			Types []struct {
				Name   string
				Fields []struct{ Name string }
			}
		} `json:"__schema"`
	}
	data(t, s, `{ __schema { types { name fields { name } } } }`, nil, &got)
	fields := map[string][]string{}
	for _, ty := range got.Schema.Types {
		for _, fl := range ty.Fields {
			fields[ty.Name] = append(fields[ty.Name], fl.Name)
		}
		slices.Sort(fields[ty.Name])
	}
	want := map[string][]string{
		"Query":              {"changes", "cluster", "clusters", "facets", "fleetcache", "resource", "resources"},
		"ChangeConnection":   {"edges", "pageInfo", "revision", "truncated"},
		"ResourceEvent":      {"cursor", "resource", "time", "type"},
		"ResourceConnection": {"deniedClusters", "edges", "pageInfo", "revision", "staleClusters", "staleness", "totalCount"},
		"ResourceEdge":       {"cursor", "node"},
		"PageInfo":           {"endCursor", "hasNextPage"},
		"Facet":              {"count", "value"},
	}
	for ty, w := range want {
		if diff := cmp.Diff(w, fields[ty]); diff != "" {
			t.Errorf("fields of %s (-want +got):\n%s", ty, diff)
		}
	}
	for _, name := range []string{"annotations", "apiVersion", "children", "cluster", "creationTimestamp", "kind", "labels",
		"name", "namespace", "object", "owners", "resourceVersion", "uid"} {
		if !slices.Contains(fields["Resource"], name) {
			t.Errorf("Resource has no field %s: %v", name, fields["Resource"])
		}
	}
	if !strings.Contains(string(mustJSON(t, run(t, s, `{ __type(name: "SyncStatus") { enumValues { name } } }`, nil))), "DISCONNECTED") {
		t.Error("SyncStatus lacks DISCONNECTED")
	}
}

// TestFieldOrder checks that responses list fields in the order the query
// selects them, through aliases, fragments and inline fragments.
func TestFieldOrder(t *testing.T) {
	f := newFixture(t)
	s := newServer(t, f.ix, f.tracker, Options{})
	res := run(t, s, `{
		zeta: cluster(name: "c1") { status name ... on Cluster { objectCount } ...M }
		alpha: __typename
		...Q
	}
	fragment M on Cluster { message name }
	fragment Q on Query { cluster(name: "c2") { name } }`, nil)
	if len(res.Errors) > 0 {
		t.Fatal(res.Errors)
	}
	want := `{"data":{"zeta":{"status":"SYNCED","name":"c1","objectCount":13,"message":null},"alpha":"Query","cluster":{"name":"c2"}}}`
	if got := string(mustJSON(t, res)); got != want {
		t.Errorf("response\n got %s\nwant %s", got, want)
	}
}

// TestStaleness checks that a page says since when each selected cluster
// that is not SYNCED is not current, and that clusters and their types say
// how current they are.
func TestStaleness(t *testing.T) {
	f := newFixture(t)
	s := newServer(t, f.ix, f.tracker, Options{})
	now := created.Add(time.Hour).UTC().Format(time.RFC3339Nano)
	var p struct {
		Resources struct {
			Staleness []map[string]any
		}
		Clusters []struct {
			Name        string
			CurrentAsOf *string
			Resources   []struct{ CurrentAsOf *string }
		}
	}
	data(t, s, `{ resources(first: 0) { staleness { cluster status currentAsOf } }
		clusters { name currentAsOf resources { currentAsOf } } }`, nil, &p)
	// c3's probe failed after every type synced: current as of that sync.
	want := []map[string]any{{"cluster": "c3", "status": "DISCONNECTED", "currentAsOf": now}}
	if diff := cmp.Diff(want, p.Resources.Staleness); diff != "" {
		t.Errorf("staleness (-want +got):\n%s", diff)
	}
	if len(p.Clusters) != 3 {
		t.Fatalf("clusters = %+v, want three", p.Clusters)
	}
	for _, c := range p.Clusters {
		if c.CurrentAsOf == nil || *c.CurrentAsOf != now {
			t.Errorf("cluster %s currentAsOf = %v, want %s", c.Name, c.CurrentAsOf, now)
		}
		for _, r := range c.Resources {
			if r.CurrentAsOf == nil || *r.CurrentAsOf != now {
				t.Errorf("a type of cluster %s has currentAsOf %v, want %s", c.Name, r.CurrentAsOf, now)
			}
		}
	}
}
