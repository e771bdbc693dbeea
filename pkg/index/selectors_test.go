package index_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetcache/fleetcache/internal/indextest"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/object"
)

var serviceType = &object.Type{Resource: "services", GVR: schema.GroupVersionResource{Version: "v1", Resource: "services"}, Kind: "Service", Namespaced: true}

// TestSelecting checks the index of Services' selectors as they are
// added, edited and deleted: Selecting finds the Services whose selector
// selects a Pod's labels, in the Pod's cluster and namespace only.
func TestSelecting(t *testing.T) {
	ix := index.New(index.Options{})
	svc := func(cluster, ns, name, selector string) *object.Object {
		return indextest.Obj(cluster, serviceType, ns, name, indextest.WithRaw(
			`{"apiVersion":"v1","kind":"Service","metadata":{"name":"`+name+`","namespace":"`+ns+`"},"spec":{`+selector+`}}`))
	}
	labels := func(kv ...string) object.Labels {
		return indextest.Obj("c1", indextest.PodType, "a", "p", indextest.WithLabels(kv...)).Labels
	}
	selecting := func(l object.Labels) []string {
		if err := ix.Verify(); err != nil {
			t.Fatal(err)
		}
		return indextest.Keys(ix.Selecting("c1", "a", "services", l))
	}
	for _, o := range []*object.Object{
		svc("c1", "a", "web", `"selector":{"app":"web"}`),
		svc("c1", "a", "web-fe", `"selector":{"app":"web","tier":"fe"}`),
		svc("c1", "a", "none", ``),
		svc("c1", "a", "empty", `"selector":{}`),
		svc("c1", "b", "web", `"selector":{"app":"web"}`),
		svc("c2", "a", "web", `"selector":{"app":"web"}`),
	} {
		ix.Upsert(o)
	}
	web := labels("app", "web", "tier", "fe", "x", "y")
	if diff := cmp.Diff([]string{"c1/services/a/web", "c1/services/a/web-fe"}, selecting(web)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := selecting(labels("app", "web")); len(got) != 1 {
		t.Errorf("app=web alone: %v, want web", got)
	}
	if got := ix.Selecting("c1", "a", "pods", web); len(got) != 0 {
		t.Errorf("pods selecting: %v", got)
	}
	ix.Upsert(indextest.Modified(svc("c1", "a", "web", `"selector":{"app":"db"}`), "2"))
	if diff := cmp.Diff([]string{"c1/services/a/web-fe"}, selecting(web)); diff != "" {
		t.Errorf("after web's selector changed (-want +got):\n%s", diff)
	}
	ix.Delete(svc("c1", "a", "web-fe", "").Key())
	if got := selecting(web); len(got) != 0 {
		t.Errorf("after web-fe left: %v", got)
	}
	if got := selecting(labels("app", "db")); len(got) != 1 {
		t.Errorf("app=db: %v, want web", got)
	}
	ix.RemoveCluster("c1")
	if got := selecting(labels("app", "db")); len(got) != 0 {
		t.Errorf("after c1 left: %v", got)
	}
}
