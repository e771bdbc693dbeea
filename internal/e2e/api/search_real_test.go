package api_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// wordRE finds the tokens of a text as issue 15 defines them: runs of
// letters and digits.
var wordRE = regexp.MustCompile(`[\p{L}\p{N}]+`)

// searchMatches is the oracle of search: each word of text begins a token
// of the Pod's name, namespace, labels, annotation values or images.
func searchMatches(p clusterPod, text string) bool {
	var tokens []string
	add := func(s string) { tokens = append(tokens, wordRE.FindAllString(strings.ToLower(s), -1)...) }
	add(p.Name)
	add(p.Namespace)
	for k, v := range p.Labels {
		add(k)
		add(v)
	}
	for _, v := range p.Annotations {
		add(v)
	}
	for _, c := range append(slices.Clone(p.Spec.InitContainers), p.Spec.Containers...) {
		add(c.Image)
	}
	for _, w := range wordRE.FindAllString(strings.ToLower(text), -1) {
		if !slices.ContainsFunc(tokens, func(tok string) bool { return strings.HasPrefix(tok, w) }) {
			return false
		}
	}
	return true
}

// TestSearchOnRealClusters searches the Pods of three clusters for image
// words, label value prefixes, a namespace and annotation values, alone and
// with the other filters, against what the API servers hold.
func TestSearchOnRealClusters(t *testing.T) {
	ns, ns2, f := startFieldFleet(t, "search")
	tests := []struct {
		name string
		flt  filter
		also func(clusterPod) bool // the other filters
	}{
		{"image word", filter{Search: "envoy"}, nil},
		{"image and version", filter{Search: "nginx:1.26"}, nil},
		{"label value prefix", filter{Search: "BAT"}, nil},
		{"namespace", filter{Search: ns2}, nil},
		{"annotation value", filter{Search: "team b"}, nil},
		{"with namespaces and labels", filter{Search: "nginx", Namespaces: []string{ns}, LabelSelector: "app=web"},
			func(p clusterPod) bool { return p.Namespace == ns && p.Labels["app"] == "web" }},
		{"with clusters and a field selector", filter{Search: "redis", Clusters: []string{"c3"}, FieldSelector: "status.phase=Running"},
			func(p clusterPod) bool { return p.cluster == "c3" && p.Status.Phase == corev1.PodRunning }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sel, err := labels.Parse(tt.flt.LabelSelector)
			if err != nil {
				t.Fatal(err)
			}
			flt := tt.flt
			if flt.Namespaces == nil {
				flt.Namespaces = []string{ns, ns2}
			}
			f.expectPods(t, flt, func(p clusterPod) bool {
				return (p.Namespace == ns || p.Namespace == ns2) && searchMatches(p, tt.flt.Search) &&
					(tt.also == nil || tt.also(p)) && sel.Matches(labels.Set(p.Labels))
			})
		})
	}
	t.Run("bad input", func(t *testing.T) {
		errs := f.query(t, `{ resources(filter: {search: "a b c d e f g h i j k l m n o p q"}) { totalCount } }`, nil, nil)
		if len(errs) != 1 || errs[0].Extensions.Code != "BAD_USER_INPUT" || !strings.Contains(errs[0].Message, "more than 16 words") {
			t.Errorf("errors %+v, want one BAD_USER_INPUT saying why", errs)
		}
	})
}

// TestSearchSubscriptionOnRealClusters follows Pods with search "orion"
// while an annotation value of one changes: it enters (ADDED) when the
// value begins with the word, changes (MODIFIED) while it does, and leaves
// (DELETED) when it no longer does; a Pod of another cluster created
// matching enters, and changes when its status is set.
func TestSearchSubscriptionOnRealClusters(t *testing.T) {
	ns := freshNamespace("search-sub")
	d, fl, f := startPodSubFleet(t, ns)
	sub := f.subscribe(t, realEventsQuery, map[string]any{"filter": map[string]any{"namespaces": []any{ns}, "search": "ORION"}})

	annotate := func(cluster, name, owner string) {
		t.Helper()
		r := d[cluster].Resource(podsGVR).Namespace(ns)
		u, err := r.Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		u.SetAnnotations(map[string]string{"example.com/owner": owner})
		if u, err = r.Update(t.Context(), u, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitIndexed(t, fl, cluster, u)
	}
	p := fieldPod{name: "p", node: "node-1", app: "web", images: []string{"nginx:1.25"}, phase: corev1.PodPending, restarts: []int64{0}}
	waitIndexed(t, fl, "c1", createFieldPod(t, d["c1"], ns, p)) // no word begins with orion: nothing
	annotate("c1", "p", "orion-team")                           // enters: ADDED
	p.phase = corev1.PodRunning
	waitIndexed(t, fl, "c1", setPodStatus(t, d["c1"], ns, p)) // still matches: MODIFIED
	annotate("c1", "p", "vega")                               // leaves: DELETED
	q := fieldPod{name: "q", node: "node-2", app: "db", images: []string{"redis:7"}, owner: "orion", phase: corev1.PodRunning, restarts: []int64{0}}
	waitIndexed(t, fl, "c2", createFieldPod(t, d["c2"], ns, q)) // created matching: ADDED; its status set: MODIFIED
	want := []string{"ADDED c1/p", "MODIFIED c1/p", "DELETED c1/p", "ADDED c2/q", "MODIFIED c2/q"}
	if diff := gocmp.Diff(want, eventNames(f.drain(t, sub))); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
}
