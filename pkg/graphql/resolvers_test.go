package graphql

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetcache/fleetcache/pkg/index/object"
)

func TestResolveLabels(t *testing.T) {
	tests := []struct {
		name   string
		labels object.Labels
	}{
		{name: "none"},
		{name: "kubernetes labels", labels: object.Labels{{Key: "app.kubernetes.io/name", Value: "web"}, {Key: "tier", Value: ""}}},
		{name: "characters JSON escapes", labels: object.Labels{{Key: `a"b\c`, Value: "<&>\n\u00e9\x01"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := resolveLabels(&object.Object{Labels: tt.labels}).(json.RawMessage)
			var got map[string]string
			if err := json.Unmarshal(raw, &got); err != nil {
				t.Fatalf("labels JSON %s: %v", raw, err)
			}
			want := tt.labels.Map()
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("labels (-want +got):\n%s", diff)
			}
		})
	}
}
