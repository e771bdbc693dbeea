package index

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

func mustSelector(t testing.TB, s string) labels.Selector {
	t.Helper()
	sel, err := labels.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

// smallFleet is a two-cluster fleet; the comment lists it in index order.
func smallFleet() []*Object {
	return []*Object{
		obj("c1", nodeType, "", "n1", withLabels("zone", "a")),                                              // c1/nodes//n1
		obj("c1", podType, "default", "db-1", withLabels("app", "db")),                                      // c1/pods/default/db-1
		obj("c1", deployType, "default", "web", withLabels("app", "web")),                                   // c1/deployments.apps/default/web
		obj("c1", podType, "default", "web-1", withLabels("app", "web", "tier", "fe"), withOwner("rs-web")), // c1/pods/default/web-1
		obj("c1", podType, "default", "web-2", withLabels("app", "web", "tier", "be"), withOwner("rs-web")), // c1/pods/default/web-2
		obj("c1", rsType, "default", "web-abc", withLabels("app", "web", "pod-template-hash", "abc"), withOwner("deploy-web")),
		obj("c1", cmType, "prod", "config"),                                                              // c1/configmaps/prod/config
		obj("c1", podType, "prod", "web-1", withLabels("app", "web", "tier", "fe", "env", "prod")),       // c1/pods/prod/web-1
		obj("c2", nodeType, "", "n2", withLabels("zone", "b")),                                           // c2/nodes//n2
		obj("c2", podType, "default", "web-1", withLabels("app", "web", "tier", "fe")),                   // c2/pods/default/web-1
		obj("c2", fooPodsType, "default", "web-1", withLabels("app", "web")),                             // c2/pods.foo.example.com/default/web-1
		obj("c2", podType, "prod", "api-1", withLabels("app", "api", "tier", "be"), withOwner("rs-api")), // c2/pods/prod/api-1
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
	ix := New(Options{})
	for _, o := range smallFleet() {
		ix.Upsert(o)
	}
	if diff := cmp.Diff(all, keys(ix.List(Filter{}, nil, 0).Objects)); diff != "" {
		t.Fatalf("index order (-want +got):\n%s", diff)
	}
	sel := func(s string) labels.Selector { return mustSelector(t, s) }
	tests := []struct {
		name string
		f    Filter
		want []string
	}{
		{"everything", Filter{}, all},
		{"everything selector", Filter{Selector: labels.Everything()}, all},
		{"nothing selector", Filter{Selector: labels.Nothing()}, nil},
		{"cluster", Filter{Clusters: []string{"c2"}}, []string{n2, c2Web, c2Foo, api1}},
		{"clusters repeated", Filter{Clusters: []string{"c2", "c1", "c2"}}, all},
		{"unknown cluster", Filter{Clusters: []string{"c3"}}, nil},
		{"bare kind in every group", Filter{Kinds: []string{"Pod"}}, []string{db1, web1, web2, prodWeb, c2Web, c2Foo, api1}},
		{"kind with group", Filter{Kinds: []string{"Pod.foo.example.com"}}, []string{c2Foo}},
		{"kinds overlapping", Filter{Kinds: []string{"Pod.foo.example.com", "Pod"}}, []string{db1, web1, web2, prodWeb, c2Web, c2Foo, api1}},
		{"kinds", Filter{Kinds: []string{"Deployment.apps", "Node"}}, []string{n1, deploy, n2}},
		{"bare kind of a group", Filter{Kinds: []string{"Deployment"}}, []string{deploy}},
		{"unknown kind", Filter{Kinds: []string{"Secret"}}, nil},
		{"wrong group", Filter{Kinds: []string{"Deployment.extensions"}}, nil},
		{"resource", Filter{Resources: []string{"pods"}}, []string{db1, web1, web2, prodWeb, c2Web, api1}},
		{"resources", Filter{Resources: []string{"configmaps", "nodes"}}, []string{n1, config, n2}},
		{"namespace", Filter{Namespaces: []string{"prod"}}, []string{config, prodWeb, api1}},
		{"cluster scoped", Filter{Namespaces: []string{""}}, []string{n1, n2}},
		{"namespaces", Filter{Namespaces: []string{"prod", ""}}, []string{n1, config, prodWeb, n2, api1}},
		{"cluster and namespace", Filter{Clusters: []string{"c1"}, Namespaces: []string{"prod"}}, []string{config, prodWeb}},
		{"label =", Filter{Selector: sel("app=web")}, []string{deploy, web1, web2, rs, prodWeb, c2Web, c2Foo}},
		{"label ==", Filter{Selector: sel("app==web")}, []string{deploy, web1, web2, rs, prodWeb, c2Web, c2Foo}},
		{"label in", Filter{Selector: sel("tier in (fe,be)")}, []string{web1, web2, prodWeb, c2Web, api1}},
		{"label in unknown value", Filter{Selector: sel("tier in (x,be)")}, []string{web2, api1}},
		{"label notin", Filter{Selector: sel("tier notin (fe)")}, []string{n1, db1, deploy, web2, rs, config, n2, c2Foo, api1}},
		{"label exists", Filter{Selector: sel("tier")}, []string{web1, web2, prodWeb, c2Web, api1}},
		{"label does not exist", Filter{Selector: sel("!tier")}, []string{n1, db1, deploy, rs, config, n2, c2Foo}},
		{"label !=", Filter{Selector: sel("app!=web")}, []string{n1, db1, config, n2, api1}},
		{"label requirements", Filter{Selector: sel("app=web,tier!=fe")}, []string{deploy, web2, rs, c2Foo}},
		{"label requirements narrowing twice", Filter{Selector: sel("app=web,tier in (fe),env")}, []string{prodWeb}},
		{"unknown label", Filter{Selector: sel("app=nope")}, nil},
		{"unknown label key", Filter{Selector: sel("nope")}, nil},
		{"label exists and notin", Filter{Selector: sel("zone,app notin (x)")}, []string{n1, n2}},
		{"name", Filter{NameContains: "web-1"}, []string{web1, prodWeb, c2Web, c2Foo}},
		{"owner", Filter{OwnerUID: "rs-web"}, []string{web1, web2}},
		{"unknown owner", Filter{OwnerUID: "nope"}, nil},
		{"combined", Filter{Clusters: []string{"c1"}, Namespaces: []string{"default"}, Kinds: []string{"Pod"}, Selector: sel("tier in (fe,be)")}, []string{web1, web2}},
		{"namespace, kind and label", Filter{Namespaces: []string{"default"}, Kinds: []string{"Pod"}, Selector: sel("app=web")}, []string{web1, web2, c2Web, c2Foo}},
		{"resource and owner", Filter{Resources: []string{"pods"}, OwnerUID: "rs-api"}, []string{api1}},
		{"cluster and resource", Filter{Clusters: []string{"c2"}, Resources: []string{"pods", "nodes"}}, []string{n2, c2Web, api1}},
		{"disjoint", Filter{Clusters: []string{"c2"}, OwnerUID: "rs-web"}, nil},
		{"name and namespace", Filter{Namespaces: []string{"default"}, NameContains: "web"}, []string{deploy, web1, web2, rs, c2Web, c2Foo}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page := ix.List(tt.f, nil, 0)
			if diff := cmp.Diff(tt.want, keys(page.Objects), cmpSorted[1]); diff != "" {
				t.Errorf("List (-want +got):\n%s", diff)
			}
			if page.More || page.Revision != ix.Revision() {
				t.Errorf("page More=%v Revision=%d", page.More, page.Revision)
			}
			if got := ix.Count(tt.f); got != len(tt.want) {
				t.Errorf("Count = %d, want %d", got, len(tt.want))
			}
			for _, limit := range []int{1, 2, 5} {
				if diff := cmp.Diff(tt.want, keys(listAll(t, ix, tt.f, limit, nil)), cmpSorted[1]); diff != "" {
					t.Errorf("pages of %d (-want +got):\n%s", limit, diff)
				}
			}
		})
	}
}

// listAll pages through the filter's objects with pages of limit, calling
// between(i) after page i if not nil, and checks each page's More.
func listAll(t testing.TB, ix *Index, f Filter, limit int, between func(int)) []*Object {
	t.Helper()
	var out []*Object
	var after *Position
	for i := 0; ; i++ {
		page := ix.List(f, after, limit)
		out = append(out, page.Objects...)
		if !page.More {
			return out
		}
		if len(page.Objects) != limit {
			t.Fatalf("page %d has %d objects and More", i, len(page.Objects))
		}
		p := page.Objects[len(page.Objects)-1].Position()
		after = &p
		if between != nil {
			between(i)
		}
	}
}

func TestListAfter(t *testing.T) {
	ix := New(Options{})
	for _, o := range smallFleet() {
		ix.Upsert(o)
	}
	tests := []struct {
		name  string
		f     Filter
		after Position
		limit int
		want  []string
		more  bool
	}{
		{"after an object", Filter{}, Position{"c1", "prod", "config", "ConfigMap", "configmaps"}, 2, []string{"c1/pods/prod/web-1", "c2/nodes//n2"}, true},
		{"after a gap", Filter{}, Position{"c1", "prod", "d", "", ""}, 0, []string{"c1/pods/prod/web-1", "c2/nodes//n2", "c2/pods/default/web-1", "c2/pods.foo.example.com/default/web-1", "c2/pods/prod/api-1"}, false},
		{"between kinds of one name", Filter{}, Position{"c2", "default", "web-1", "Pod", "pods"}, 1, []string{"c2/pods.foo.example.com/default/web-1"}, true},
		{"last page exactly full", Filter{Clusters: []string{"c2"}}, Position{"c2", "default", "web-1", "Pod", "pods"}, 2, []string{"c2/pods.foo.example.com/default/web-1", "c2/pods/prod/api-1"}, false},
		{"past the end", Filter{}, Position{"c3", "", "", "", ""}, 0, nil, false},
		{"scope ranges before the cursor", Filter{Namespaces: []string{"default"}}, Position{"c1", "zzz", "", "", ""}, 0, []string{"c2/pods/default/web-1", "c2/pods.foo.example.com/default/web-1"}, false},
		{"posting with scope", Filter{Namespaces: []string{"default", "prod"}, Selector: mustSelector(t, "app=web")}, Position{"c1", "default", "web-1", "Pod", "pods"}, 3, []string{"c1/pods/default/web-2", "c1/replicasets.apps/default/web-abc", "c1/pods/prod/web-1"}, true},
		{"several postings", Filter{Selector: mustSelector(t, "tier in (be,fe)")}, Position{"c1", "default", "web-1", "Pod", "pods"}, 2, []string{"c1/pods/default/web-2", "c1/pods/prod/web-1"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page := ix.List(tt.f, &tt.after, tt.limit)
			if diff := cmp.Diff(tt.want, keys(page.Objects), cmpSorted[1]); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if page.More != tt.more {
				t.Errorf("More = %v, want %v", page.More, tt.more)
			}
		})
	}
}

// refMatches is a straightforward reading of the Filter documentation.
func refMatches(f Filter, o *Object) bool {
	in := func(vs []string, v string) bool { return len(vs) == 0 || slices.Contains(vs, v) }
	kindOK := len(f.Kinds) == 0
	for _, k := range f.Kinds {
		if k == o.Type.Kind || k == o.Type.KindName() {
			kindOK = true
		}
	}
	ownerOK := f.OwnerUID == ""
	for _, r := range o.Owners {
		ownerOK = ownerOK || r.UID == f.OwnerUID
	}
	return in(f.Clusters, o.Cluster) && in(f.Namespaces, o.Namespace) && in(f.Resources, o.Type.Resource) &&
		kindOK && ownerOK && (f.Selector == nil || f.Selector.Matches(labels.Set(o.Labels.Map()))) &&
		(f.NameContains == "" || strings.Contains(o.Name, f.NameContains)) &&
		f.Fields.Matches(o.Cluster, o.Raw())
}

// randomFleet returns n objects with random placement, kinds, labels and
// owners drawn from small pools, so that filters both hit and miss.
func randomFleet(r *rand.Rand, n int) []*Object {
	typesPool := []*Type{podType, cmType, deployType, rsType, nodeType, fooPodsType}
	seen := map[Key]bool{}
	var out []*Object
	for len(out) < n {
		t := typesPool[r.IntN(len(typesPool))]
		ns := ""
		if t.Namespaced {
			ns = fmt.Sprintf("ns-%d", r.IntN(6))
		}
		o := obj(fmt.Sprintf("c%d", r.IntN(4)), t, ns, fmt.Sprintf("o-%d", r.IntN(n)))
		if seen[o.Key()] {
			continue
		}
		seen[o.Key()] = true
		var kv []string
		if r.IntN(4) > 0 {
			kv = append(kv, "app", fmt.Sprintf("app-%d", r.IntN(8)))
		}
		if r.IntN(2) > 0 {
			kv = append(kv, "tier", []string{"fe", "be", "db"}[r.IntN(3)])
		}
		if r.IntN(5) == 0 {
			kv = append(kv, "hash", fmt.Sprintf("h%d", r.IntN(50)))
		}
		withLabels(kv...)(o)
		if r.IntN(3) == 0 {
			withOwner(fmt.Sprintf("owner-%d", r.IntN(20)))(o)
		}
		if r.IntN(4) > 0 {
			withPodStatus([]string{"Running", "Pending", "Failed"}[r.IntN(3)], fmt.Sprintf("node-%d", r.IntN(5)), r.IntN(6),
				[]string{"nginx", "redis", "envoy"}[:1+r.IntN(3)]...)(o)
		}
		out = append(out, o)
	}
	return out
}

// randomFilter draws a filter constraining a few random dimensions.
func randomFilter(t testing.TB, r *rand.Rand) Filter {
	var f Filter
	pick := func(pool ...string) []string {
		var out []string
		for range 1 + r.IntN(2) {
			out = append(out, pool[r.IntN(len(pool))])
		}
		return out
	}
	for range 1 + r.IntN(3) {
		switch r.IntN(8) {
		case 0:
			f.Clusters = pick("c0", "c1", "c2", "c3", "c9")
		case 1:
			f.Kinds = pick("Pod", "ConfigMap", "Deployment.apps", "ReplicaSet", "Pod.foo.example.com", "Node", "Nope")
		case 2:
			f.Resources = pick("pods", "configmaps", "deployments.apps", "nodes", "nope")
		case 3:
			f.Namespaces = pick("", "ns-0", "ns-1", "ns-2", "ns-3", "ns-9")
		case 4:
			f.Selector = mustSelector(t, []string{
				"app=app-1", "app in (app-2,app-3)", "tier", "!tier", "tier notin (fe)", "app!=app-1",
				"app=app-1,tier in (fe,be)", "hash", "hash=h3", "app,tier=db", "tier=fe,hash notin (h1)",
			}[r.IntN(11)])
		case 5:
			f.NameContains = fmt.Sprintf("o-%d", r.IntN(20))
		case 6:
			f.OwnerUID = types.UID(fmt.Sprintf("owner-%d", r.IntN(22)))
		case 7:
			f.Fields = mustFields(t, []string{
				"status.phase=Running", "status.phase!=Running", "spec.nodeName in (node-1,node-2)", "!spec.nodeName",
				"spec.containers[].image=redis", "spec.containers[].image notin (redis,envoy)", "status.restarts>3",
				"cluster=c1", "cluster in (c2,c9),status.phase=Failed", "cluster notin (c1)", "cluster=c9", "status.restarts<1",
			}[r.IntN(12)])
		}
	}
	return f
}

// TestFiltersAgainstReference compares List, Count and paging with a brute
// force evaluation of random filters over a random fleet.
func TestFiltersAgainstReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	fleet := randomFleet(r, 3000)
	ix := New(Options{})
	for _, o := range fleet {
		ix.Upsert(o)
	}
	sorted := slices.Clone(fleet)
	slices.SortFunc(sorted, compareObjects)
	for i := range 300 {
		f := randomFilter(t, r)
		var want []*Object
		for _, o := range sorted {
			if refMatches(f, o) {
				want = append(want, o)
			}
		}
		name := fmt.Sprintf("%d/%+v", i, f)
		if diff := cmp.Diff(keys(want), keys(ix.List(f, nil, 0).Objects), cmpSorted[1]); diff != "" {
			t.Fatalf("%s: List (-want +got):\n%s", name, diff)
		}
		if got := ix.Count(f); got != len(want) {
			t.Fatalf("%s: Count = %d, want %d", name, got, len(want))
		}
		limit := 1 + r.IntN(40)
		if diff := cmp.Diff(keys(want), keys(listAll(t, ix, f, limit, nil)), cmpSorted[1]); diff != "" {
			t.Fatalf("%s: pages of %d (-want +got):\n%s", name, limit, diff)
		}
	}
}

// TestNarrowFiltersDoNotScan checks with the visit counter that a narrow
// filter visits only its smallest candidate set.
func TestNarrowFiltersDoNotScan(t *testing.T) {
	ix := New(Options{})
	// 4 clusters x 10 namespaces x 250 objects; in each namespace, 1 in 25
	// objects has app=web-3, and 1 in 5 of those has tier=fe.
	for c := range 4 {
		for ns := range 10 {
			for i := range 250 {
				kv := []string{"app", fmt.Sprintf("web-%d", i%25), "tier", []string{"fe", "be", "x", "y", "z"}[i/25%5]}
				o := obj(fmt.Sprintf("c%d", c), podType, fmt.Sprintf("ns-%d", ns), fmt.Sprintf("p-%03d", i), withLabels(kv...))
				if i < 3 && ns == 0 && c == 0 {
					withOwner("rs-1")(o)
					withLabels(append(kv, "rare", "yes")...)(o)
				}
				ix.Upsert(o)
			}
		}
	}
	ix.Upsert(obj("small", cmType, "ns-0", "a"))
	ix.Upsert(obj("small", cmType, "ns-0", "b"))
	ix.Upsert(obj("c1", deployType, "ns-0", "d"))
	total := ix.Count(Filter{})
	mid := Position{Cluster: "c1", Namespace: "ns-2"}
	tests := []struct {
		name       string
		f          Filter
		after      *Position
		limit      int
		wantCount  int
		maxVisited int
		minVisited int
	}{
		{"label", Filter{Selector: mustSelector(t, "rare=yes")}, nil, 0, 3, 3, 0},
		{"label exists", Filter{Selector: mustSelector(t, "rare")}, nil, 0, 3, 3, 0},
		{"owner", Filter{OwnerUID: "rs-1"}, nil, 0, 3, 3, 0},
		{"owner and other constraints", Filter{OwnerUID: "rs-1", Kinds: []string{"Pod"}, Selector: mustSelector(t, "tier!=q")}, nil, 0, 3, 3, 0},
		{"cluster", Filter{Clusters: []string{"small"}}, nil, 0, 2, 2, 0},
		{"kind", Filter{Kinds: []string{"Deployment"}}, nil, 0, 1, 1, 0},
		{"resource", Filter{Resources: []string{"configmaps"}}, nil, 0, 2, 2, 0},
		{"cluster and namespace", Filter{Clusters: []string{"c2"}, Namespaces: []string{"ns-4"}}, nil, 0, 250, 250, 0},
		// app=web-3 has 400 objects, the namespace 1000: the plan visits
		// app=web-3 inside the namespace only, 40 objects.
		{"namespace and label", Filter{Namespaces: []string{"ns-4"}, Selector: mustSelector(t, "app=web-3,tier in (fe,be)")}, nil, 0, 16, 40, 0},
		{"page from a cursor", Filter{Namespaces: []string{"ns-4"}, Selector: mustSelector(t, "app=web-3")}, &mid, 5, 5, 6, 0},
		{"page of a label from a cursor", Filter{Selector: mustSelector(t, "app=web-3")}, &mid, 5, 5, 6, 0},
		{"cluster and label", Filter{Clusters: []string{"c3"}, Selector: mustSelector(t, "app=web-7")}, nil, 0, 100, 100, 0},
		{"not narrowing", Filter{NameContains: "p-00"}, nil, 0, 400, total, total},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := ix.scanned.Load()
			page := ix.List(tt.f, tt.after, tt.limit)
			visited := int(ix.scanned.Load() - before)
			if len(page.Objects) != tt.wantCount {
				t.Errorf("%d objects, want %d", len(page.Objects), tt.wantCount)
			}
			if visited > tt.maxVisited || visited < tt.minVisited {
				t.Errorf("visited %d objects, want %d to %d", visited, tt.minVisited, tt.maxVisited)
			}
		})
	}
}
