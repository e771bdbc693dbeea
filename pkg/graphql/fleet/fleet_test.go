package fleet

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/graphql-go/graphql"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/inventory"
)

// twoClusters is a Health of c1 (syncing, with an error) and c2 (synced).
type twoClusters struct{}

func (twoClusters) Clusters() ([]health.ClusterStatus, uint64) {
	return []health.ClusterStatus{
		{Name: "c1", Status: health.Syncing, Message: "list pods in namespace team-b: forbidden", Server: "https://10.0.0.1",
			Resources: []health.ResourceStatus{{Resource: "pods", LastError: "forbidden"}, {Resource: "nodes"}}},
		{Name: "c2", Status: health.Synced, Server: "https://10.0.0.2"},
	}, 1
}

func (h twoClusters) Cluster(name string) (health.ClusterStatus, bool) {
	all, _ := h.Clusters()
	for _, st := range all {
		if st.Name == name {
			return st, true
		}
	}
	return health.ClusterStatus{}, false
}

func (twoClusters) History(string) []health.StatusPeriod {
	return []health.StatusPeriod{{Status: health.Syncing, Message: "list pods: forbidden"}, {Status: health.Synced}}
}

func (twoClusters) Changes(uint64) ([]health.Change, error) { return nil, nil }
func (twoClusters) Wait(context.Context, uint64) error      { return nil }

// envLabels is an Inventory where c2 alone is labelled env=prod.
type envLabels struct{}

func (envLabels) Get(name string) (inventory.Info, bool) { return inventory.Info{}, false }

func (envLabels) Narrow(names []string, sel labels.Selector) ([]string, uint64) {
	if sel.Matches(labels.Set{"env": "prod"}) {
		return []string{"c2"}, 1
	}
	return nil, 1
}

func (envLabels) Watch() (uint64, context.Context) { return 1, context.Background() }

// trusted is the context of a caller who may read c2's details only.
type trusted struct{}

func newSchema() *Schema {
	return New(twoClusters{}, envLabels{}, func(ctx context.Context, cluster string) bool {
		return ctx.Value(trusted{}) != nil || cluster == "c2"
	}, func(err error) error { return errors.Join(errors.New("BAD_USER_INPUT"), err) })
}

// TestRedact checks what a caller who may not read a cluster's details
// sees of it: the status and counts, not the messages, errors and server.
func TestRedact(t *testing.T) {
	s := newSchema()
	st, _ := twoClusters{}.Cluster("c1")
	got := s.Redact(t.Context(), st)
	want := health.ClusterStatus{Name: "c1", Status: health.Syncing, Message: HiddenDetails,
		Resources: []health.ResourceStatus{{Resource: "pods", LastError: "hidden"}, {Resource: "nodes"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("redacted (-want +got):\n%s", diff)
	}
	if st.Resources[0].LastError != "forbidden" {
		t.Error("Redact changed the tracker's status in place")
	}
	if got := s.Redact(context.WithValue(t.Context(), trusted{}, true), st); !cmp.Equal(got, st) {
		t.Errorf("a trusted caller's status was redacted: %+v", got)
	}
}

// TestResolveClusters checks Query.clusters (all, or by selector, each
// redacted for the caller) and Query.cluster.
func TestResolveClusters(t *testing.T) {
	s := newSchema()
	names := func(v any) []string {
		var out []string
		for _, st := range v.([]*health.ClusterStatus) {
			out = append(out, st.Name+" "+st.Server)
		}
		return out
	}
	all, err := s.ResolveClusters(graphql.ResolveParams{Context: t.Context(), Args: map[string]any{}})
	if err != nil || !cmp.Equal(names(all), []string{"c1 ", "c2 https://10.0.0.2"}) {
		t.Errorf("clusters = %v, %v", names(all), err)
	}
	prod, err := s.ResolveClusters(graphql.ResolveParams{Context: t.Context(), Args: map[string]any{"selector": "env=prod"}})
	if err != nil || !cmp.Equal(names(prod), []string{"c2 https://10.0.0.2"}) {
		t.Errorf("clusters(selector: env=prod) = %v, %v", names(prod), err)
	}
	if _, err := s.ResolveClusters(graphql.ResolveParams{Context: t.Context(), Args: map[string]any{"selector": "env in ("}}); err == nil {
		t.Error("a bad selector: no error")
	}
	if c, err := s.ResolveCluster(graphql.ResolveParams{Context: t.Context(), Args: map[string]any{"name": "c9"}}); c != nil || err != nil {
		t.Errorf("cluster(c9) = %v, %v; want null", c, err)
	}
	c, _ := s.ResolveCluster(graphql.ResolveParams{Context: t.Context(), Args: map[string]any{"name": "c1"}})
	if st := c.(*health.ClusterStatus); st.Message != HiddenDetails {
		t.Errorf("cluster(c1).message = %q, want it hidden", st.Message)
	}
}

// TestResolveHistory checks that the periods' messages are hidden where
// the cluster's details are.
func TestResolveHistory(t *testing.T) {
	s := newSchema()
	for _, tc := range []struct {
		cluster, want string
	}{{"c1", HiddenDetails}, {"c2", "list pods: forbidden"}} {
		v, err := s.resolveHistory(graphql.ResolveParams{Context: t.Context(), Source: &health.ClusterStatus{Name: tc.cluster}})
		if err != nil {
			t.Fatal(err)
		}
		periods := v.([]*health.StatusPeriod)
		if len(periods) != 2 || periods[0].Message != tc.want || periods[1].Message != "" {
			t.Errorf("%s: history %+v, want the first message %q", tc.cluster, periods, tc.want)
		}
	}
	if NonEmpty("") != nil || NonEmpty("x") != "x" {
		t.Error("NonEmpty")
	}
}
