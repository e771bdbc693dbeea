package informers_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/clusters"
	"github.com/fleetcache/fleetcache/pkg/columns"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/object"
)

var gizmos = schema.GroupVersionResource{Group: "printers.example.com", Version: "v1", Resource: "gizmos"}

// gizmoCRD is the CRD of gizmos, with printer columns of the given names,
// each the string at .spec.<lowercased name>.
func gizmoCRD(names ...string) *unstructured.Unstructured {
	var cols []any
	for _, n := range names {
		cols = append(cols, map[string]any{"name": n, "type": "string", "jsonPath": ".spec." + n})
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "gizmos.printers.example.com"},
		"spec": map[string]any{
			"group": "printers.example.com", "scope": "Namespaced",
			"names": map[string]any{"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo", "listKind": "GizmoList"},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"schema":                   map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
				"additionalPrinterColumns": cols,
			}},
		},
	}}
}

// createGizmos creates the gizmo CRD with a color column, waits until it is
// served, and creates gizmo g1 in default.
func createGizmos(t *testing.T, dc dynamic.Interface) {
	t.Helper()
	if _, err := dc.Resource(crds).Create(t.Context(), gizmoCRD("color"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = dc.Resource(crds).Delete(context.Background(), "gizmos.printers.example.com", metav1.DeleteOptions{})
	})
	g := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "printers.example.com/v1", "kind": "Gizmo",
		"metadata": map[string]any{"namespace": "default", "name": "g1"}, "spec": map[string]any{"color": "blue", "size": "xl"}}}
	testcluster.Eventually(t, 30*time.Second, "the gizmo to be created", func() (bool, string) {
		_, err := dc.Resource(gizmos).Namespace("default").Create(t.Context(), g, metav1.CreateOptions{})
		return err == nil || apierrors.IsAlreadyExists(err), fmt.Sprint(err)
	})
}

// waitColumns waits until the cached gizmo g1 of cluster prints as want.
// Its printer comes from ts.
func waitColumns(t *testing.T, ix *index.Index, ts *columns.Types, cluster string, want []columns.Column) {
	t.Helper()
	testcluster.Eventually(t, 30*time.Second, "the gizmo's columns", func() (bool, string) {
		o := ix.Get(object.Key{Cluster: cluster, Resource: "gizmos.printers.example.com", Namespace: "default", Name: "g1"})
		if o == nil {
			return false, "not cached"
		}
		diff := cmp.Diff(want, ts.For(o, time.Now()))
		return diff == "", "(-want +got):\n" + diff
	})
}

// TestPrinterColumnsFromCRD checks that a custom resource type's printer
// columns come from its CRD in the member cluster, and that a change of
// the CRD is picked up when the type's informer restarts (here, after its
// connection was cut).
func TestPrinterColumnsFromCRD(t *testing.T) {
	env := testbed.Env(t)
	c := env.Cluster("c3")
	dc := testcluster.Dynamic(t, c.AdminConfig())
	createGizmos(t, dc)
	proxy, err := c.StartProxy()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	opts := testOptions("gizmos.printers.example.com")
	opts.Columns = new(columns.Types)
	f := startFleet(t, index.Options{}, opts,
		clusters.Cluster{Name: "c3", Config: proxy.Config(c.AdminConfig())})
	waitStatus(t, f, "c3", health.Synced)
	waitColumns(t, f.index, opts.Columns, "c3", []columns.Column{{Name: "Name", Value: "g1"}, {Name: "color", Value: "blue"}})

	crd, err := dc.Resource(crds).Get(t.Context(), "gizmos.printers.example.com", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	changed := gizmoCRD("size", "color")
	changed.SetResourceVersion(crd.GetResourceVersion())
	if _, err := dc.Resource(crds).Update(t.Context(), changed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	proxy.Cut()
	waitStatus(t, f, "c3", health.Disconnected)
	if err := proxy.Restore(); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, f, "c3", health.Synced)
	waitColumns(t, f.index, opts.Columns, "c3", []columns.Column{{Name: "Name", Value: "g1"}, {Name: "size", Value: "xl"}, {Name: "color", Value: "blue"}})
}

// TestPrinterColumnsForbidden checks that a custom resource type whose
// CRD fleetcache may not read is cached, its objects printed by name.
func TestPrinterColumnsForbidden(t *testing.T) {
	env := testbed.Env(t)
	c := env.Cluster("c2")
	createGizmos(t, testcluster.Dynamic(t, c.AdminConfig()))
	if err := c.Grant(t.Context(), "carol", "", rbacv1.PolicyRule{
		APIGroups: []string{"printers.example.com"}, Resources: []string{"gizmos"}, Verbs: []string{"list", "watch"},
	}); err != nil {
		t.Fatal(err)
	}
	opts := testOptions("gizmos.printers.example.com")
	opts.Columns = new(columns.Types)
	f := startFleet(t, index.Options{}, opts, clusters.Cluster{Name: "c2", Config: c.UserConfig("carol")})
	waitStatus(t, f, "c2", health.Synced)
	waitColumns(t, f.index, opts.Columns, "c2", []columns.Column{{Name: "Name", Value: "g1"}})
	o := f.index.Get(object.Key{Cluster: "c2", Resource: "gizmos.printers.example.com", Namespace: "default", Name: "g1"})
	if p, ok := opts.Columns.Printer(o.Type).(*columns.Custom); !ok {
		t.Errorf("the type's printer is %T, want *columns.Custom", p)
	}
}
