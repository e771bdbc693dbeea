package api_test

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/fleetcache/fleetcache/internal/app"
	"github.com/fleetcache/fleetcache/internal/apptest"
	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/index"
)

// TestFieldIndexOnRealClusters configures indexes on status.phase and
// spec.nodeName of Pods through the configuration file, and checks that
// fieldSelector on those paths (with kinds, so that the index covers the
// filter), totalCount and facets by the phase answer what the API
// servers hold, also after Pods change phase through the status
// subresource.
func TestFieldIndexOnRealClusters(t *testing.T) {
	env := testbed.Env(t)
	file := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(file, []byte("indexes:\n  pods: [status.phase, spec.nodeName]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := app.ParseArgs([]string{"--config", file}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	ns, ns2 := freshNamespace("fieldindex"), freshNamespace("fieldindex")
	for _, cl := range env.Clusters() {
		d := dyn(t, cl)
		createNamespace(t, d, ns)
		createNamespace(t, d, ns2)
		first, second := fieldPods(cl.Name())
		for _, p := range first {
			createFieldPod(t, d, ns, p)
		}
		for _, p := range second {
			createFieldPod(t, d, ns2, p)
		}
	}
	opts := c.Options()
	f := newFleet(t, app.Options{Informers: apptest.Informers("pods"), Index: opts.Index})
	f.waitSynced(t)
	var paths []string
	for _, p := range f.Index.IndexedPaths("pods") {
		paths = append(paths, p.String())
	}
	want := []string{"status.phase", "spec.nodeName"} // and the relation paths, whatever the configuration says
	for _, p := range index.RelationPaths["pods"] {
		want = append(want, p.String())
	}
	if diff := gocmp.Diff(want, paths); diff != "" {
		t.Fatalf("indexed paths of pods (-configured +index):\n%s", diff)
	}

	inNS := func(p clusterPod) bool { return p.Namespace == ns || p.Namespace == ns2 }
	pod := []string{"Pod"}
	check := func(t *testing.T) {
		for _, tt := range []struct {
			name string
			flt  filter
			want func(clusterPod) bool
		}{
			{"phase", filter{Kinds: pod, Namespaces: []string{ns, ns2}, FieldSelector: "status.phase=Running"},
				func(p clusterPod) bool { return inNS(p) && p.Status.Phase == corev1.PodRunning }},
			{"phases in one namespace", filter{Kinds: pod, Namespaces: []string{ns}, FieldSelector: "status.phase in (Failed,Pending)"},
				func(p clusterPod) bool {
					return p.Namespace == ns && (p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodPending)
				}},
			{"node and phase", filter{Kinds: pod, Namespaces: []string{ns, ns2}, FieldSelector: "spec.nodeName=node-1,status.phase!=Failed"},
				func(p clusterPod) bool {
					return inNS(p) && p.Spec.NodeName == "node-1" && p.Status.Phase != corev1.PodFailed
				}},
			{"node with clusters and labels", filter{Kinds: pod, Clusters: []string{"c2", "c3"}, LabelSelector: "app=web", FieldSelector: "spec.nodeName in (node-1,node-3)"},
				func(p clusterPod) bool {
					return inNS(p) && p.cluster != "c1" && p.Labels["app"] == "web" && slices.Contains([]string{"node-1", "node-3"}, p.Spec.NodeName)
				}},
		} {
			t.Run(tt.name, func(t *testing.T) {
				if len(tt.flt.Namespaces) == 0 {
					tt.flt.Namespaces = []string{ns, ns2}
				}
				f.expectPods(t, tt.flt, tt.want)
			})
		}
		t.Run("facets by phase", func(t *testing.T) {
			testcluster.Eventually(t, 30*time.Second, "the facets to count what the servers hold", func() (bool, string) {
				want := map[string]int{}
				for _, p := range podOracle(t) {
					if inNS(p) {
						want[string(p.Status.Phase)]++
					}
				}
				var got struct {
					Facets []struct {
						Value string
						Count int
					}
				}
				f.mustQuery(t, `query($filter: ResourceFilter) { facets(filter: $filter, by: FIELD, field: "status.phase") { value count } }`,
					map[string]any{"filter": filter{Kinds: pod, Namespaces: []string{ns, ns2}}.vars()}, &got)
				counts := map[string]int{}
				for _, fc := range got.Facets {
					counts[fc.Value] = fc.Count
				}
				diff := gocmp.Diff(want, counts)
				return diff == "", "(-servers +api):\n" + diff
			})
		})
	}
	t.Run("created", check)

	// Phases change through the status subresource: the Pods move between
	// the postings of their phases.
	for _, cl := range env.Clusters() {
		first, second := fieldPods(cl.Name())
		d := dyn(t, cl)
		for _, p := range first[:2] {
			p.phase = map[corev1.PodPhase]corev1.PodPhase{corev1.PodRunning: corev1.PodSucceeded, corev1.PodPending: corev1.PodRunning,
				corev1.PodFailed: corev1.PodRunning}[p.phase]
			waitIndexed(t, f, cl.Name(), setPodStatus(t, d, ns, p))
		}
		p := second[0]
		p.phase = corev1.PodFailed
		waitIndexed(t, f, cl.Name(), setPodStatus(t, d, ns2, p))
	}
	t.Run("after status changes", check)
}
