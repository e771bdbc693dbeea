package object_test

import (
	"strings"
	"testing"

	"github.com/fleetcache/fleetcache/internal/indextest"
	"github.com/fleetcache/fleetcache/pkg/index/object"
)

func TestPositionOrder(t *testing.T) {
	appsV2 := &object.Type{Resource: "deployments.apps", Kind: "Deployment"}
	appsV2.GVR.Group = "apps"
	tests := []struct {
		name string
		a, b *object.Object
		want int
	}{
		{"cluster first", indextest.Obj("a", indextest.PodType, "z", "z"), indextest.Obj("b", indextest.PodType, "a", "a"), -1},
		{"then namespace", indextest.Obj("a", indextest.PodType, "a", "z"), indextest.Obj("a", indextest.PodType, "b", "a"), -1},
		{"cluster-scoped first", indextest.Obj("a", indextest.NodeType, "", "z"), indextest.Obj("a", indextest.PodType, "a", "a"), -1},
		{"then name", indextest.Obj("a", indextest.PodType, "a", "a"), indextest.Obj("a", indextest.PodType, "a", "b"), -1},
		{"then kind", indextest.Obj("a", indextest.ConfigMapType, "a", "a"), indextest.Obj("a", indextest.PodType, "a", "a"), -1},
		{"kind name with group", indextest.Obj("a", indextest.DeploymentType, "a", "a"), indextest.Obj("a", indextest.PodType, "a", "a"), -1},
		{"grouped kind after its bare prefix", indextest.Obj("a", indextest.FooPodsType, "a", "a"), indextest.Obj("a", indextest.PodType, "a", "a"), 1},
		{"same kind name", indextest.Obj("a", indextest.DeploymentType, "a", "a"), indextest.Obj("a", appsV2, "a", "a"), 0},
		{"then resource", indextest.Obj("a", indextest.PodType, "a", "a"), indextest.Obj("a", &object.Type{Resource: "pods2", Kind: "Pod"}, "a", "a"), -1},
		{"equal", indextest.Obj("a", indextest.PodType, "a", "a"), indextest.Obj("a", indextest.PodType, "a", "a"), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, c := range []struct {
				a, b *object.Object
				want int
			}{{tt.a, tt.b, tt.want}, {tt.b, tt.a, -tt.want}} {
				if got := c.a.Position().Compare(c.b.Position()); got != c.want {
					t.Errorf("Position.Compare = %d, want %d", got, c.want)
				}
				if got := object.CompareObjects(c.a, c.b); got != c.want {
					t.Errorf("CompareObjects = %d, want %d", got, c.want)
				}
				if got := object.CompareObjects(c.a, c.b.Position().Placeholder()); got != c.want {
					t.Errorf("CompareObjects with pivot = %d, want %d", got, c.want)
				}
			}
		})
	}
}

func TestCompareParts(t *testing.T) {
	words := []string{"", "Pod", "Pod.", "Pod.a", "Pod.ab", "Pod.b", "Pods", "Pod-x", "Po", "Deployment.apps", "Deployment", "Deploymentx"}
	split := func(s string) [][3]string {
		var out [][3]string
		for i := 0; i <= len(s); i++ {
			for j := i; j <= len(s); j++ {
				out = append(out, [3]string{s[:i], s[i:j], s[j:]})
			}
		}
		return out
	}
	for _, x := range words {
		for _, y := range words {
			want := strings.Compare(x, y)
			for _, a := range split(x) {
				for _, b := range split(y) {
					if got := object.CompareParts(a, b); got != want {
						t.Fatalf("object.CompareParts(%q, %q) = %d, want %d", a, b, got, want)
					}
				}
			}
		}
	}
}
