package relations

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/graphql-go/graphql"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/fleetcache/fleetcache/internal/indextest"
	"github.com/fleetcache/fleetcache/pkg/authz"
	gqlfilter "github.com/fleetcache/fleetcache/pkg/graphql/filter"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
	"github.com/fleetcache/fleetcache/pkg/index/views"
)

// indexEngine is an Engine over an index, for a caller who may list the
// grants given (every resource of every cluster when nil).
type indexEngine struct {
	ix     *index.Index
	grants []authz.Grant
}

func (e indexEngine) Lookup(cluster, namespace, name string) []*object.Object {
	return e.ix.Lookup(cluster, namespace, name)
}

func (e indexEngine) Selecting(string, string, string, object.Labels) []*object.Object { return nil }

func (e indexEngine) Find(fs []planner.Filter, limit int) []*object.Object {
	return planner.ListUnion(e.ix, fs, nil, limit).Objects
}

func (e indexEngine) Scope(_ context.Context, f planner.Filter) ([]planner.Filter, []string) {
	if e.grants == nil {
		return []planner.Filter{f}, nil
	}
	return authz.Scope{Grants: e.grants}.Filters(f), nil
}

func (e indexEngine) Holding(f planner.Filter) map[string][]string {
	out := map[string][]string{}
	for _, c := range views.ContentsOf(e.ix, f) {
		for _, r := range c.Resources {
			out[c.Cluster] = append(out[c.Cluster], r.Resource)
		}
	}
	return out
}

func (e indexEngine) Namespaces(cluster string) []string { return e.ix.Namespaces(cluster) }

func (e indexEngine) Visible(context.Context, *object.Object) (bool, error) { return true, nil }

func (e indexEngine) Connection(graphql.ResolveParams, Related, string) (any, error) { return nil, nil }

func (e indexEngine) CheckContext(context.Context) error { return nil }

// throughIndex holds two clusters whose Nodes share names but not zones,
// a Deployment's ReplicaSet and Pods in each, and a Pod of nobody in c1.
func throughIndex(t *testing.T) *index.Index {
	ix := index.New(index.Options{})
	pod := func(c, name, node string, owner *object.Object) {
		opts := []func(*object.Object){indextest.WithPodStatus("Running", node, 0, "busybox")}
		if owner != nil {
			opts = append(opts, indextest.WithOwner(string(owner.UID)))
		}
		ix.Upsert(indextest.Obj(c, indextest.PodType, "a", name, opts...))
	}
	for _, c := range []string{"c1", "c2"} {
		zones := map[string][2]string{"c1": {"a", "b"}, "c2": {"b", "a"}}[c]
		ix.Upsert(indextest.Obj(c, indextest.NodeType, "", "n1", indextest.WithLabels("zone", zones[0])))
		ix.Upsert(indextest.Obj(c, indextest.NodeType, "", "n2", indextest.WithLabels("zone", zones[1])))
		dep := indextest.Obj(c, indextest.DeploymentType, "a", "web", indextest.WithLabels("tier", "fe"))
		rs := indextest.Obj(c, indextest.ReplicaSetType, "a", "web-1", indextest.WithOwner(string(dep.UID)))
		ix.Upsert(dep)
		ix.Upsert(rs)
		pod(c, "web-1-x", "n1", rs)
		pod(c, "web-1-y", "n2", rs)
	}
	pod("c1", "lone", "n1", nil)
	if err := ix.Verify(); err != nil {
		t.Fatal(err)
	}
	return ix
}

func through(t *testing.T, rel gqlfilter.Relation, limit int, sel string, kinds ...string) gqlfilter.Through {
	t.Helper()
	s, err := labels.Parse(sel)
	if err != nil {
		t.Fatal(err)
	}
	return gqlfilter.Through{Relation: rel, Limit: limit, Filter: planner.Filter{Selector: s, Kinds: kinds}}
}

// TestNarrow checks the filters Narrow builds: one per cluster with
// matching related objects, what they select, and the clusters it says
// are hidden.
func TestNarrow(t *testing.T) {
	ix := throughIndex(t)
	all := []planner.Filter{{}}
	for _, tc := range []struct {
		name    string
		fs      []planner.Filter
		through []gqlfilter.Through
		grants  []authz.Grant
		// filters are the narrowed filters' clusters, resources and field
		// selectors; want the keys of what they select.
		filters []string
		want    []string
		hidden  []string
		err     string
	}{
		{name: "nothing to go through", fs: all, filters: []string{"[] [] "},
			want: []string{"c1/nodes//n1", "c1/nodes//n2", "c1/deployments.apps/a/web", "c1/pods/a/lone", "c1/pods/a/web-1-x", "c1/pods/a/web-1-y",
				"c1/replicasets.apps/a/web-1", "c2/nodes//n1", "c2/nodes//n2", "c2/deployments.apps/a/web", "c2/pods/a/web-1-x", "c2/pods/a/web-1-y",
				"c2/replicasets.apps/a/web-1"}},
		{name: "nodes, in their own cluster", fs: all, through: []gqlfilter.Through{through(t, gqlfilter.Nodes, 10, "zone=a")},
			filters: []string{"[c1] [pods] spec.nodeName in (n1)", "[c2] [pods] spec.nodeName in (n2)"},
			want:    []string{"c1/pods/a/lone", "c1/pods/a/web-1-x", "c2/pods/a/web-1-y"}},
		{name: "nodes, of other resources than Pods", fs: []planner.Filter{{Resources: []string{"replicasets.apps"}}},
			through: []gqlfilter.Through{through(t, gqlfilter.Nodes, 10, "zone=a")}},
		{name: "owners, two hops", fs: []planner.Filter{{Resources: []string{"pods"}}},
			through: []gqlfilter.Through{through(t, gqlfilter.Owners, 10, "tier=fe", "Deployment.apps")},
			filters: []string{"[c1] [pods] ", "[c2] [pods] "},
			want:    []string{"c1/pods/a/web-1-x", "c1/pods/a/web-1-y", "c2/pods/a/web-1-x", "c2/pods/a/web-1-y"}},
		{name: "nodes and owners", fs: all,
			through: []gqlfilter.Through{through(t, gqlfilter.Nodes, 10, "zone=b"), through(t, gqlfilter.Owners, 10, "tier=fe")},
			filters: []string{"[c1] [pods] spec.nodeName in (n2)", "[c2] [pods] spec.nodeName in (n1)"},
			want:    []string{"c1/pods/a/web-1-y", "c2/pods/a/web-1-x"}},
		{name: "one cluster's scope", fs: []planner.Filter{{Clusters: []string{"c2"}, Resources: []string{"pods"}}},
			through: []gqlfilter.Through{through(t, gqlfilter.Nodes, 10, "zone=a")},
			grants:  []authz.Grant{{Cluster: "c1", Resource: "nodes"}, {Cluster: "c2", Resource: "nodes"}},
			filters: []string{"[c2] [pods] spec.nodeName in (n2)"}, want: []string{"c2/pods/a/web-1-y"}},
		{name: "Nodes hidden in c2", fs: []planner.Filter{{Clusters: []string{"c1", "c2"}, Resources: []string{"pods"}}},
			through: []gqlfilter.Through{through(t, gqlfilter.Nodes, 10, "zone=a")},
			grants:  []authz.Grant{{Cluster: "c1", Resource: "nodes"}},
			filters: []string{"[c1] [pods] spec.nodeName in (n1)"}, want: []string{"c1/pods/a/lone", "c1/pods/a/web-1-x"}, hidden: []string{"c2"}},
		{name: "ReplicaSets hidden: the second hop", fs: []planner.Filter{{Clusters: []string{"c1", "c2"}, Resources: []string{"pods"}}},
			through: []gqlfilter.Through{through(t, gqlfilter.Owners, 10, "", "Deployment.apps")},
			grants:  []authz.Grant{{Cluster: "c1", Resource: "deployments.apps"}, {Cluster: "c2", Resource: "deployments.apps"}, {Cluster: "c1", Resource: "replicasets.apps"}},
			filters: []string{"[c1] [pods] ", "[c2] [pods] "}, want: []string{"c1/pods/a/web-1-x", "c1/pods/a/web-1-y"}, hidden: []string{"c2"}},
		{name: "ReplicaSets hidden in part: in c2's namespace a", fs: []planner.Filter{{Clusters: []string{"c1", "c2"}, Resources: []string{"pods"}}},
			through: []gqlfilter.Through{through(t, gqlfilter.Owners, 10, "", "Deployment.apps")},
			grants: []authz.Grant{{Cluster: "c1", Resource: "deployments.apps"}, {Cluster: "c2", Resource: "deployments.apps"},
				{Cluster: "c1", Resource: "replicasets.apps", Namespaces: []string{"a"}}, {Cluster: "c2", Resource: "replicasets.apps", Namespaces: []string{"z"}}},
			filters: []string{"[c1] [pods] ", "[c2] [pods] "}, want: []string{"c1/pods/a/web-1-x", "c1/pods/a/web-1-y"}, hidden: []string{"c2"}},
		{name: "owners in the objects' namespaces only", fs: []planner.Filter{{Namespaces: []string{"b"}}},
			through: []gqlfilter.Through{through(t, gqlfilter.Owners, 1, "", "Deployment.apps")}},
		{name: "over the limit", fs: all, through: []gqlfilter.Through{through(t, gqlfilter.Nodes, 3, "zone")},
			err: "the filter through nodes matches more than 3 objects (its limit)"},
		{name: "over the limit with the hops", fs: all, through: []gqlfilter.Through{through(t, gqlfilter.Owners, 3, "", "Deployment.apps")},
			err: "more than 3 objects with their ReplicaSets and Jobs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := indexEngine{ix: ix, grants: tc.grants}
			got, hidden, err := Narrow(t.Context(), e, tc.fs, tc.through)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var filters []string
			for _, f := range got {
				filters = append(filters, "["+strings.Join(f.Clusters, ",")+"] ["+strings.Join(f.Resources, ",")+"] "+f.Fields.String())
			}
			if diff := cmp.Diff(tc.filters, filters); diff != "" {
				t.Errorf("filters (-want +got):\n%s", diff)
			}
			var keys []string
			for _, o := range e.Find(got, 0) {
				keys = append(keys, o.Key().String())
			}
			slices.Sort(keys)
			want := slices.Clone(tc.want)
			slices.Sort(want)
			if diff := cmp.Diff(want, keys); diff != "" {
				t.Errorf("objects (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.hidden, hidden); diff != "" {
				t.Errorf("hidden (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNarrowPartlyHiddenInTheFiltersNamespaces checks that a partial
// denial is asked of the namespaces the filter reaches only, for the
// owners and for their ReplicaSets: a ReplicaSet the caller may not see in
// another namespace hides nothing from it.
func TestNarrowPartlyHiddenInTheFiltersNamespaces(t *testing.T) {
	ix := throughIndex(t)
	ix.Upsert(indextest.Obj("c1", indextest.DeploymentType, "other", "db", indextest.WithLabels("tier", "fe")))
	ix.Upsert(indextest.Obj("c1", indextest.ReplicaSetType, "other", "db-1"))
	e := indexEngine{ix: ix, grants: []authz.Grant{
		{Cluster: "c1", Resource: "deployments.apps", Namespaces: []string{"a"}},
		{Cluster: "c1", Resource: "replicasets.apps", Namespaces: []string{"a"}},
		{Cluster: "c1", Resource: "pods"},
	}}
	fs := []planner.Filter{{Clusters: []string{"c1"}, Resources: []string{"pods"}, Namespaces: []string{"a"}}}
	got, hidden, err := Narrow(t.Context(), e, fs, []gqlfilter.Through{through(t, gqlfilter.Owners, 10, "tier=fe", "Deployment.apps")})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range e.Find(got, 0) {
		keys = append(keys, o.Key().String())
	}
	if diff := cmp.Diff([]string{"c1/pods/a/web-1-x", "c1/pods/a/web-1-y"}, keys); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	if len(hidden) != 0 {
		t.Errorf("hidden %v, want none: the filter reaches namespace a only", hidden)
	}
}

// TestMergeFixed checks the merge of a page with objects found by key:
// in Position order, after the cursor, at most limit, More when either
// has more.
func TestMergeFixed(t *testing.T) {
	obj := func(name string) *object.Object { return indextest.Obj("c1", indextest.PodType, "a", name) }
	names := func(objs []*object.Object) []string {
		out := []string{}
		for _, o := range objs {
			out = append(out, o.Name)
		}
		return out
	}
	fixed := []*object.Object{obj("b"), obj("d"), obj("f")}
	for _, tc := range []struct {
		name     string
		page     []string
		more     bool
		after    string
		limit    int
		want     []string
		wantMore bool
	}{
		{name: "all", page: []string{"a", "c"}, limit: 10, want: []string{"a", "b", "c", "d", "f"}},
		{name: "cut", page: []string{"a", "c"}, limit: 3, want: []string{"a", "b", "c"}, wantMore: true},
		{name: "after", page: []string{"e"}, after: "d", limit: 10, want: []string{"e", "f"}},
		{name: "the page has more", page: []string{"a"}, more: true, limit: 1, want: []string{"a"}, wantMore: true},
		{name: "fixed only", limit: 2, want: []string{"b", "d"}, wantMore: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := planner.Page{More: tc.more}
			for _, n := range tc.page {
				p.Objects = append(p.Objects, obj(n))
			}
			var after *object.Position
			if tc.after != "" {
				pos := obj(tc.after).Position()
				after = &pos
			}
			got := MergeFixed(p, fixed, after, tc.limit)
			if diff := cmp.Diff(tc.want, names(got.Objects)); diff != "" || got.More != tc.wantMore {
				t.Errorf("more %v (want %v); (-want +got):\n%s", got.More, tc.wantMore, diff)
			}
		})
	}
}
