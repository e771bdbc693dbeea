package api_test

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/index/object"
)

// sortPods are the Pods the sort tests add to fieldPods: numbers at
// spec.activeDeadlineSeconds (absent from the others), more ties in phase.
var sortPods = []fieldPod{
	{name: "dl-1", app: "dl", images: []string{"busybox:1.36"}, phase: corev1.PodRunning, restarts: []int64{0}, deadline: 300},
	{name: "dl-2", app: "dl", node: "node-2", images: []string{"busybox:1.36"}, phase: corev1.PodPending, deadline: 30},
	{name: "dl-3", app: "dl", node: "node-3", images: []string{"busybox:1.36"}, phase: corev1.PodRunning, restarts: []int64{1}, deadline: 3000},
}

// sortValue is the oracle's value of a Pod at a path: present or not, and
// a number (numbers, times) or a string.
type sortValue struct {
	present bool
	num     float64
	str     string
}

// podValue reads the value of p at one of the paths the tests sort by,
// from the Pod as the API server returned it.
func podValue(p clusterPod, path string) sortValue {
	str := func(s string) sortValue { return sortValue{present: s != "", str: s} }
	switch path {
	case "status.phase":
		return str(string(p.Status.Phase))
	case "spec.nodeName":
		return str(p.Spec.NodeName)
	case "cluster":
		return str(p.cluster)
	case "spec.activeDeadlineSeconds":
		if p.Spec.ActiveDeadlineSeconds == nil {
			return sortValue{}
		}
		return sortValue{present: true, num: float64(*p.Spec.ActiveDeadlineSeconds)}
	case "metadata.creationTimestamp":
		return sortValue{present: true, num: float64(p.CreationTimestamp.Unix())}
	}
	panic("no oracle for " + path)
}

// sortOracle orders Pods as issue 15 says: by each key, values absent
// last in either order, then by cluster, namespace and name.
func sortOracle(pods []clusterPod, sort []any) []string {
	pods = slices.Clone(pods)
	slices.SortFunc(pods, func(a, b clusterPod) int {
		for _, k := range sort {
			m := k.(map[string]any)
			path, desc := m["field"].(string), m["order"] == "DESC"
			va, vb := podValue(a, path), podValue(b, path)
			if c := -cmp.Compare(boolInt(va.present), boolInt(vb.present)); c != 0 || !va.present {
				if c != 0 {
					return c
				}
				continue
			}
			c := cmp.Or(cmp.Compare(va.num, vb.num), strings.Compare(va.str, vb.str))
			if desc {
				c = -c
			}
			if c != 0 {
				return c
			}
		}
		return cmp.Or(strings.Compare(a.cluster, b.cluster), strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.String()
	}
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func key(path, order string) map[string]any { return map[string]any{"field": path, "order": order} }

// sortName names a sort: "status.phase ASC, cluster DESC".
func sortName(sort []any) string {
	var parts []string
	for _, k := range sort {
		m := k.(map[string]any)
		parts = append(parts, fmt.Sprint(m["field"], " ", m["order"]))
	}
	return strings.Join(parts, ", ")
}

// TestSortOnRealClusters sorts the Pods of three clusters by a string, a
// number and a time, in both orders, with absent values and ties, and
// compares every page put together with the order the issue defines over
// what the API servers hold.
func TestSortOnRealClusters(t *testing.T) {
	ns, ns2, f := startFieldFleet(t, "sort", sortPods...)
	flt := filter{Namespaces: []string{ns, ns2}}
	for _, sort := range [][]any{
		{key("status.phase", "ASC")},
		{key("status.phase", "DESC")},
		{key("spec.activeDeadlineSeconds", "ASC")},
		{key("spec.activeDeadlineSeconds", "DESC")},
		{key("metadata.creationTimestamp", "ASC")},
		{key("metadata.creationTimestamp", "DESC")},
		{key("spec.nodeName", "DESC"), key("cluster", "DESC")},
		{key("status.phase", "ASC"), key("spec.activeDeadlineSeconds", "DESC")},
	} {
		t.Run(sortName(sort), func(t *testing.T) {
			var pods []clusterPod
			for _, p := range podOracle(t) {
				if p.Namespace == ns || p.Namespace == ns2 {
					pods = append(pods, p)
				}
			}
			want := sortOracle(pods, sort)
			got, total := f.listSorted(t, flt, sort, 4, nil)
			if total != len(want) {
				t.Errorf("totalCount %d, want %d", total, len(want))
			}
			if d := gocmp.Diff(want, strs(got)); d != "" {
				t.Errorf("order (-servers +api):\n%s", d)
			}
		})
	}
}

// TestSortedPagingDuringChurn pages, two Pods at a time, through Pods
// sorted by phase and by creation time (newest first) while Pods are
// created and deleted in the API servers between pages: every Pod that
// exists throughout comes exactly once, and none twice.
func TestSortedPagingDuringChurn(t *testing.T) {
	env := testbed.Env(t)
	victims := []fieldPod{
		{name: "victim-1", app: "v", images: []string{"busybox:1.36"}, phase: corev1.PodRunning, restarts: []int64{0}},
		{name: "victim-2", app: "v", images: []string{"busybox:1.36"}, phase: corev1.PodPending},
		{name: "victim-3", app: "v", images: []string{"busybox:1.36"}, phase: corev1.PodFailed, restarts: []int64{0}},
	}
	ns, _, f := startFieldFleet(t, "sortchurn", victims...)
	flt := filter{Namespaces: []string{ns}}
	clusters := env.Clusters()
	for round, sort := range [][]any{
		{key("status.phase", "ASC"), key("metadata.creationTimestamp", "DESC")},
		{key("metadata.creationTimestamp", "DESC")},
	} {
		stable := map[string]bool{}
		var toDelete []clusterPod
		for _, p := range podOracle(t) {
			if p.Namespace != ns {
				continue
			}
			if strings.HasPrefix(p.Name, "victim-") {
				toDelete = append(toDelete, p)
			} else {
				stable[p.String()] = true
			}
		}
		changes := 0
		got, _ := f.listSorted(t, flt, sort, 2, func() {
			// One create and one delete between pages, each seen by the
			// index before the next page is read.
			c := clusters[changes%len(clusters)]
			u := createFieldPod(t, dyn(t, c), ns, fieldPod{name: fmt.Sprintf("new-%d-%d", round, changes), app: "new",
				images: []string{"busybox:1.36"}, phase: corev1.PodRunning, restarts: []int64{0}})
			waitIndexed(t, f, c.Name(), u)
			if len(toDelete) > 0 {
				v := toDelete[0]
				toDelete = toDelete[1:]
				for _, cl := range clusters {
					if cl.Name() == v.cluster {
						if err := dyn(t, cl).Resource(podsGVR).Namespace(ns).Delete(t.Context(), v.Name, metav1.DeleteOptions{}); err != nil {
							t.Fatal(err)
						}
					}
				}
				testcluster.Eventually(t, 30*time.Second, "the index to drop "+v.String(), func() (bool, string) {
					return f.Index.Get(object.Key{Cluster: v.cluster, Resource: "pods", Namespace: ns, Name: v.Name}) == nil, "present"
				})
			}
			changes++
		})
		if changes < 5 {
			t.Fatalf("only %d changes between pages: the test tests little", changes)
		}
		seen := map[string]int{}
		for _, s := range strs(got) {
			seen[s]++
		}
		for s, n := range seen {
			if n > 1 {
				t.Errorf("sort %s: %s came %d times", sortName(sort), s, n)
			}
		}
		for s := range stable {
			if seen[s] != 1 {
				t.Errorf("sort %s: stable Pod %s came %d times, want once", sortName(sort), s, seen[s])
			}
		}
		// The next round pages over the Pods this one created, less the
		// victims deleted.
		for _, c := range clusters {
			for i := range 3 {
				createFieldPod(t, dyn(t, c), ns, fieldPod{name: fmt.Sprintf("victim-r%d-%d", round, i), app: "v",
					images: []string{"busybox:1.36"}, phase: corev1.PodPending})
			}
		}
	}
}
