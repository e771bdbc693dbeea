package index

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"k8s.io/apimachinery/pkg/types"
)

// Verify checks that every secondary index and count agrees with the
// primary order, and returns an error describing the first disagreement.
// It reads every object with the read lock held: tests call it after
// churn (see internal/indextest), nothing else should.
func (ix *Index) Verify() error {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	var all []*object.Object
	id := map[*object.Object]uint32{}
	ix.all.Ascend(func(e entry) bool {
		all = append(all, e.o)
		id[e.o] = e.id
		return true
	})
	if !slices.IsSortedFunc(all, object.CompareObjects) {
		return errors.New("primary set out of order")
	}
	if err := ix.verifyIDsLocked(all, id); err != nil {
		return err
	}
	for i := 1; i < len(all); i++ {
		if ix.ranks.of(id[all[i-1]]) >= ix.ranks.of(id[all[i]]) {
			return fmt.Errorf("the rank of %s is not below that of %s", all[i-1].Key(), all[i].Key())
		}
	}
	for _, o := range all {
		r, b, g := ix.ranks.of(id[o]), id[o]>>rankBlockBits, id[o]>>rankRegionBits
		if r < ix.ranks.lo[b] || r > ix.ranks.hi[b] || r < ix.ranks.rlo[g] || r > ix.ranks.rhi[g] {
			return fmt.Errorf("the rank of %s lies outside its block's or region's bounds", o.Key())
		}
	}
	want := struct {
		kinds, resources, labelKeys, tokens, clusters, namespaces map[string][]*object.Object
		labels                                                    map[object.Label][]*object.Object
		owners                                                    map[types.UID][]*object.Object
	}{map[string][]*object.Object{}, map[string][]*object.Object{}, map[string][]*object.Object{}, map[string][]*object.Object{},
		map[string][]*object.Object{}, map[string][]*object.Object{}, map[object.Label][]*object.Object{}, map[types.UID][]*object.Object{}}
	clusters := map[string]int{}
	for _, o := range all {
		// Field indexes read the values kept beside the body: they must
		// be the body's.
		for _, p := range o.Type.Projected.Paths() {
			if v, ok := o.Projected(p); ok && !bytes.Equal(v, p.AppendJSONIn(nil, o.Doc())) {
				return fmt.Errorf("%s keeps %s at %s, its body has %s", o.Key(), v, p, p.AppendJSONIn(nil, o.Doc()))
			}
		}
		want.clusters[o.Cluster] = append(want.clusters[o.Cluster], o)
		want.namespaces[o.Namespace] = append(want.namespaces[o.Namespace], o)
		want.kinds[o.Type.KindName()] = append(want.kinds[o.Type.KindName()], o)
		want.resources[o.Type.Resource] = append(want.resources[o.Type.Resource], o)
		for _, l := range o.Labels {
			want.labels[l] = append(want.labels[l], o)
			want.labelKeys[l.Key] = append(want.labelKeys[l.Key], o)
		}
		for _, r := range o.Owners {
			want.owners[r.UID] = append(want.owners[r.UID], o)
		}
		for _, tok := range searchTokens(o, nil) {
			want.tokens[tok] = append(want.tokens[tok], o)
		}
		clusters[o.Cluster]++
	}
	tokens := map[string]*Posting{}
	ix.tokens.Prefix("", func(tok string, p *Posting) bool { tokens[tok] = p; return true })
	for tok, p := range ix.recentTokens {
		if tokens[tok] != p {
			return fmt.Errorf("recent tokens: %q is not the token tree's posting", tok)
		}
	}
	for _, c := range []struct {
		name string
		err  error
	}{
		{"tokens", samePostings(tokens, want.tokens, id)},
		{"clusters", samePostings(ix.clusterIDs, want.clusters, id)},
		{"namespaces", samePostings(ix.namespaceIDs, want.namespaces, id)},
		{"kinds", samePostings(ix.kinds, want.kinds, id)},
		{"resources", samePostings(ix.resources, want.resources, id)},
		{"labels", samePostings(flatLabels(ix.labels), want.labels, id)},
		{"label keys", samePostings(ix.labelKeys, want.labelKeys, id)},
		{"owners", samePostings(ix.owners, want.owners, id)},
		{"creation times", verifyOrdered(ix.created, creationTimestamp, all)},
		{"field indexes", ix.verifyFieldsLocked(all, id)},
		{"selectors", ix.verifySelectorsLocked(all, id)},
	} {
		if c.err != nil {
			return fmt.Errorf("%s: %w", c.name, c.err)
		}
	}
	if len(ix.clusters) != len(clusters) || len(ix.clusterNames) != len(clusters) {
		return errors.New("cluster count")
	}
	for c, n := range clusters {
		if st := ix.clusters[c]; st == nil || st.Objects != n {
			return fmt.Errorf("cluster %s count", c)
		}
	}
	return nil
}

// verifyFieldsLocked checks that each path's postings hold exactly the
// objects with their values, that the ordered indexes hold the objects of
// their resource in order, and that the kinds counted per resource are
// those of the objects held (all, in Position order).
func (ix *Index) verifyFieldsLocked(all []*object.Object, id map[*object.Object]uint32) error {
	kinds := map[string]map[string]int{}
	want := map[*FieldIndex]map[string][]*object.Object{}
	for _, o := range all {
		if kinds[o.Type.Resource] == nil {
			kinds[o.Type.Resource] = map[string]int{}
		}
		kinds[o.Type.Resource][o.Type.KindName()]++
		for _, fi := range ix.fields.byResource[o.Type.Resource] {
			if want[fi] == nil {
				want[fi] = map[string][]*object.Object{}
			}
			for _, v := range fieldValues(fi.path, o, nil, nil) {
				want[fi][v] = append(want[fi][v], o)
			}
		}
	}
	if !maps.EqualFunc(kinds, ix.fields.kinds, maps.Equal) {
		return fmt.Errorf("kinds per resource: counted %v, objects have %v", ix.fields.kinds, kinds)
	}
	for r, fis := range ix.fields.byResource {
		var objs []*object.Object
		for _, o := range all {
			if o.Type.Resource == r {
				objs = append(objs, o)
			}
		}
		for _, fi := range fis {
			if err := samePostings(fi.values, want[fi], id); err != nil {
				return fmt.Errorf("%s %s: %w", r, fi.path, err)
			}
			if fi.ordered == nil {
				continue
			}
			if err := verifyOrdered(fi.ordered, fi.path, objs); err != nil {
				return fmt.Errorf("ordered index of %s %s: %w", r, fi.path, err)
			}
		}
	}
	return nil
}

// flatLabels returns the label postings by label.
func flatLabels(labels map[string]map[string]*Posting) map[object.Label]*Posting {
	out := map[object.Label]*Posting{}
	for k, values := range labels {
		if len(values) == 0 {
			out[object.Label{Key: k}] = nil // an empty map left behind: reported
		}
		for v, p := range values {
			out[object.Label{Key: k, Value: v}] = p
		}
	}
	return out
}

// verifyIDsLocked checks that the objects all (in Position order) have
// distinct ids (id) that lead back to them, and that every other id is
// free.
func (ix *Index) verifyIDsLocked(all []*object.Object, id map[*object.Object]uint32) error {
	if len(id) != len(all) {
		return fmt.Errorf("%d objects in the primary order, %d distinct", len(all), len(id))
	}
	held := 0
	for _, o := range ix.ids.objs {
		if o != nil {
			held++
		}
	}
	if held != len(all) || held+len(ix.ids.free) != len(ix.ids.objs) {
		return fmt.Errorf("%d ids held and %d free of %d, for %d objects", held, len(ix.ids.free), len(ix.ids.objs), len(all))
	}
	for _, o := range all {
		if ix.ids.object(id[o]) != o {
			return fmt.Errorf("the id of %s leads elsewhere", o.Key())
		}
	}
	return ix.verifyLabelSetsLocked(all, id)
}

// verifyLabelSetsLocked checks that the label set of each id is its
// object's labels, that free ids hold none, and that each set is counted
// as often as ids hold it, under its encoding.
func (ix *Index) verifyLabelSetsLocked(all []*object.Object, id map[*object.Object]uint32) error {
	s := &ix.labelSets
	refs := make([]int, len(s.sets))
	for _, o := range all {
		n := uint32(0)
		if int(id[o]) < len(s.of) {
			n = s.of[id[o]]
		}
		if !slices.Equal(s.sets[n].labels, o.Labels) {
			return fmt.Errorf("the label set of %s holds %v, want %v", o.Key(), s.sets[n].labels, o.Labels)
		}
		refs[n]++
	}
	for _, free := range ix.ids.free {
		if int(free) < len(s.of) && s.of[free] != 0 {
			return fmt.Errorf("free id %d holds label set %d", free, s.of[free])
		}
	}
	held := 0
	for n := 1; n < len(s.sets); n++ {
		if s.sets[n].refs != refs[n] {
			return fmt.Errorf("label set %d (%v) counts %d ids, %d hold it", n, s.sets[n].labels, s.sets[n].refs, refs[n])
		}
		if refs[n] == 0 {
			continue
		}
		held++
		if m, ok := s.byKey[string(encodeLabels(nil, s.sets[n].labels))]; !ok || m != uint32(n) {
			return fmt.Errorf("label set %d (%v) is not found by its labels", n, s.sets[n].labels)
		}
	}
	if held != len(s.byKey) || held+len(s.free)+1 != len(s.sets) {
		return fmt.Errorf("%d label sets held, %d by their labels, %d free of %d", held, len(s.byKey), len(s.free), len(s.sets))
	}
	return nil
}

// samePostings checks that got holds a posting for each key of want, of
// exactly the ids (id) of its objects, and no other.
func samePostings[K comparable](got map[K]*Posting, want map[K][]*object.Object, id map[*object.Object]uint32) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d postings, want %d", len(got), len(want))
	}
	for k, objs := range want {
		p := got[k]
		if p == nil {
			return fmt.Errorf("missing posting %v", k)
		}
		ids := make([]uint32, len(objs))
		for i, o := range objs {
			ids[i] = id[o]
		}
		slices.Sort(ids)
		ids = slices.Compact(ids) // an object may name one owner twice
		var have []uint32
		p.Each(func(id uint32) bool { have = append(have, id); return true })
		if !slices.Equal(have, ids) {
			return fmt.Errorf("posting %v holds ids %v, want those of %s: %v", k, have, keysOf(objs), ids)
		}
	}
	return nil
}

// verifyOrdered checks, through its methods, that the ordered index oi of
// path holds the objects all (in Position order) by their values, those
// without one after them.
func verifyOrdered(oi OrderedIndex, path fieldpath.Path, all []*object.Object) error {
	// all is in Position order, which a stable sort keeps among equal
	// values, as the index does.
	var want, absent []*object.Object
	for _, o := range all {
		if object.SortValueOf(path, o, nil).Kind == object.Absent {
			absent = append(absent, o)
		} else {
			want = append(want, o)
		}
	}
	slices.SortStableFunc(want, func(a, b *object.Object) int {
		return object.CompareSortValues(object.SortValueOf(path, a, nil), object.SortValueOf(path, b, nil))
	})
	want = append(want, absent...)
	var got []*object.Object
	var stale error
	for g, ok := oi.Min(); ok; g, ok = oi.Above(g) {
		oi.AscendValue(g, nil, func(o *object.Object) bool {
			if v := object.SortValueOf(path, o, nil); object.CompareSortValues(v, g) != 0 && stale == nil {
				stale = fmt.Errorf("stale value of %s", o.Key())
			}
			got = append(got, o)
			return true
		})
	}
	oi.AscendAbsent(nil, func(o *object.Object) bool { got = append(got, o); return true })
	switch {
	case stale != nil:
		return stale
	case !slices.Equal(got, want):
		return fmt.Errorf("holds %s, want %s", keysOf(got), keysOf(want))
	case oi.Len() != len(want):
		return fmt.Errorf("Len %d, holds %d", oi.Len(), len(want))
	}
	return nil
}

// keysOf returns the objects' keys, for messages.
func keysOf(objs []*object.Object) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = o.Key().String()
	}
	return out
}

// verifySelectorsLocked checks the selector index against the objects'
// selectors.
func (ix *Index) verifySelectorsLocked(all []*object.Object, id map[*object.Object]uint32) error {
	want := map[selectorPair][]*object.Object{}
	sizes := 0
	for _, o := range all {
		pairs := selectorOf(o, nil)
		for _, p := range pairs {
			want[p] = append(want[p], o)
		}
		if len(pairs) > 0 {
			sizes++
			if ix.selectors.size[id[o]] != len(pairs) {
				return fmt.Errorf("%s: selector of %d pairs, recorded %d", o.Key(), len(pairs), ix.selectors.size[id[o]])
			}
		}
	}
	if sizes != len(ix.selectors.size) {
		return fmt.Errorf("%d objects with a selector, %d recorded", sizes, len(ix.selectors.size))
	}
	return samePostings(ix.selectors.pairs, want, id)
}
