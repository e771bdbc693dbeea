package planner_test

import (
	"fmt"
	"github.com/fleetcache/fleetcache/internal/indextest"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// smallFleet is a two-cluster fleet; the comment lists it in index order.
func smallFleet() []*object.Object {
	return []*object.Object{
		indextest.Obj("c1", indextest.NodeType, "", "n1", indextest.WithLabels("zone", "a")),                                                        // c1/nodes//n1
		indextest.Obj("c1", indextest.PodType, "default", "db-1", indextest.WithLabels("app", "db")),                                                // c1/pods/default/db-1
		indextest.Obj("c1", indextest.DeploymentType, "default", "web", indextest.WithLabels("app", "web")),                                         // c1/deployments.apps/default/web
		indextest.Obj("c1", indextest.PodType, "default", "web-1", indextest.WithLabels("app", "web", "tier", "fe"), indextest.WithOwner("rs-web")), // c1/pods/default/web-1
		indextest.Obj("c1", indextest.PodType, "default", "web-2", indextest.WithLabels("app", "web", "tier", "be"), indextest.WithOwner("rs-web")), // c1/pods/default/web-2
		indextest.Obj("c1", indextest.ReplicaSetType, "default", "web-abc", indextest.WithLabels("app", "web", "pod-template-hash", "abc"), indextest.WithOwner("deploy-web")),
		indextest.Obj("c1", indextest.ConfigMapType, "prod", "config"),                                                                           // c1/configmaps/prod/config
		indextest.Obj("c1", indextest.PodType, "prod", "web-1", indextest.WithLabels("app", "web", "tier", "fe", "env", "prod")),                 // c1/pods/prod/web-1
		indextest.Obj("c2", indextest.NodeType, "", "n2", indextest.WithLabels("zone", "b")),                                                     // c2/nodes//n2
		indextest.Obj("c2", indextest.PodType, "default", "web-1", indextest.WithLabels("app", "web", "tier", "fe")),                             // c2/pods/default/web-1
		indextest.Obj("c2", indextest.FooPodsType, "default", "web-1", indextest.WithLabels("app", "web")),                                       // c2/pods.foo.example.com/default/web-1
		indextest.Obj("c2", indextest.PodType, "prod", "api-1", indextest.WithLabels("app", "api", "tier", "be"), indextest.WithOwner("rs-api")), // c2/pods/prod/api-1
	}
}

func TestFilters(t *testing.T) {
	const (
		n1      = "c1/nodes//n1"
		db1     = "c1/pods/default/db-1"
		deploy  = "c1/deployments.apps/default/web"
		web1    = "c1/pods/default/web-1"
		web2    = "c1/pods/default/web-2"
		rs      = "c1/replicasets.apps/default/web-abc"
		config  = "c1/configmaps/prod/config"
		prodWeb = "c1/pods/prod/web-1"
		n2      = "c2/nodes//n2"
		c2Web   = "c2/pods/default/web-1"
		c2Foo   = "c2/pods.foo.example.com/default/web-1"
		api1    = "c2/pods/prod/api-1"
	)
	all := []string{n1, db1, deploy, web1, web2, rs, config, prodWeb, n2, c2Web, c2Foo, api1}
	ix := index.New(index.Options{})
	for _, o := range smallFleet() {
		ix.Upsert(o)
	}
	if diff := cmp.Diff(all, indextest.Keys(planner.List(ix, planner.Filter{}, nil, 0).Objects)); diff != "" {
		t.Fatalf("index order (-want +got):\n%s", diff)
	}
	sel := func(s string) labels.Selector { return indextest.MustSelector(t, s) }
	tests := []struct {
		name string
		f    planner.Filter
		want []string
	}{
		{"everything", planner.Filter{}, all},
		{"everything selector", planner.Filter{Selector: labels.Everything()}, all},
		{"nothing selector", planner.Filter{Selector: labels.Nothing()}, nil},
		{"cluster", planner.Filter{Clusters: []string{"c2"}}, []string{n2, c2Web, c2Foo, api1}},
		{"clusters repeated", planner.Filter{Clusters: []string{"c2", "c1", "c2"}}, all},
		{"unknown cluster", planner.Filter{Clusters: []string{"c3"}}, nil},
		{"bare kind in every group", planner.Filter{Kinds: []string{"Pod"}}, []string{db1, web1, web2, prodWeb, c2Web, c2Foo, api1}},
		{"kind with group", planner.Filter{Kinds: []string{"Pod.foo.example.com"}}, []string{c2Foo}},
		{"kinds overlapping", planner.Filter{Kinds: []string{"Pod.foo.example.com", "Pod"}}, []string{db1, web1, web2, prodWeb, c2Web, c2Foo, api1}},
		{"kinds", planner.Filter{Kinds: []string{"Deployment.apps", "Node"}}, []string{n1, deploy, n2}},
		{"bare kind of a group", planner.Filter{Kinds: []string{"Deployment"}}, []string{deploy}},
		{"unknown kind", planner.Filter{Kinds: []string{"Secret"}}, nil},
		{"wrong group", planner.Filter{Kinds: []string{"Deployment.extensions"}}, nil},
		{"resource", planner.Filter{Resources: []string{"pods"}}, []string{db1, web1, web2, prodWeb, c2Web, api1}},
		{"resources", planner.Filter{Resources: []string{"configmaps", "nodes"}}, []string{n1, config, n2}},
		{"namespace", planner.Filter{Namespaces: []string{"prod"}}, []string{config, prodWeb, api1}},
		{"cluster scoped", planner.Filter{Namespaces: []string{""}}, []string{n1, n2}},
		{"namespaces", planner.Filter{Namespaces: []string{"prod", ""}}, []string{n1, config, prodWeb, n2, api1}},
		{"cluster and namespace", planner.Filter{Clusters: []string{"c1"}, Namespaces: []string{"prod"}}, []string{config, prodWeb}},
		{"label =", planner.Filter{Selector: sel("app=web")}, []string{deploy, web1, web2, rs, prodWeb, c2Web, c2Foo}},
		{"label ==", planner.Filter{Selector: sel("app==web")}, []string{deploy, web1, web2, rs, prodWeb, c2Web, c2Foo}},
		{"label in", planner.Filter{Selector: sel("tier in (fe,be)")}, []string{web1, web2, prodWeb, c2Web, api1}},
		{"label in unknown value", planner.Filter{Selector: sel("tier in (x,be)")}, []string{web2, api1}},
		{"label notin", planner.Filter{Selector: sel("tier notin (fe)")}, []string{n1, db1, deploy, web2, rs, config, n2, c2Foo, api1}},
		{"label exists", planner.Filter{Selector: sel("tier")}, []string{web1, web2, prodWeb, c2Web, api1}},
		{"label does not exist", planner.Filter{Selector: sel("!tier")}, []string{n1, db1, deploy, rs, config, n2, c2Foo}},
		{"label !=", planner.Filter{Selector: sel("app!=web")}, []string{n1, db1, config, n2, api1}},
		{"label requirements", planner.Filter{Selector: sel("app=web,tier!=fe")}, []string{deploy, web2, rs, c2Foo}},
		{"label requirements narrowing twice", planner.Filter{Selector: sel("app=web,tier in (fe),env")}, []string{prodWeb}},
		{"unknown label", planner.Filter{Selector: sel("app=nope")}, nil},
		{"unknown label key", planner.Filter{Selector: sel("nope")}, nil},
		{"label exists and notin", planner.Filter{Selector: sel("zone,app notin (x)")}, []string{n1, n2}},
		{"name", planner.Filter{NameContains: "web-1"}, []string{web1, prodWeb, c2Web, c2Foo}},
		{"owner", planner.Filter{OwnerUID: "rs-web"}, []string{web1, web2}},
		{"unknown owner", planner.Filter{OwnerUID: "nope"}, nil},
		{"owners", planner.Filter{OwnerUIDs: []types.UID{"rs-api", "rs-web", "nope"}}, []string{web1, web2, api1}},
		{"owners and owner", planner.Filter{OwnerUID: "rs-web", OwnerUIDs: []types.UID{"rs-api", "rs-web"}}, []string{web1, web2}},
		{"unknown owners", planner.Filter{OwnerUIDs: []types.UID{"nope", "nope-2"}}, nil},
		{"combined", planner.Filter{Clusters: []string{"c1"}, Namespaces: []string{"default"}, Kinds: []string{"Pod"}, Selector: sel("tier in (fe,be)")}, []string{web1, web2}},
		{"namespace, kind and label", planner.Filter{Namespaces: []string{"default"}, Kinds: []string{"Pod"}, Selector: sel("app=web")}, []string{web1, web2, c2Web, c2Foo}},
		{"resource and owner", planner.Filter{Resources: []string{"pods"}, OwnerUID: "rs-api"}, []string{api1}},
		{"cluster and resource", planner.Filter{Clusters: []string{"c2"}, Resources: []string{"pods", "nodes"}}, []string{n2, c2Web, api1}},
		{"disjoint", planner.Filter{Clusters: []string{"c2"}, OwnerUID: "rs-web"}, nil},
		{"name and namespace", planner.Filter{Namespaces: []string{"default"}, NameContains: "web"}, []string{deploy, web1, web2, rs, c2Web, c2Foo}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page := planner.List(ix, tt.f, nil, 0)
			if diff := cmp.Diff(tt.want, indextest.Keys(page.Objects), indextest.CmpSorted[1]); diff != "" {
				t.Errorf("List (-want +got):\n%s", diff)
			}
			if page.More || page.Revision != ix.Revision() {
				t.Errorf("page More=%v Revision=%d", page.More, page.Revision)
			}
			if got := planner.Count(ix, tt.f); got != len(tt.want) {
				t.Errorf("Count = %d, want %d", got, len(tt.want))
			}
			for _, limit := range []int{1, 2, 5} {
				if diff := cmp.Diff(tt.want, indextest.Keys(indextest.ListAll(t, ix, tt.f, limit, nil)), indextest.CmpSorted[1]); diff != "" {
					t.Errorf("pages of %d (-want +got):\n%s", limit, diff)
				}
			}
		})
	}
}

func TestListAfter(t *testing.T) {
	ix := index.New(index.Options{})
	for _, o := range smallFleet() {
		ix.Upsert(o)
	}
	tests := []struct {
		name  string
		f     planner.Filter
		after object.Position
		limit int
		want  []string
		more  bool
	}{
		{"after an object", planner.Filter{}, object.Position{Cluster: "c1", Namespace: "prod", Name: "config", Kind: "ConfigMap", Resource: "configmaps"}, 2, []string{"c1/pods/prod/web-1", "c2/nodes//n2"}, true},
		{"after a gap", planner.Filter{}, object.Position{Cluster: "c1", Namespace: "prod", Name: "d", Kind: "", Resource: ""}, 0, []string{"c1/pods/prod/web-1", "c2/nodes//n2", "c2/pods/default/web-1", "c2/pods.foo.example.com/default/web-1", "c2/pods/prod/api-1"}, false},
		{"between kinds of one name", planner.Filter{}, object.Position{Cluster: "c2", Namespace: "default", Name: "web-1", Kind: "Pod", Resource: "pods"}, 1, []string{"c2/pods.foo.example.com/default/web-1"}, true},
		{"last page exactly full", planner.Filter{Clusters: []string{"c2"}}, object.Position{Cluster: "c2", Namespace: "default", Name: "web-1", Kind: "Pod", Resource: "pods"}, 2, []string{"c2/pods.foo.example.com/default/web-1", "c2/pods/prod/api-1"}, false},
		{"past the end", planner.Filter{}, object.Position{Cluster: "c3", Namespace: "", Name: "", Kind: "", Resource: ""}, 0, nil, false},
		{"scope ranges before the cursor", planner.Filter{Namespaces: []string{"default"}}, object.Position{Cluster: "c1", Namespace: "zzz", Name: "", Kind: "", Resource: ""}, 0, []string{"c2/pods/default/web-1", "c2/pods.foo.example.com/default/web-1"}, false},
		{"posting with scope", planner.Filter{Namespaces: []string{"default", "prod"}, Selector: indextest.MustSelector(t, "app=web")}, object.Position{Cluster: "c1", Namespace: "default", Name: "web-1", Kind: "Pod", Resource: "pods"}, 3, []string{"c1/pods/default/web-2", "c1/replicasets.apps/default/web-abc", "c1/pods/prod/web-1"}, true},
		{"several postings", planner.Filter{Selector: indextest.MustSelector(t, "tier in (be,fe)")}, object.Position{Cluster: "c1", Namespace: "default", Name: "web-1", Kind: "Pod", Resource: "pods"}, 2, []string{"c1/pods/default/web-2", "c1/pods/prod/web-1"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page := planner.List(ix, tt.f, &tt.after, tt.limit)
			if diff := cmp.Diff(tt.want, indextest.Keys(page.Objects), indextest.CmpSorted[1]); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if page.More != tt.more {
				t.Errorf("More = %v, want %v", page.More, tt.more)
			}
		})
	}
}

// TestNarrowFiltersDoNotScan checks with the visit counter that a narrow
// filter visits only its smallest candidate set.
func TestNarrowFiltersDoNotScan(t *testing.T) {
	ix := index.New(index.Options{})
	// 4 clusters x 10 namespaces x 250 objects; in each namespace, 1 in 25
	// objects has app=web-3, and 1 in 5 of those has tier=fe.
	for c := range 4 {
		for ns := range 10 {
			for i := range 250 {
				kv := []string{"app", fmt.Sprintf("web-%d", i%25), "tier", []string{"fe", "be", "x", "y", "z"}[i/25%5]}
				o := indextest.Obj(fmt.Sprintf("c%d", c), indextest.PodType, fmt.Sprintf("ns-%d", ns), fmt.Sprintf("p-%03d", i), indextest.WithLabels(kv...))
				if i < 3 && ns == 0 && c == 0 {
					indextest.WithOwner("rs-1")(o)
					indextest.WithLabels(append(kv, "rare", "yes")...)(o)
				}
				ix.Upsert(o)
			}
		}
	}
	ix.Upsert(indextest.Obj("small", indextest.ConfigMapType, "ns-0", "a"))
	ix.Upsert(indextest.Obj("small", indextest.ConfigMapType, "ns-0", "b"))
	ix.Upsert(indextest.Obj("c1", indextest.DeploymentType, "ns-0", "d"))
	total := planner.Count(ix, planner.Filter{})
	mid := object.Position{Cluster: "c1", Namespace: "ns-2"}
	tests := []struct {
		name       string
		f          planner.Filter
		after      *object.Position
		limit      int
		wantCount  int
		maxVisited int
		minVisited int
	}{
		{"label", planner.Filter{Selector: indextest.MustSelector(t, "rare=yes")}, nil, 0, 3, 3, 0},
		{"label exists", planner.Filter{Selector: indextest.MustSelector(t, "rare")}, nil, 0, 3, 3, 0},
		{"owner", planner.Filter{OwnerUID: "rs-1"}, nil, 0, 3, 3, 0},
		{"owner and other constraints", planner.Filter{OwnerUID: "rs-1", Kinds: []string{"Pod"}, Selector: indextest.MustSelector(t, "tier!=q")}, nil, 0, 3, 3, 0},
		{"cluster", planner.Filter{Clusters: []string{"small"}}, nil, 0, 2, 2, 0},
		{"kind", planner.Filter{Kinds: []string{"Deployment"}}, nil, 0, 1, 1, 0},
		{"resource", planner.Filter{Resources: []string{"configmaps"}}, nil, 0, 2, 2, 0},
		{"cluster and namespace", planner.Filter{Clusters: []string{"c2"}, Namespaces: []string{"ns-4"}}, nil, 0, 250, 250, 0},
		// app=web-3 has 400 objects, the namespace 1000: the plan visits
		// app=web-3 inside the namespace only, 40 objects.
		{"namespace and label", planner.Filter{Namespaces: []string{"ns-4"}, Selector: indextest.MustSelector(t, "app=web-3,tier in (fe,be)")}, nil, 0, 16, 40, 0},
		{"page from a cursor", planner.Filter{Namespaces: []string{"ns-4"}, Selector: indextest.MustSelector(t, "app=web-3")}, &mid, 5, 5, 6, 0},
		{"page of a label from a cursor", planner.Filter{Selector: indextest.MustSelector(t, "app=web-3")}, &mid, 5, 5, 6, 0},
		{"cluster and label", planner.Filter{Clusters: []string{"c3"}, Selector: indextest.MustSelector(t, "app=web-7")}, nil, 0, 100, 100, 0},
		{"not narrowing", planner.Filter{NameContains: "p-00"}, nil, 0, 400, total, total},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := ix.Scanned()
			page := planner.List(ix, tt.f, tt.after, tt.limit)
			visited := int(ix.Scanned() - before)
			if len(page.Objects) != tt.wantCount {
				t.Errorf("%d objects, want %d", len(page.Objects), tt.wantCount)
			}
			if visited > tt.maxVisited || visited < tt.minVisited {
				t.Errorf("visited %d objects, want %d to %d", visited, tt.minVisited, tt.maxVisited)
			}
		})
	}
}
