package informers

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetcache/fleetcache/pkg/index"
)

// TestTransformDropsSecretData checks the transform on objects no API
// server serves (a Secret with stringData) and on the types the option
// must not touch: only a Secret's data and stringData go, and only without
// CacheSecretData.
func TestTransformDropsSecretData(t *testing.T) {
	secretType := &index.Type{GVR: schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, Kind: "Secret", Resource: "secrets", Namespaced: true}
	configMapType := &index.Type{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Resource: "configmaps", Namespaced: true}
	object := func(kind string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": kind,
			"metadata":   map[string]any{"namespace": "ns", "name": "x", "uid": "u1", "resourceVersion": "1"},
			"data":       map[string]any{"k": "dg=="},
			"stringData": map[string]any{"s": "v"},
		}}
	}
	for _, tc := range []struct {
		name      string
		typ       *index.Type
		kind      string
		cacheData bool
		want      string
	}{
		{"secret, default", secretType, "Secret", false,
			`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"x","namespace":"ns","resourceVersion":"1","uid":"u1"}}`},
		{"secret, CacheSecretData", secretType, "Secret", true,
			`{"apiVersion":"v1","data":{"k":"dg=="},"kind":"Secret","metadata":{"name":"x","namespace":"ns","resourceVersion":"1","uid":"u1"},"stringData":{"s":"v"}}`},
		{"configmap keeps data", configMapType, "ConfigMap", false,
			`{"apiVersion":"v1","data":{"k":"dg=="},"kind":"ConfigMap","metadata":{"name":"x","namespace":"ns","resourceVersion":"1","uid":"u1"},"stringData":{"s":"v"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Ingester{name: "c1", opts: Options{CacheSecretData: tc.cacheData}}
			out, err := c.transform(tc.typ)(object(tc.kind))
			if err != nil {
				t.Fatal(err)
			}
			o, ok := out.(*index.Object)
			if !ok {
				t.Fatalf("transform returned %T", out)
			}
			if diff := cmp.Diff(tc.want, string(o.Raw)); diff != "" {
				t.Errorf("stored JSON (-want +got):\n%s", diff)
			}
			// Idempotent, as client-go requires of transforms.
			again, err := c.transform(tc.typ)(out)
			if err != nil || again != out {
				t.Errorf("second transform: %v, %v", again, err)
			}
		})
	}
}
