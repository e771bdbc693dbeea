package informers_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/fieldselector"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
)

// TestCompressedReadBack syncs ConfigMaps from a real API server, enough
// of them that their bodies are stored compressed, changes some, and
// checks that every object the index holds reads back byte for byte as the
// server's JSON without managedFields, and that queries on paths inside
// the bodies find them. (TestStoredBytesAreTheServers checks compressed
// Pods from streaming and plain lists.)
func TestCompressedReadBack(t *testing.T) {
	env := testbed.Env(t)
	c := env.Cluster("c2")
	cfg := c.AdminConfig()
	cfg.WarningHandler = rest.NoWarnings{}
	dc := testcluster.Dynamic(t, cfg)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	testcluster.CreateNamespace(t, dc, "compressed")
	const n = 60
	for i := range n {
		create(t, dc, configMap("compressed", fmt.Sprintf("cm-%02d", i), map[string]any{
			"app": fmt.Sprintf("app-%d", i%5), "settings": fmt.Sprintf(`{"replicas": %d, "image": "registry.example.com/app:%d"}`, i, i%3),
		}))
	}
	f := startFleet(t, index.Options{}, testOptions("configmaps"), admin(c))
	waitStatus(t, f, "c2", health.Synced)
	for i := range 10 {
		update(t, dc, "compressed", fmt.Sprintf("cm-%02d", i), map[string]any{"app": "changed", "round": "2"})
	}
	list := func() *unstructured.UnstructuredList {
		l, err := dc.Resource(configMaps).Namespace("compressed").List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	testcluster.Eventually(t, 30*time.Second, "the changes in the index", func() (bool, string) {
		got := planner.Count(f.index, planner.Filter{Namespaces: []string{"compressed"}, Fields: mustFields(t, "data.app=changed")})
		return got == 10, fmt.Sprintf("%d changed", got)
	})
	compressed := 0
	for _, u := range list().Items {
		o := f.index.Get(object.Key{Cluster: "c2", Resource: "configmaps", Namespace: "compressed", Name: u.GetName()})
		if o == nil {
			t.Fatalf("%s is not in the index", u.GetName())
		}
		if o.ResourceVersion != u.GetResourceVersion() {
			continue // changed since the list: compared on the next objects
		}
		if want := serverJSON(t, cs, "/api/v1/namespaces/compressed/configmaps/"+u.GetName()); !bytes.Equal(o.Raw(), want) {
			t.Errorf("%s reads back\n%s\nthe server's JSON without managedFields is\n%s", u.GetName(), o.Raw(), want)
		}
		if o.Compressed() {
			compressed++
		}
	}
	if compressed < n/2 {
		t.Fatalf("only %d of %d objects are stored compressed: the test proves little", compressed, n)
	}
	if got := planner.Count(f.index, planner.Filter{Namespaces: []string{"compressed"}, Fields: mustFields(t, "data.app=app-3")}); got != 10 {
		t.Errorf("data.app=app-3 selects %d objects, want 10", got)
	}
}

func mustFields(t testing.TB, s string) fieldselector.Selector {
	t.Helper()
	sel, err := fieldselector.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return sel
}
