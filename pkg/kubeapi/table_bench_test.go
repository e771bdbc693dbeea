package kubeapi

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetcache/fleetcache/internal/graphqltest"
	"github.com/fleetcache/fleetcache/pkg/columns"
	"github.com/fleetcache/fleetcache/pkg/index/compact"
	"github.com/fleetcache/fleetcache/pkg/index/object"
)

// tablePods returns n realistic Pods of cluster c01 (graphqltest.RealisticPod),
// compressed as the informers store them.
func tablePods(n int) []*object.Object {
	podType := &object.Type{Resource: "pods", GVR: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Kind: "Pod", Namespaced: true,
		Codec: compact.NewCodec("pods", 0)}
	objs := make([]*object.Object, n)
	for i := range objs {
		objs[i] = graphqltest.RealisticPod(podType, "c01", i, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	}
	return objs
}

// tableOf is the Table of objs as /clusters/c01 (fleet false) or /fleet
// answers a list, at time now, with each row's metadata: in the parts it
// writes in turn.
func tableOf(objs []*object.Object, fleet bool, now time.Time) (head, rows, tail []byte) {
	tw := &tableWriter{version: "v1", include: "Metadata", now: now, cols: new(columns.Types), fleet: fleet, expect: len(objs)}
	for _, o := range objs {
		tw.add(o)
	}
	return tw.parts("12345", "")
}

// updateGolden rewrites the golden files under testdata/ (UPDATE_GOLDEN=1).
var updateGolden = os.Getenv("UPDATE_GOLDEN") != ""

// TestTableGolden: the Table of realistic Pods, on a cluster's API and on
// the fleet's, is byte for byte the one in testdata/, which kubectl's
// tests against the member checked (a change of its bytes is a change of
// what kubectl reads: rewrite it with UPDATE_GOLDEN=1 only on purpose).
func TestTableGolden(t *testing.T) {
	objs := tablePods(40)
	// And the unusual: no annotations (the fleet's adds them), empty
	// ones, and cells that JSON escapes.
	for i, raw := range []string{
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"bare","namespace":"ns-00","uid":"u1","resourceVersion":"7","creationTimestamp":"2026-01-01T00:00:00Z"},` +
			`"spec":{"containers":[{"name":"a","image":"a"}]},"status":{"phase":"Pending","containerStatuses":[{"name":"a","ready":false,"restartCount":0,"state":{"waiting":{"reason":"Err<&>\u2028é"}}}]}}`,
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"empty","namespace":"ns-00","annotations":{},"labels":{}},"spec":{},"status":{}}`,
	} {
		o := &object.Object{Cluster: "c02", Type: objs[0].Type, Namespace: "ns-00", Name: []string{"bare", "empty"}[i]}
		o.SetRaw([]byte(raw))
		objs = append(objs, o)
	}
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		fleet bool
	}{{"clusters", false}, {"fleet", true}} {
		t.Run(tc.name, func(t *testing.T) {
			got := slices.Concat(tableOf(objs, tc.fleet, now))
			path := filepath.Join("testdata", "table-pods-"+tc.name+".json")
			if updateGolden {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("the Table differs from %s:\n%s", path, got)
			}
		})
	}
}

// BenchmarkTableRows measures what a Table row of a realistic Pod costs
// the server, on a cluster's API and on the fleet's: its cells computed
// from the stored (compressed) object and its PartialObjectMetadata, over
// a page of 500 (kubectl's default chunk). B/row and allocs/row are the
// allocations per row, the page's Table header included.
//
//	go test -tags=pebblegozstd -run '^$' -bench BenchmarkTableRows -count 5 ./pkg/kubeapi/
func BenchmarkTableRows(b *testing.B) {
	const rows = 500
	objs := tablePods(rows)
	now := time.Now()
	for _, tc := range []struct {
		name  string
		fleet bool
	}{{"clusters", false}, {"fleet", true}} {
		b.Run(fmt.Sprintf("api=%s/rows=%d", tc.name, rows), func(b *testing.B) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			n := 0
			for b.Loop() {
				tableOf(objs, tc.fleet, now)
				n++
			}
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(n*rows), "B/row")
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(n*rows), "allocs/row")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*rows), "ns/row")
		})
	}
}
