package planner_test

import (
	"fmt"
	"github.com/fleetcache/fleetcache/internal/indextest"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/labels"
)

// FuzzSelector feeds label selector text, as a client writes it in a
// GraphQL labelSelector, through labels.Parse into the index. For every
// selector that parses it checks that the selector's String form parses
// again to the same selector, and that the index selects exactly the
// objects labels.Selector.Matches selects: through a Matcher, List (whole
// and in pages) and Count, alone or with the cluster, namespace and name
// constraints the third input picks, since the planner combines label
// postings with those. The objects' labels come from the second input,
// drawn from the keys and values the selector names, so that they match
// some requirements and miss others.
func FuzzSelector(f *testing.F) {
	for _, seed := range []struct {
		selector string
		labels   []byte
	}{
		{"app=web", []byte{2, 0, 0, 1, 1, 1, 0, 1}},
		{"app=web,tier in (fe,be),!canary", []byte{3, 0, 0, 1, 1, 2, 2, 2, 0, 1, 3, 0}},
		{"app!=web", []byte{1, 0, 1, 0, 1, 0, 0}},
		{"tier notin (fe, be)", []byte{1, 0, 1, 1, 0, 2}},
		{"canary", []byte{1, 0, 0, 0}},
		{"!canary,app", []byte{2, 0, 0, 1, 1}},
		{"app==web", []byte{1, 0, 0}},
		{"example.com/part-of=fleet_cache.v1", []byte{1, 0, 0, 2, 0, 1, 1, 1}},
		{"replicas>1,replicas<10", []byte{1, 0, 0, 1, 0, 1, 1, 0, 2}},
		{"a=b,a=c", []byte{1, 0, 0, 1, 0, 1}},
		{"a in (b),a notin (b)", []byte{1, 0, 0}},
		{"a=", []byte{1, 0, 0, 1, 0, 1}},
		{"", []byte{1, 0, 0}},
		{" , ", nil},
		{"a in (b,c", nil},
		{"a=(b)", nil},
		{"!a=b", nil},
		{"a>b", nil},
		{"x/y/z=1", nil},
	} {
		for _, scope := range []uint8{0, 0b0011, 0b1110} {
			f.Add(seed.selector, seed.labels, scope)
		}
	}
	f.Fuzz(func(t *testing.T, text string, labelBytes []byte, scope uint8) {
		sel, err := labels.Parse(text)
		if err != nil {
			return // rejected: the API answers BAD_USER_INPUT
		}
		again, err := labels.Parse(sel.String())
		if err != nil {
			t.Fatalf("%q parses to %q, which does not parse: %v", text, sel, err)
		}
		if again.String() != sel.String() {
			t.Fatalf("%q parses to %q, which parses to %q", text, sel, again)
		}

		ix := index.New(index.Options{})
		objs := fuzzObjects(sel, labelBytes)
		for _, o := range objs {
			ix.Upsert(o)
		}
		filter, inScope := scopeFilter(scope)
		filter.Selector = sel
		m := planner.NewMatcher(filter)
		var want []string
		for _, o := range objs {
			set := labels.Set(o.Labels.Map())
			match := sel.Matches(set)
			if got := again.Matches(set); got != match {
				t.Fatalf("selector %q on %v: re-parsed selector says %v, original %v", sel, set, got, match)
			}
			match = match && inScope(o)
			if got := m.Matches(o); got != match {
				t.Fatalf("filter %+v on %s %v: planner.Matcher says %v, want %v", filter, o.Key(), set, got, match)
			}
			if match {
				want = append(want, o.Key().String())
			}
		}
		got := indextest.Keys(planner.List(ix, filter, nil, 0).Objects)
		slices.Sort(got)
		slices.Sort(want)
		if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("List(%+v) (-want +got):\n%s", filter, diff)
		}
		if n := planner.Count(ix, filter); n != len(want) {
			t.Fatalf("Count(%+v) = %d, want %d", filter, n, len(want))
		}
		// Paging visits the same objects: pages of 2 end where List ends.
		var paged []string
		var after *object.Position
		for range len(objs) + 1 {
			page := planner.List(ix, filter, after, 2)
			paged = append(paged, indextest.Keys(page.Objects)...)
			if !page.More || len(page.Objects) == 0 {
				break
			}
			p := page.Objects[len(page.Objects)-1].Position()
			after = &p
		}
		slices.Sort(paged)
		if diff := cmp.Diff(want, paged, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("List(%+v) in pages of 2 (-want +got):\n%s", filter, diff)
		}
	})
}

// scopeFilter returns the filter, without a selector, that the bits of
// scope pick, and the plain reading of what it selects: bit 0 cluster c1,
// bit 1 namespace ns0, bit 2 namespace ns too, bit 3 names containing "1".
func scopeFilter(scope uint8) (planner.Filter, func(*object.Object) bool) {
	var f planner.Filter
	if scope&1 != 0 {
		f.Clusters = []string{"c1"}
	}
	if scope&2 != 0 {
		f.Namespaces = append(f.Namespaces, "ns0")
	}
	if scope&4 != 0 {
		f.Namespaces = append(f.Namespaces, "ns")
	}
	if scope&8 != 0 {
		f.NameContains = "1"
	}
	return f, func(o *object.Object) bool {
		return (f.Clusters == nil || slices.Contains(f.Clusters, o.Cluster)) &&
			(f.Namespaces == nil || slices.Contains(f.Namespaces, o.Namespace)) &&
			strings.Contains(o.Name, f.NameContains)
	}
}

// fuzzObjects builds up to 32 Pods in two clusters whose labels b
// chooses. Each object takes a count byte, then a key byte and a value
// byte per label; keys and values are those sel names plus a few others,
// so labels both meet and miss its requirements.
func fuzzObjects(sel labels.Selector, b []byte) []*object.Object {
	keySet, valueSet := []string{"app", "other"}, []string{"", "web", "0", "10"}
	reqs, _ := sel.Requirements()
	for _, r := range reqs {
		keySet = append(keySet, r.Key())
		valueSet = append(valueSet, r.ValuesUnsorted()...)
	}
	next := func() int {
		if len(b) == 0 {
			return 0
		}
		v := int(b[0])
		b = b[1:]
		return v
	}
	// Two fixed objects: one without labels, one with every key set to
	// the last value of the vocabulary (one the selector names, if any).
	full := map[string]string{}
	for _, k := range keySet {
		full[k] = valueSet[len(valueSet)-1]
	}
	objs := []*object.Object{indextest.Obj("c1", indextest.PodType, "ns", "bare"), indextest.Obj("c2", indextest.PodType, "ns", "full", indextest.WithLabels(pairs(full)...))}
	for i := 0; len(b) > 0 && i < 30; i++ {
		set := map[string]string{}
		for range next() % 5 {
			set[keySet[next()%len(keySet)]] = valueSet[next()%len(valueSet)]
		}
		objs = append(objs, indextest.Obj(fmt.Sprintf("c%d", 1+i%2), indextest.PodType, fmt.Sprintf("ns%d", i%3), fmt.Sprintf("p%d", i), indextest.WithLabels(pairs(set)...)))
	}
	return objs
}

// pairs returns the labels of m as key, value pairs for withLabels.
func pairs(m map[string]string) []string {
	var kv []string
	for k, v := range m {
		kv = append(kv, k, v)
	}
	return kv
}
