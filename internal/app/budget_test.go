package app_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetcache/fleetcache/internal/app"
	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/informers"
)

// TestMemoryBudget runs the aggregator with a memory budget far below what
// a real cluster's ConfigMaps need, and checks that it keeps serving: the
// ConfigMaps it took are cached (first with their body, then metadata
// only), the rest refused, and health, the metrics and the API say so.
func TestMemoryBudget(t *testing.T) {
	env := testbed.Env(t)
	c := env.Cluster("c3")
	dc := testcluster.Dynamic(t, c.AdminConfig())
	testcluster.CreateNamespace(t, dc, "budget")
	cms := dc.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("budget")
	const n = 80
	for i := range n {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": fmt.Sprintf("cm-%02d", i), "labels": map[string]any{"budget": "yes"}},
			"data":     map[string]any{"payload": strings.Repeat(fmt.Sprintf("line %d of a configuration file\n", i), 30)},
		}}
		if _, err := cms.Create(t.Context(), u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Room for about 40 ConfigMaps without their body.
	const budget = 40 * 700
	agg, url := serveClusters(t, app.Options{
		Index:     index.Options{MemoryBudget: budget},
		Informers: informers.Options{Resources: []string{"configmaps"}},
	}, "c3")
	addr := strings.TrimPrefix(url, "http://")

	type resource struct {
		Resource                           string
		Status                             string
		ObjectCount, MetadataOnly, Refused int
	}
	var cm resource
	testcluster.Eventually(t, 60*time.Second, "configmaps synced, some refused", func() (bool, string) {
		var d struct {
			Clusters []struct{ Resources []resource }
		}
		if err := gql(addr, "{ clusters { resources { resource status objectCount metadataOnly refused } } }", &d); err != nil {
			return false, err.Error()
		}
		for _, c := range d.Clusters {
			for _, r := range c.Resources {
				if r.Resource == "configmaps" {
					cm = r
				}
			}
		}
		return cm.Status == "SYNCED" && cm.Refused > 0, fmt.Sprintf("%+v", cm)
	})
	if cm.MetadataOnly == 0 || cm.ObjectCount == 0 || cm.ObjectCount+cm.Refused < n {
		t.Errorf("configmaps: %+v; want some cached, some of them metadata only, and every one of the %d either cached or refused", cm, n)
	}
	if st := agg.Index.Budget(); st.Used > budget || st.MetadataOnly != cm.MetadataOnly {
		t.Errorf("the index holds %+v against a budget of %d", st, budget)
	}

	// A metadata-only object has its identity and labels, no data.
	var page struct {
		Resources struct {
			Edges []struct {
				Node struct{ Object json.RawMessage }
			}
		}
	}
	if err := gql(addr, `{ resources(filter: {namespaces: ["budget"], labelSelector: "budget=yes"}, first: 100) { edges { node { object } } } }`, &page); err != nil {
		t.Fatal(err)
	}
	withData, metaOnly := 0, 0
	for _, e := range page.Resources.Edges {
		var o struct {
			Metadata struct{ Labels map[string]string }
			Data     map[string]string
		}
		if err := json.Unmarshal(e.Node.Object, &o); err != nil {
			t.Fatal(err)
		}
		if o.Metadata.Labels["budget"] != "yes" {
			t.Errorf("an object without its labels: %s", e.Node.Object)
		}
		if o.Data == nil {
			metaOnly++
		} else {
			withData++
		}
	}
	if withData == 0 || metaOnly == 0 {
		t.Errorf("%d ConfigMaps of the namespace with their data, %d metadata only: want both", withData, metaOnly)
	}

	// The metrics say the same.
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		"fleetcache_index_memory_budget_bytes " + strconv.Itoa(budget),
		`fleetcache_metadata_only_objects{cluster="c3",resource="configmaps"} ` + strconv.Itoa(cm.MetadataOnly),
		`fleetcache_refused_objects_total{cluster="c3",resource="configmaps"} `,
		"fleetcache_index_estimated_bytes ",
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}
