package index

import (
	"slices"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
	"github.com/fleetcache/fleetcache/pkg/index/object"
)

// Label selectors held by objects (a Service's spec.selector, a map of
// labels that Pods must all carry), indexed the other way round from label
// postings: a posting per cluster, namespace and pair of a selector, so
// that Selecting finds the objects whose selector selects a set of labels
// (a Pod's Services) from the labels' pairs alone, never by reading every
// Service of the namespace. An object's selector selects a set of labels
// when each of its pairs is among them: counting, per object, how many of
// the labels' pairs hold it, the objects whose count is their selector's
// size match.

// selectorPaths are the resources whose objects hold a label selector as
// a map of strings, and the selector's path.
var selectorPaths = map[string]fieldpath.Path{
	"services":               fieldpath.MustParse("spec.selector"),
	"replicationcontrollers": fieldpath.MustParse("spec.selector"),
}

// selectorPair is one pair of a selector, where its object is.
type selectorPair struct{ cluster, namespace, key, value string }

// selectorIndex holds a posting per selectorPair, and the number of pairs
// of each indexed object's selector. Guarded by Index.mu.
type selectorIndex struct {
	pairs map[selectorPair]*Posting
	size  map[uint32]int
}

func newSelectorIndex() selectorIndex {
	return selectorIndex{pairs: map[selectorPair]*Posting{}, size: map[uint32]int{}}
}

// selectorOf returns the pairs of o's selector, sorted by key; nil when o
// has none (its resource holds none, it is empty, or it is not a map of
// strings, which selects nothing).
func selectorOf(o *object.Object, r *object.BodyReader) []selectorPair {
	path, ok := selectorPaths[o.Type.Resource]
	if !ok {
		return nil
	}
	var out []selectorPair
	path.EachIn(r.DocFor(path, o), func(v fieldpath.Value) bool {
		if v.Kind != fieldpath.Object {
			return false
		}
		gjson.ParseBytes(v.AppendJSON(nil)).ForEach(func(k, val gjson.Result) bool {
			if val.Type != gjson.String {
				out = nil
				return false
			}
			out = append(out, selectorPair{o.Cluster, o.Namespace, k.String(), val.String()})
			return true
		})
		return false
	})
	slices.SortFunc(out, func(a, b selectorPair) int { return strings.Compare(a.key, b.key) })
	return out
}

// indexSelectorLocked adds o's selector pairs; insertLocked calls it.
func (ix *Index) indexSelectorLocked(o *object.Object, id uint32) {
	pairs := selectorOf(o, &ix.bodies)
	if len(pairs) == 0 {
		return
	}
	for _, p := range pairs {
		postingFor(ix.selectors.pairs, p).Add(id)
	}
	ix.selectors.size[id] = len(pairs)
}

// unindexSelectorLocked removes o's selector pairs; removeLocked calls it.
func (ix *Index) unindexSelectorLocked(o *object.Object, id uint32) {
	if _, ok := ix.selectors.size[id]; !ok {
		return
	}
	for _, p := range selectorOf(o, &ix.bodies) {
		removeFrom(ix.selectors.pairs, p, id)
	}
	delete(ix.selectors.size, id)
}

// reindexSelectorLocked moves id from old's selector pairs to o's;
// replaceLocked calls it.
func (ix *Index) reindexSelectorLocked(old, o *object.Object, id uint32) {
	if _, ok := selectorPaths[o.Type.Resource]; !ok {
		return
	}
	ix.unindexSelectorLocked(old, id)
	ix.indexSelectorLocked(o, id)
}

// Selecting returns the objects of resource in cluster and namespace whose
// label selector selects labels (each pair of the selector is among
// them), in Position order: a Pod's Services. Only resources that hold a
// selector as a map of labels are indexed (services,
// replicationcontrollers); for others, and for objects stored without
// their body (the memory budget), it returns none. An empty selector
// selects nothing.
func (ix *Index) Selecting(cluster, namespace, resource string, labels object.Labels) []*object.Object {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	hits := map[uint32]int{}
	for _, l := range labels {
		p := ix.selectors.pairs[selectorPair{cluster, namespace, l.Key, l.Value}]
		if p == nil {
			continue
		}
		p.Each(func(id uint32) bool {
			hits[id]++
			return true
		})
	}
	var out []*object.Object
	for id, n := range hits {
		if n != ix.selectors.size[id] {
			continue
		}
		if o := ix.ids.object(id); o.Type.Resource == resource {
			out = append(out, o)
		}
	}
	slices.SortFunc(out, object.CompareObjects)
	return out
}
