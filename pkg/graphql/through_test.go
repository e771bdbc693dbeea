package graphql

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/fleetcache/fleetcache/pkg/authn"
	"github.com/fleetcache/fleetcache/pkg/authz"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/views"
	"github.com/fleetcache/fleetcache/pkg/openapi"
)

// clusterScopesAuthorizer lets a caller list what its Extra "scopes"
// name: "pods" in every cluster, "c2/nodes" in one.
type clusterScopesAuthorizer struct{}

func (clusterScopesAuthorizer) allowed(u *authn.User, cluster, resource string) bool {
	return slices.Contains(u.Extra["scopes"], resource) || slices.Contains(u.Extra["scopes"], cluster+"/"+resource)
}

func (a clusterScopesAuthorizer) Scope(_ context.Context, u *authn.User, contents []views.Contents, _ authz.NamespaceLister) authz.Scope {
	s := authz.Scope{Full: true}
	for _, c := range contents {
		for _, r := range c.Resources {
			if a.allowed(u, c.Cluster, r.Resource) {
				s.Grants = append(s.Grants, authz.Grant{Cluster: c.Cluster, Resource: r.Resource})
			} else {
				s.Full = false
			}
		}
	}
	return s
}

func (a clusterScopesAuthorizer) Visible(_ context.Context, u *authn.User, cluster, _, resource string) (bool, time.Duration, error) {
	return a.allowed(u, cluster, resource), time.Minute, nil
}

var throughKinds = map[string]relKind{
	"Pod":        relKinds["Pod"],
	"Node":       relKinds["Node"],
	"Service":    relKinds["Service"],
	"Deployment": relKinds["Deployment"],
	"ReplicaSet": relKinds["ReplicaSet"],
	"Job":        {"batch", "Job", "jobs.batch", true},
	"CronJob":    {"batch", "CronJob", "cronjobs.batch", true},
}

// throughFixture is a fleet of two clusters whose Nodes share names but
// not labels, with Pods of Deployments (through ReplicaSets), of a Job, of
// a CronJob (through its Job) and one of nobody.
type throughFixture struct {
	ix    *index.Index
	s     *Server
	types map[string]*object.Type
}

func newThroughFixture(t testing.TB) *throughFixture {
	t.Helper()
	f := &throughFixture{ix: index.New(index.Options{}), types: map[string]*object.Type{}}
	var kinds []openapi.Kind
	for name, k := range throughKinds {
		f.types[name] = k.typ()
		kinds = append(kinds, k.openapiKind(t))
	}
	f.s = newServer(t, f.ix, newFixture(t).tracker, Options{Kinds: staticKinds{&openapi.Snapshot{Kinds: kinds}}, Authorizer: clusterScopesAuthorizer{}})
	for _, c := range []string{"c1", "c2"} {
		zone := map[string][2]string{"c1": {"a", "b"}, "c2": {"b", "a"}}[c]
		f.put(t, c, "Node", "", "n1", "zone="+zone[0], "", "")
		f.put(t, c, "Node", "", "n2", "zone="+zone[1], "", "")
		f.put(t, c, "Deployment", "a", "web", "tier=fe", "", "")
		f.put(t, c, "ReplicaSet", "a", "web-1", "", "Deployment/web", "")
		f.put(t, c, "Pod", "a", "web-1-x", "app=web", "ReplicaSet/web-1", "n1")
		f.put(t, c, "Pod", "a", "web-1-y", "app=web", "ReplicaSet/web-1", "n2")
	}
	f.put(t, "c1", "Node", "", "n3", "zone=a,pool=gpu", "", "")
	f.put(t, "c1", "Deployment", "a", "api", "tier=be", "", "")
	f.put(t, "c1", "ReplicaSet", "a", "api-1", "", "Deployment/api", "")
	f.put(t, "c1", "Pod", "a", "api-1-x", "app=api", "ReplicaSet/api-1", "n3")
	f.put(t, "c1", "Job", "b", "batch", "tier=fe", "", "")
	f.put(t, "c1", "Pod", "b", "batch-x", "app=batch", "Job/batch", "n1")
	f.put(t, "c1", "CronJob", "b", "nightly", "tier=ops", "", "")
	f.put(t, "c1", "Job", "b", "nightly-1", "", "CronJob/nightly", "")
	f.put(t, "c1", "Pod", "b", "nightly-1-x", "app=nightly", "Job/nightly-1", "n2")
	f.put(t, "c1", "Pod", "a", "lone", "app=web", "", "n1")
	f.put(t, "c1", "Pod", "a", "pending", "app=web", "", "")
	f.put(t, "c1", "Service", "a", "web", "tier=fe", "", "")
	if err := f.ix.Verify(); err != nil {
		t.Fatal(err)
	}
	return f
}

// put adds (or replaces) an object: its labels as a selector's text, its
// owner as "Kind/name" of its cluster and namespace, its node name.
func (f *throughFixture) put(t testing.TB, cluster, kind, namespace, name, lbls, owner, node string) {
	t.Helper()
	k := throughKinds[kind]
	apiVersion := "v1"
	if k.group != "" {
		apiVersion = k.group + "/v1"
	}
	set, err := labels.ConvertSelectorToLabelsMap(lbls)
	if err != nil {
		t.Fatal(err)
	}
	meta := map[string]any{"name": name, "uid": "u-" + cluster + "-" + kind + "-" + name, "labels": map[string]any{}, "resourceVersion": "1"}
	for k, v := range set {
		meta["labels"].(map[string]any)[k] = v
	}
	if namespace != "" {
		meta["namespace"] = namespace
	}
	if owner != "" {
		ok, on, _ := strings.Cut(owner, "/")
		meta["ownerReferences"] = []any{map[string]any{"apiVersion": "v1", "kind": ok, "name": on, "uid": "u-" + cluster + "-" + ok + "-" + on, "controller": true}}
	}
	u := unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": meta}}
	if node != "" {
		u.Object["spec"] = map[string]any{"nodeName": node}
	}
	o, err := object.NewObject(cluster, f.types[kind], &u)
	if err != nil {
		t.Fatal(err)
	}
	f.ix.Upsert(o)
}

// truth computes the answer of a filter through relations from the
// objects themselves: the keys (cluster/namespace/name) of the objects of
// kinds whose Node, or whose owner or owner's owner, matches, in their
// cluster; nodeSel or ownerSel "" does not constrain, ownerKinds nil is
// any kind.
func (f *throughFixture) truth(kinds []string, nodeSel, ownerSel string, ownerKinds []string) []string {
	return f.truthOf(func(o *object.Object) bool { return kinds == nil || slices.Contains(kinds, o.Type.Kind) }, nodeSel, ownerSel, ownerKinds)
}

// truthOf is truth of the objects target selects.
func (f *throughFixture) truthOf(target func(*object.Object) bool, nodeSel, ownerSel string, ownerKinds []string) []string {
	byUID := map[string]*object.Object{}
	var all []*object.Object
	f.ix.Read(func(r index.Reader) {
		r.Ascend(nil, func(o *object.Object, _ uint32) bool {
			byUID[o.Cluster+"/"+string(o.UID)] = o
			all = append(all, o)
			return true
		})
	})
	matches := func(o *object.Object, sel string) bool {
		s, _ := labels.Parse(sel)
		return s.Matches(labels.Set(o.Labels.Map()))
	}
	out := []string{}
	for _, o := range all {
		if !target(o) {
			continue
		}
		if nodeSel != "" {
			if o.Type.Kind != "Pod" {
				continue
			}
			var spec struct{ Spec struct{ NodeName string } }
			_ = json.Unmarshal(o.Raw(), &spec)
			found := false
			for _, n := range f.ix.Lookup(o.Cluster, "", spec.Spec.NodeName) {
				found = found || (n.Type.Kind == "Node" && matches(n, nodeSel))
			}
			if !found {
				continue
			}
		}
		if ownerSel != "" || ownerKinds != nil {
			found := false
			for _, ref := range o.Owners {
				owner := byUID[o.Cluster+"/"+string(ref.UID)]
				if owner == nil {
					continue
				}
				chain := []*object.Object{owner}
				for _, r2 := range owner.Owners {
					if oo := byUID[o.Cluster+"/"+string(r2.UID)]; oo != nil && (owner.Type.Kind == "ReplicaSet" || owner.Type.Kind == "Job") {
						chain = append(chain, oo)
					}
				}
				for _, c := range chain {
					found = found || ((ownerKinds == nil || slices.Contains(ownerKinds, c.Type.Kind)) && (ownerSel == "" || matches(c, ownerSel)))
				}
			}
			if !found {
				continue
			}
		}
		out = append(out, o.Cluster+"/"+o.Namespace+"/"+o.Name)
	}
	slices.Sort(out)
	return out
}

// throughPage is what the tests read of a connection.
type throughPage struct {
	TotalCount     int
	DeniedClusters []string
	PageInfo       struct {
		HasNextPage bool
		EndCursor   string
	}
	Edges []struct {
		Node struct{ Cluster, Namespace, Name string }
	}
}

func (p throughPage) keys() []string {
	out := []string{}
	for _, e := range p.Edges {
		out = append(out, e.Node.Cluster+"/"+e.Node.Namespace+"/"+e.Node.Name)
	}
	return out
}

var everyScope = []string{"pods", "nodes", "services", "deployments.apps", "replicasets.apps", "jobs.batch", "cronjobs.batch"}

// as returns the context of a caller with scopes (everyScope when nil).
func as(t testing.TB, scopes ...string) context.Context {
	if scopes == nil {
		scopes = everyScope
	}
	return authn.WithUser(t.Context(), &authn.User{Name: "alice", Extra: map[string][]string{"scopes": scopes}})
}

// page runs a query of one connection, field, with filter and more
// arguments, and returns its page; it fails the test on errors.
func (f *throughFixture) page(t testing.TB, ctx context.Context, field, filter, args string) throughPage {
	t.Helper()
	q := fmt.Sprintf(`{ c: %s(filter: %s%s) { totalCount deniedClusters pageInfo { hasNextPage endCursor } edges { node { cluster namespace name } } } }`, field, filter, args)
	res := f.s.Execute(ctx, Request{Query: q})
	if len(res.Errors) > 0 {
		t.Fatalf("%s: %s", q, mustJSON(t, res))
	}
	var out struct{ C throughPage }
	b, _ := json.Marshal(res.Data)
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out.C
}

// TestThrough checks filters through Nodes and owners against the truth
// computed from the objects: in resources and pods, counted, paged one
// object at a time, and sorted.
func TestThrough(t *testing.T) {
	f := newThroughFixture(t)
	workloads := []string{"Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "CronJob", "ReplicationController"}
	kinds := func(ks ...string) func(*object.Object) bool {
		return func(o *object.Object) bool { return slices.Contains(ks, o.Type.Kind) }
	}
	for _, tc := range []struct {
		name, filter string
		// target selects what the filter selects but its through (nil:
		// everything).
		target      func(*object.Object) bool
		node, owner string
		ownerKinds  []string
	}{
		{name: "nodes", filter: `{through: {nodes: {labelSelector: "zone=a"}}}`, node: "zone=a"},
		{name: "nodes of a label in one cluster only", filter: `{through: {nodes: {labelSelector: "pool=gpu"}}}`, node: "pool=gpu"},
		{name: "nodes with other filters", filter: `{namespaces: ["a"], labelSelector: "app=web", through: {nodes: {labelSelector: "zone=a"}}}`,
			target: func(o *object.Object) bool { v, _ := o.Labels.Lookup("app"); return o.Namespace == "a" && v == "web" }, node: "zone=a"},
		{name: "nodes of one cluster", filter: `{clusters: ["c2"], through: {nodes: {labelSelector: "zone=a"}}}`,
			target: func(o *object.Object) bool { return o.Cluster == "c2" }, node: "zone=a"},
		{name: "owners: Deployments", filter: `{through: {owners: {kinds: ["Deployment.apps"], labelSelector: "tier=fe"}}}`,
			owner: "tier=fe", ownerKinds: []string{"Deployment"}},
		{name: "owners: a CronJob through its Job", filter: `{through: {owners: {kinds: ["CronJob"]}}}`, ownerKinds: []string{"CronJob"}},
		{name: "owners of the workload kinds", filter: `{through: {owners: {labelSelector: "tier=fe"}}}`, owner: "tier=fe", ownerKinds: workloads},
		{name: "owners of a kind that is not a workload", filter: `{through: {owners: {kinds: ["Service"], labelSelector: "tier=fe"}}}`,
			owner: "tier=fe", ownerKinds: []string{"Service"}},
		{name: "owners and nodes", filter: `{through: {nodes: {labelSelector: "zone=b"}, owners: {labelSelector: "tier=fe"}}}`,
			node: "zone=b", owner: "tier=fe", ownerKinds: workloads},
		{name: "ReplicaSets through their Deployments", filter: `{kinds: ["ReplicaSet"], through: {owners: {kinds: ["Deployment.apps"], labelSelector: "tier"}}}`,
			target: kinds("ReplicaSet"), owner: "tier", ownerKinds: []string{"Deployment"}},
		{name: "nodes select Pods only", filter: `{kinds: ["ReplicaSet", "Pod"], through: {nodes: {labelSelector: "zone=a"}}}`,
			target: kinds("ReplicaSet", "Pod"), node: "zone=a"},
		{name: "no related object", filter: `{through: {nodes: {labelSelector: "zone=z"}}}`, node: "zone=z"},
		{name: "an empty through", filter: `{kinds: ["Job"], through: {}}`, target: kinds("Job")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target := tc.target
			if target == nil {
				target = func(*object.Object) bool { return true }
			}
			ctx := as(t)
			for _, field := range []string{"resources", "pods"} {
				want := f.truthOf(target, tc.node, tc.owner, tc.ownerKinds)
				if field == "pods" { // resources with kinds: ["Pod"]
					want = f.truthOf(func(o *object.Object) bool { return target(o) && o.Type.Kind == "Pod" }, tc.node, tc.owner, tc.ownerKinds)
				}
				p := f.page(t, ctx, field, tc.filter, ", first: 100")
				if diff := cmp.Diff(want, p.keys()); diff != "" {
					t.Errorf("%s (-truth +got):\n%s", field, diff)
				}
				if p.TotalCount != len(want) || len(p.DeniedClusters) != 0 {
					t.Errorf("%s: totalCount %d, deniedClusters %v; want %d, none", field, p.TotalCount, p.DeniedClusters, len(want))
				}
				// One at a time.
				paged := []string{}
				after := ""
				for range len(want) + 1 {
					p := f.page(t, ctx, field, tc.filter, ", first: 1"+after)
					paged = append(paged, p.keys()...)
					if !p.PageInfo.HasNextPage {
						break
					}
					after = fmt.Sprintf(", after: %q", p.PageInfo.EndCursor)
				}
				if diff := cmp.Diff(want, paged); diff != "" {
					t.Errorf("%s, paged (-truth +got):\n%s", field, diff)
				}
				// Sorted by name, descending, then by cluster.
				sorted := f.page(t, ctx, field, tc.filter, `, first: 100, sort: [{field: "metadata.name", order: DESC}, {field: "cluster"}]`)
				byName := slices.Clone(want)
				slices.SortFunc(byName, func(a, b string) int {
					ap, bp := strings.Split(a, "/"), strings.Split(b, "/")
					if c := strings.Compare(bp[2], ap[2]); c != 0 {
						return c
					}
					return strings.Compare(ap[0], bp[0])
				})
				if diff := cmp.Diff(byName, sorted.keys()); diff != "" {
					t.Errorf("%s, sorted (-want +got):\n%s", field, diff)
				}
			}
		})
	}
}

// TestThroughRights checks that the related objects consulted are those
// the caller may list, and that deniedClusters names the clusters where
// it may list none of a related kind.
func TestThroughRights(t *testing.T) {
	f := newThroughFixture(t)
	for _, tc := range []struct {
		name, filter string
		scopes       []string
		want         []string
		denied       []string
	}{
		{name: "nodes of one cluster", filter: `{through: {nodes: {labelSelector: "zone=a"}}}`,
			scopes: []string{"pods", "c1/nodes"}, want: []string{"c1/a/api-1-x", "c1/a/lone", "c1/a/web-1-x", "c1/b/batch-x"}, denied: []string{"c2"}},
		{name: "no nodes", filter: `{through: {nodes: {labelSelector: "zone=a"}}}`, scopes: []string{"pods"}, want: []string{}, denied: []string{"c1", "c2"}},
		{name: "Pods of one cluster: the other is not consulted", filter: `{through: {nodes: {labelSelector: "zone=a"}}}`,
			scopes: []string{"c2/pods", "c1/nodes"}, want: []string{}, denied: []string{"c2"}},
		{name: "Deployments without their ReplicaSets", filter: `{through: {owners: {kinds: ["Deployment.apps"]}}}`,
			scopes: []string{"pods", "deployments.apps"}, want: []string{}, denied: []string{"c1", "c2"}},
		{name: "Jobs, which need no hop", filter: `{through: {owners: {kinds: ["Job.batch"], labelSelector: "tier=fe"}}}`,
			scopes: []string{"pods", "jobs.batch"}, want: []string{"c1/b/batch-x"}},
		{name: "Jobs without CronJobs", filter: `{through: {owners: {kinds: ["Job.batch", "CronJob.batch"]}}}`,
			scopes: []string{"pods", "jobs.batch"}, want: []string{"c1/b/batch-x", "c1/b/nightly-1-x"}, denied: []string{"c1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := f.page(t, as(t, tc.scopes...), "resources", tc.filter, ", first: 100")
			if diff := cmp.Diff(tc.want, p.keys()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if p.TotalCount != len(tc.want) || !slices.Equal(p.DeniedClusters, tc.denied) {
				t.Errorf("totalCount %d, deniedClusters %v; want %d, %v", p.TotalCount, p.DeniedClusters, len(tc.want), tc.denied)
			}
		})
	}
}

// TestThroughChanges checks that a filter through Nodes follows the Nodes'
// labels and the Pods' nodes from one query to the next.
func TestThroughChanges(t *testing.T) {
	f := newThroughFixture(t)
	const filter = `{through: {nodes: {labelSelector: "zone=a"}}}`
	check := func(what string) {
		t.Helper()
		want := f.truth([]string{"Pod"}, "zone=a", "", nil)
		if got := f.page(t, as(t), "pods", filter, ", first: 100"); !cmp.Equal(want, got.keys()) || got.TotalCount != len(want) {
			t.Errorf("%s: got %v (%d), truth %v", what, got.keys(), got.TotalCount, want)
		}
	}
	check("at first")
	f.put(t, "c2", "Node", "", "n1", "zone=a", "", "")
	check("c2/n1 relabelled zone=a")
	f.put(t, "c1", "Pod", "a", "web-1-y", "app=web", "ReplicaSet/web-1", "n3")
	check("c1/web-1-y rescheduled to n3")
	f.put(t, "c1", "Deployment", "a", "web", "tier=be", "", "")
	want := f.truth([]string{"Pod"}, "", "tier=fe", []string{"Deployment"})
	if got := f.page(t, as(t), "pods", `{through: {owners: {kinds: ["Deployment.apps"], labelSelector: "tier=fe"}}}`, ", first: 100"); !cmp.Equal(want, got.keys()) {
		t.Errorf("c1/web relabelled tier=be: got %v, truth %v", got.keys(), want)
	}
}

// TestThroughRefused checks the clear errors: relations that are not
// cheap, a limit exceeded or out of bounds, nodes with kinds, and the
// streams that take no filter through relations.
func TestThroughRefused(t *testing.T) {
	f := newThroughFixture(t)
	for _, tc := range []struct{ name, query, code, message string }{
		{name: "services", query: `{ pods(filter: {through: {services: {labelSelector: "tier=fe"}}}) { totalCount } }`,
			code: CodeBadUserInput, message: "a filter through services is not answered: the Pods of many Services are a union of label selectors"},
		{name: "configMaps", query: `{ resources(filter: {through: {configMaps: {}}}) { totalCount } }`, code: CodeBadUserInput, message: "through configMaps is not answered"},
		{name: "secrets", query: `{ resources(filter: {through: {secrets: {}}}) { totalCount } }`, code: CodeBadUserInput, message: "through secrets is not answered"},
		{name: "over the limit", query: `{ pods(filter: {through: {nodes: {labelSelector: "zone", limit: 4}}}) { totalCount } }`,
			code: CodeBadUserInput, message: "the filter through nodes matches more than 4 objects (its limit)"},
		{name: "over the limit with the hops", query: `{ pods(filter: {through: {owners: {kinds: ["Deployment.apps"], limit: 3}}}) { totalCount } }`,
			code: CodeBadUserInput, message: "the filter through owners matches more than 3 objects with their ReplicaSets and Jobs"},
		{name: "limit out of bounds", query: `{ pods(filter: {through: {nodes: {limit: 0}}}) { totalCount } }`,
			code: CodeBadUserInput, message: "through nodes: limit must be between 1 and 10000, got 0"},
		{name: "nodes with kinds", query: `{ pods(filter: {through: {nodes: {kinds: ["Node"]}}}) { totalCount } }`,
			code: CodeBadUserInput, message: "kinds is for owners only"},
		{name: "a bad related selector", query: `{ pods(filter: {through: {nodes: {labelSelector: "zone in ("}}}) { totalCount } }`,
			code: CodeBadUserInput, message: "through nodes: invalid label selector"},
		{name: "changes", query: `{ changes(filter: {through: {nodes: {}}}) { edges { cursor } } }`,
			code: CodeBadUserInput, message: "is answered by resources, the kinds' root fields and facets, not by subscriptions or changes"},
		{name: "over the cost", query: `{ resources(first: 1000, filter: {through: {nodes: {limit: 9500}}}) { edges { cursor } } }`,
			code: CodeQueryTooComplex, message: "10,500 objects"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := f.s.Execute(as(t), Request{Query: tc.query})
			if len(res.Errors) == 0 {
				t.Fatalf("no error: %s", mustJSON(t, res))
			}
			e := res.Errors[0]
			if e.Extensions["code"] != tc.code || !strings.Contains(e.Message, tc.message) {
				t.Errorf("error %s %q; want %s containing %q", e.Extensions["code"], e.Message, tc.code, tc.message)
			}
		})
	}
	for _, field := range []string{"resourceEvents", "podEvents"} {
		sub, res := f.s.Subscribe(as(t), Request{Query: `subscription { ` + field + `(filter: {through: {nodes: {labelSelector: "zone=a"}}}) { type } }`})
		if sub != nil {
			sub.Close()
			t.Fatalf("%s with through: subscribed", field)
		}
		if len(res.Errors) == 0 || res.Errors[0].Extensions["code"] != CodeBadUserInput || !strings.Contains(res.Errors[0].Message, "not by subscriptions") {
			t.Errorf("%s with through: %s", field, mustJSON(t, res))
		}
	}
}

// TestThroughFacets checks facets through a relation.
func TestThroughFacets(t *testing.T) {
	f := newThroughFixture(t)
	res := f.s.Execute(as(t), Request{Query: `{ facets(by: CLUSTER, filter: {through: {nodes: {labelSelector: "zone=a"}}}) { value count } }`})
	got, _ := json.Marshal(res.Data)
	if want := `{"facets":[{"value":"c1","count":4},{"value":"c2","count":1}]}`; string(got) != want || len(res.Errors) > 0 {
		t.Errorf("facets %s %v, want %s", got, res.Errors, want)
	}
}
