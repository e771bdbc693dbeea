package authz

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetcache/fleetcache/pkg/authn"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
	"github.com/fleetcache/fleetcache/pkg/index/views"
)

// fakeDecider allows what its set holds and counts the questions.
type fakeDecider struct {
	mu      sync.Mutex
	allow   map[Attributes]bool
	fail    map[string]bool // clusters whose decisions fail
	decided int
}

func (f *fakeDecider) Decide(_ context.Context, _ *authn.User, a Attributes) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.decided++
	if f.fail[a.Cluster] {
		return false, fmt.Errorf("cluster %s unreachable", a.Cluster)
	}
	return f.allow[a], nil
}

var contents = []views.Contents{
	{Cluster: "c1", Resources: []views.ResourceContents{{Resource: "configmaps", Namespaced: true}, {Resource: "nodes"}, {Resource: "pods", Namespaced: true}}, Namespaces: []string{"a", "b"}},
	{Cluster: "c2", Resources: []views.ResourceContents{{Resource: "configmaps", Namespaced: true}}, Namespaces: []string{"a"}},
	{Cluster: "c3", Resources: []views.ResourceContents{{Resource: "pods", Namespaced: true}}, Namespaces: []string{"a"}},
}

func TestScope(t *testing.T) {
	d := &fakeDecider{
		allow: map[Attributes]bool{
			{Cluster: "c1", Namespace: "a", Resource: "configmaps"}: true,
			{Cluster: "c1", Resource: "pods"}:                       true,
			{Cluster: "c2", Namespace: "a", Resource: "configmaps"}: true,
		},
		fail: map[string]bool{"c3": true},
	}
	now := time.Unix(0, 0)
	az := New(d, Options{TTL: time.Minute, Now: func() time.Time { return now }})
	u := &authn.User{Name: "alice"}
	s := az.Scope(t.Context(), u, contents, noLister{t})
	want := []Grant{
		{Cluster: "c1", Resource: "configmaps", Namespaces: []string{"a"}},
		{Cluster: "c1", Resource: "pods"},
		{Cluster: "c2", Resource: "configmaps", Namespaces: []string{"a"}},
	}
	if diff := cmp.Diff(want, s.Grants); diff != "" {
		t.Errorf("grants (-want +got):\n%s", diff)
	}
	if s.Full || !cmp.Equal(s.DeniedClusters(), []string{"c3"}) || s.Err() == nil {
		t.Errorf("Full %v, denied %v (%v): want not full, c3 denied", s.Full, s.DeniedClusters(), s.Err())
	}

	// Filters: granted resources and namespaces only; clusters with the
	// same grants share a filter.
	f := planner.Filter{Kinds: []string{"ConfigMap", "Pod"}, NameContains: "x"}
	got := s.Filters(f)
	wantFilters := []planner.Filter{
		{Clusters: []string{"c1"}, Resources: []string{"pods"}, Kinds: f.Kinds, NameContains: "x"},
		{Clusters: []string{"c1", "c2"}, Namespaces: []string{"a"}, Resources: []string{"configmaps"}, Kinds: f.Kinds, NameContains: "x"},
	}
	if diff := cmp.Diff(wantFilters, got); diff != "" {
		t.Errorf("filters (-want +got):\n%s", diff)
	}
	if got := s.Filters(planner.Filter{Namespaces: []string{"b"}}); len(got) != 1 || got[0].Resources[0] != "pods" {
		t.Errorf("filters of namespace b: %+v, want c1 pods only", got)
	}

	// Answers are cached, failures are not.
	before := d.decided
	az.Scope(t.Context(), u, contents, noLister{t})
	if n := d.decided - before; n != 1 {
		t.Errorf("second scope asked %d questions, want 1 (c3's failure again)", n)
	}
	now = now.Add(2 * time.Minute)
	before = d.decided
	az.Scope(t.Context(), u, contents, noLister{t})
	if d.decided-before < 5 {
		t.Errorf("after the TTL only %d questions, want them asked again", d.decided-before)
	}
}

// noLister fails the test if Scope lists namespaces it was given.
type noLister struct{ t *testing.T }

func (l noLister) Namespaces(cluster string) []string {
	l.t.Errorf("namespaces of %s listed, though contents named them", cluster)
	return nil
}

// lister lists namespaces from a map and counts the calls.
type lister struct {
	namespaces map[string][]string
	calls      int
}

func (l *lister) Namespaces(cluster string) []string { l.calls++; return l.namespaces[cluster] }

// TestScopeListsNamespacesOnlyWhenNeeded: a contents without namespaces
// (the filter named none) has them listed for denied types only.
func TestScopeListsNamespacesOnlyWhenNeeded(t *testing.T) {
	d := &fakeDecider{allow: map[Attributes]bool{
		{Cluster: "c1", Resource: "pods"}:                       true,
		{Cluster: "c2", Namespace: "y", Resource: "configmaps"}: true,
	}}
	l := &lister{namespaces: map[string][]string{"c1": {"a"}, "c2": {"x", "y"}}}
	cs := []views.Contents{
		{Cluster: "c1", Resources: []views.ResourceContents{{Resource: "pods", Namespaced: true}}},
		{Cluster: "c2", Resources: []views.ResourceContents{{Resource: "configmaps", Namespaced: true}}},
	}
	s := New(d, Options{}).Scope(t.Context(), &authn.User{Name: "u"}, cs, l)
	want := []Grant{{Cluster: "c1", Resource: "pods"}, {Cluster: "c2", Resource: "configmaps", Namespaces: []string{"y"}}}
	if diff := cmp.Diff(want, s.Grants); diff != "" || l.calls != 1 {
		t.Errorf("%d listings (want 1, for c2); grants (-want +got):\n%s", l.calls, diff)
	}
}

func TestScopeFull(t *testing.T) {
	d := &fakeDecider{allow: map[Attributes]bool{}}
	for _, c := range contents {
		for _, r := range c.Resources {
			d.allow[Attributes{Cluster: c.Cluster, Resource: r.Resource}] = true
		}
	}
	s := New(d, Options{}).Scope(t.Context(), &authn.User{Name: "admin"}, contents, noLister{t})
	want := []planner.Filter{
		{Clusters: []string{"c1"}, Resources: []string{"configmaps", "nodes", "pods"}},
		{Clusters: []string{"c2"}, Resources: []string{"configmaps"}},
		{Clusters: []string{"c3"}, Resources: []string{"pods"}},
	}
	if diff := cmp.Diff(want, s.Filters(planner.Filter{})); !s.Full || diff != "" {
		t.Errorf("Full %v; filters (-want +got):\n%s", s.Full, diff)
	}
	same := []views.Contents{contents[0], {Cluster: "c4", Resources: contents[0].Resources, Namespaces: []string{"z"}}}
	for _, c := range same {
		for _, r := range c.Resources {
			d.allow[Attributes{Cluster: c.Cluster, Resource: r.Resource}] = true
		}
	}
	s = New(d, Options{}).Scope(t.Context(), &authn.User{Name: "admin"}, same, noLister{t})
	if got := s.Filters(planner.Filter{}); len(got) != 1 || !cmp.Equal(got[0].Clusters, []string{"c1", "c4"}) {
		t.Errorf("clusters with the same grants: %+v, want one filter", got)
	}
}

func TestVisible(t *testing.T) {
	d := &fakeDecider{allow: map[Attributes]bool{{Cluster: "c1", Namespace: "a", Resource: "pods"}: true}, fail: map[string]bool{"c9": true}}
	now := time.Now()
	az := New(d, Options{TTL: time.Minute, Now: func() time.Time { return now }})
	u := &authn.User{Name: "u"}
	for _, tt := range []struct {
		cluster, ns string
		want        bool
		wantErr     bool
	}{
		{"c1", "a", true, false},
		{"c1", "b", false, false},
		{"c1", "", false, false},
		{"c9", "a", false, true},
	} {
		got, left, err := az.Visible(t.Context(), u, tt.cluster, tt.ns, "pods")
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("Visible(%s, %s) = %v, %v; want %v, error %v", tt.cluster, tt.ns, got, err, tt.want, tt.wantErr)
		}
		if wantLeft := time.Minute * time.Duration(btoi(err == nil)); left != wantLeft {
			t.Errorf("Visible(%s, %s) holds for %v, want %v", tt.cluster, tt.ns, left, wantLeft)
		}
	}
	// Cached decisions hold for what is left of them: the shortest of the
	// two an answer rests on.
	now = now.Add(20 * time.Second)
	if _, left, _ := az.Visible(t.Context(), u, "c1", "a", "pods"); left != 40*time.Second {
		t.Errorf("a cached answer holds for %v, want 40s", left)
	}
	now = now.Add(30 * time.Second)
	az.cache.Add(cacheKey(u, Attributes{Cluster: "c1", Namespace: "a", Resource: "pods"}), true) // renewed
	if ok, left, _ := az.Visible(t.Context(), u, "c1", "a", "pods"); !ok || left != 10*time.Second {
		t.Errorf("an answer on a renewed and an older decision: %v for %v, want true for 10s", ok, left)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestPolicy(t *testing.T) {
	p, err := NewPolicy([]Rule{
		{Groups: []string{"team-a"}, Clusters: []string{"c1", "c2"}, Namespaces: []string{"team-a"}, Resources: []string{"configmaps"}},
		{Users: []string{"bob"}, Clusters: []string{"c3"}, Resources: []string{"pods"}},
		{Groups: []string{"ops"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	alice := &authn.User{Name: "alice", Groups: []string{"team-a"}}
	bob := &authn.User{Name: "bob"}
	ops := &authn.User{Name: "olga", Groups: []string{"x", "ops"}}
	for _, tt := range []struct {
		u    *authn.User
		a    Attributes
		want bool
	}{
		{alice, Attributes{Cluster: "c1", Namespace: "team-a", Resource: "configmaps", Verb: ""}, true},
		{alice, Attributes{Cluster: "c1", Namespace: "", Resource: "configmaps", Verb: ""}, false}, // namespaced rule: not cluster-wide
		{alice, Attributes{Cluster: "c3", Namespace: "team-a", Resource: "configmaps", Verb: ""}, false},
		{alice, Attributes{Cluster: "c1", Namespace: "team-a", Resource: "pods", Verb: ""}, false},
		{bob, Attributes{Cluster: "c3", Namespace: "", Resource: "pods", Verb: ""}, true},
		{bob, Attributes{Cluster: "c3", Namespace: "x", Resource: "pods", Verb: ""}, true},
		{bob, Attributes{Cluster: "c1", Namespace: "", Resource: "pods", Verb: ""}, false},
		{ops, Attributes{Cluster: "any", Namespace: "", Resource: "secrets", Verb: ""}, true},
		{bob, Attributes{Cluster: "c3", Namespace: "", Resource: "pods", Verb: "watch"}, true},
		{bob, Attributes{Cluster: "c3", Namespace: "x", Resource: "pods", Verb: "get"}, true},
		{bob, Attributes{Cluster: "c3", Namespace: "x", Resource: "pods", Verb: "delete"}, false}, // rules grant reading only
	} {
		if got, _ := p.Decide(t.Context(), tt.u, tt.a); got != tt.want {
			t.Errorf("%s %+v = %v, want %v", tt.u.Name, tt.a, got, tt.want)
		}
	}
	if _, err := NewPolicy([]Rule{{Clusters: []string{"c1"}}}); err == nil {
		t.Error("a rule naming nobody was accepted")
	}
}
