package informers_test

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
	"github.com/fleetcache/fleetcache/pkg/index/search"
)

// TestSearchTextFromTheWire checks, against a real API server, the search
// text the wire decoder reads from each object's JSON before compressing
// it (wire.Decoded.Text): of objects a list brings (inserted a batch at a
// time, Index.UpsertAll) and of objects watch events bring, added and
// modified, enough of them that their bodies are stored compressed. Every
// object is found by the words of its annotations, and a modified one by
// its new words and no more by its old. The index's postings, orders and
// ranks are checked whole (Index.Verify) at SYNCED and at the end: a list
// comes in key order, which a batch relies on to know where its objects
// go (index/batch.go).
func TestSearchTextFromTheWire(t *testing.T) {
	env := testbed.Env(t)
	c := env.Cluster("c3")
	cfg := c.AdminConfig()
	cfg.WarningHandler = rest.NoWarnings{}
	dc := testcluster.Dynamic(t, cfg)
	const ns, listed, watched = "searchtext", 300, 40
	testcluster.CreateNamespace(t, dc, ns)
	annotated := func(name string, words ...string) {
		u := configMap(ns, name, map[string]any{"k": "v"})
		ann := map[string]string{}
		for i, w := range words {
			ann[fmt.Sprintf("example.com/note-%d", i)] = w
		}
		u.SetAnnotations(ann)
		create(t, dc, u)
	}
	for i := range listed {
		annotated(fmt.Sprintf("listed-%03d", i), "Listed Word", fmt.Sprintf("mark%d", i%10))
	}
	f := startFleet(t, index.Options{}, testOptions("configmaps"), admin(c))
	waitStatus(t, f, "c3", health.Synced)
	count := func(words string) int {
		q, err := search.Parse(words)
		if err != nil {
			t.Fatal(err)
		}
		return planner.Count(f.index, planner.Filter{Namespaces: []string{ns}, Search: q})
	}
	// The list's objects, at the moment the cluster says SYNCED.
	if err := f.index.Verify(); err != nil {
		t.Fatalf("at SYNCED: %v", err)
	}
	if got := count("listed word"); got != listed {
		t.Fatalf("the words of the listed objects' annotations find %d of them, want %d", got, listed)
	}
	if got := count("mark3"); got != listed/10 {
		t.Errorf("mark3 finds %d listed objects, want %d", got, listed/10)
	}
	compressed := 0
	for i := range listed {
		if o := f.index.Get(object.Key{Cluster: "c3", Resource: "configmaps", Namespace: ns, Name: fmt.Sprintf("listed-%03d", i)}); o != nil && o.Compressed() {
			compressed++
		}
	}
	if compressed < listed/2 {
		t.Fatalf("only %d of %d listed objects are stored compressed: the test proves little", compressed, listed)
	}

	// Watch events: added, then one listed object modified.
	for i := range watched {
		annotated(fmt.Sprintf("watched-%02d", i), "Watched Word")
	}
	u, err := dc.Resource(configMaps).Namespace(ns).Get(t.Context(), "listed-003", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	u.SetAnnotations(map[string]string{"example.com/note-0": "Renamed"})
	if _, err := dc.Resource(configMaps).Namespace(ns).Update(t.Context(), u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	testcluster.Eventually(t, 30*time.Second, "the watched objects' words", func() (bool, string) {
		w, r := count("watched word"), count("renamed")
		return w == watched && r == 1, fmt.Sprintf("%d watched, %d renamed", w, r)
	})
	if got := count("listed word"); got != listed-1 {
		t.Errorf("after the modification the old words find %d objects, want %d", got, listed-1)
	}
	if got := count("mark3"); got != listed/10-1 {
		t.Errorf("after the modification mark3 finds %d objects, want %d", got, listed/10-1)
	}
	if err := f.index.Verify(); err != nil {
		t.Fatal(err)
	}
}
