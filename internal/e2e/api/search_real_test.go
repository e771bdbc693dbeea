package api_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
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
