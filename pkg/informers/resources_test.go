package informers

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/fleetcache/fleetcache/pkg/index/object"
)

func TestParseResourceNames(t *testing.T) {
	tests := []struct {
		name    string
		in      []string
		want    []schema.GroupResource
		wantErr string
	}{
		{name: "core", in: []string{"pods"}, want: []schema.GroupResource{{Resource: "pods"}}},
		{name: "grouped", in: []string{"deployments.apps", "widgets.example.com"}, want: []schema.GroupResource{
			{Group: "apps", Resource: "deployments"}, {Group: "example.com", Resource: "widgets"},
		}},
		{name: "empty name", in: []string{""}, wantErr: `resource type ""`},
		{name: "upper case", in: []string{"Pods"}, wantErr: `resource type "Pods"`},
		{name: "bad group", in: []string{"widgets.Example_com"}, wantErr: `resource type "widgets.Example_com": group`},
		{name: "twice", in: []string{"pods", "pods"}, wantErr: `resource type "pods" listed twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseResourceNames(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var grs []schema.GroupResource
			for _, n := range got {
				grs = append(grs, n.gr)
			}
			if diff := cmp.Diff(tt.want, grs); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func FuzzParseResourceNames(f *testing.F) {
	for _, s := range []string{"pods", "deployments.apps", "widgets.example.com", "", ".", "a..b", "PODS", "x.y.z.", strings.Repeat("a", 300)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		got, err := parseResourceNames([]string{name})
		if err != nil {
			return
		}
		if len(got) != 1 || got[0].name != name || got[0].gr.Resource == "" {
			t.Fatalf("parseResourceNames(%q) = %+v", name, got)
		}
	})
}

// TestSharedSurfaces resolves the same names for two clusters of one
// version: the built-in group version is asked once for both, the custom
// one once per cluster, and both clusters get the same types.
func TestSharedSurfaces(t *testing.T) {
	newCluster := func() *fakediscovery.FakeDiscovery {
		return &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: []*metav1.APIResourceList{
			{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "configmaps", Kind: "ConfigMap", Namespaced: true, Verbs: []string{"list", "watch"}}}},
			{GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{{Name: "widgets", Kind: "Widget", Namespaced: true, Verbs: []string{"list", "watch"}}}},
		}}, FakedServerVersion: &version.Info{GitVersion: "v1.36.3"}}
	}
	names, err := parseResourceNames([]string{"configmaps", "widgets.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	shared := newSurfaces()
	var got [2][]*object.Type
	var resourceGets [2]int
	for i := range 2 {
		d := newCluster()
		types, missing, err := resolve(d, shared, names)
		if err != nil || len(missing) > 0 {
			t.Fatalf("cluster %d: %v %v", i, missing, err)
		}
		got[i] = types
		for _, a := range d.Actions() {
			if a.GetResource().Resource == "resource" {
				resourceGets[i]++
			}
		}
	}
	if resourceGets != [2]int{2, 1} {
		t.Errorf("group versions asked %v, want [2 1]: v1 once for both clusters, example.com/v1 by each", resourceGets)
	}
	if diff := cmp.Diff(got[0], got[1]); diff != "" {
		t.Errorf("types differ between the clusters (-first +second):\n%s", diff)
	}
}
