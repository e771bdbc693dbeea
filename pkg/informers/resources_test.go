package informers

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
