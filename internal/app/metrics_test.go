package app_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/fleetcache/fleetcache/internal/app"
	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/informers"
)

// podTemplates is a type nothing creates on the test clusters (no
// controllers run): the test's own objects are all there is, so the
// expected values are exact.
var podTemplates = schema.GroupVersionResource{Version: "v1", Resource: "podtemplates"}

// TestMetrics runs the aggregator on a real cluster, changes objects there
// and reads /metrics over HTTP as Prometheus would.
func TestMetrics(t *testing.T) {
	env := testbed.Env(t)
	c2 := env.Cluster("c2")
	client := testcluster.Dynamic(t, c2.AdminConfig())
	templates := client.Resource(podTemplates).Namespace("default")
	deleteAll := func() {
		if err := templates.DeleteCollection(context.Background(), metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete pod templates: %v", err)
		}
	}
	deleteAll()
	t.Cleanup(deleteAll)

	_, url := serveClusters(t, app.Options{Informers: informers.Options{Resources: []string{"podtemplates"}}}, "c2")

	names := []string{"fleetcache_cluster_status", "fleetcache_cached_objects", "fleetcache_events_total"}
	expect := func(what string, objects, added, deleted int) {
		t.Helper()
		want := fmt.Sprintf(`
# HELP fleetcache_cached_objects Objects of the resource type cached from the cluster.
# TYPE fleetcache_cached_objects gauge
fleetcache_cached_objects{cluster="c2",resource="podtemplates"} %d
# HELP fleetcache_cluster_status Sync status of the cluster: 1 for its current status, 0 for the others.
# TYPE fleetcache_cluster_status gauge
fleetcache_cluster_status{cluster="c2",status="DEGRADED"} 0
fleetcache_cluster_status{cluster="c2",status="DISCONNECTED"} 0
fleetcache_cluster_status{cluster="c2",status="PENDING"} 0
fleetcache_cluster_status{cluster="c2",status="SYNCED"} 1
fleetcache_cluster_status{cluster="c2",status="SYNCING"} 0
# HELP fleetcache_events_total Object changes the informer delivered to the index, by watch event type; the objects of every list count as ADDED or MODIFIED.
# TYPE fleetcache_events_total counter
fleetcache_events_total{cluster="c2",resource="podtemplates",type="ADDED"} %d
fleetcache_events_total{cluster="c2",resource="podtemplates",type="DELETED"} %d
fleetcache_events_total{cluster="c2",resource="podtemplates",type="MODIFIED"} 0
`, objects, added, deleted)
		testcluster.Eventually(t, 60*time.Second, what, func() (bool, string) {
			err := testutil.ScrapeAndCompare(url+"/metrics", strings.NewReader(want), names...)
			return err == nil, fmt.Sprint(err)
		})
	}
	expect("c2 synced with no pod template", 0, 0, 0)

	for i := range 3 {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "PodTemplate",
			"metadata": map[string]any{"name": fmt.Sprintf("tpl-%d", i), "namespace": "default"},
			"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "app:1"}}}},
		}}
		if _, err := templates.Create(t.Context(), u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := templates.Delete(t.Context(), "tpl-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("3 pod templates added and 1 deleted", 2, 3, 1)

	// The GraphQL API registers its metrics on the same registry.
	resp, err := http.Post(url+"/graphql", "application/json", strings.NewReader(`{"query":"{ clusters { name } }"}`))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	queries := regexp.MustCompile(`(?m)^fleetcache_graphql_request_duration_seconds_count\{operation="query"\} [1-9]`)
	resp, err = http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if !queries.Match(body) {
		t.Errorf("/metrics counts no GraphQL query:\n%s", body)
	}
}
