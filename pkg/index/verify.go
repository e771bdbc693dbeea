package index

import (
	"errors"
	"fmt"
	"maps"
	"slices"

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
	ix.all.Ascend(nil, func(o *object.Object) bool { all = append(all, o); return true })
	if !slices.IsSortedFunc(all, object.CompareObjects) {
		return errors.New("primary set out of order")
	}
	want := struct {
		kinds, resources, labelKeys, tokens map[string][]*object.Object
		labels                              map[object.Label][]*object.Object
		owners                              map[types.UID][]*object.Object
	}{map[string][]*object.Object{}, map[string][]*object.Object{}, map[string][]*object.Object{}, map[string][]*object.Object{}, map[object.Label][]*object.Object{}, map[types.UID][]*object.Object{}}
	clusters := map[string]int{}
	for _, o := range all {
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
	for _, c := range []struct {
		name string
		err  error
	}{
		{"tokens", samePostings(tokens, want.tokens)},
		{"kinds", samePostings(ix.kinds, want.kinds)},
		{"resources", samePostings(ix.resources, want.resources)},
		{"labels", samePostings(ix.labels, want.labels)},
		{"label keys", samePostings(ix.labelKeys, want.labelKeys)},
		{"owners", samePostings(ix.owners, want.owners)},
		{"creation times", ix.created.verify(all)},
		{"field indexes", ix.verifyFieldsLocked(all)},
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
func (ix *Index) verifyFieldsLocked(all []*object.Object) error {
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
			if err := samePostings(fi.values, want[fi]); err != nil {
				return fmt.Errorf("%s %s: %w", r, fi.path, err)
			}
			if fi.ordered == nil {
				continue
			}
			if err := fi.ordered.verify(objs); err != nil {
				return fmt.Errorf("ordered index of %s %s: %w", r, fi.path, err)
			}
		}
	}
	return nil
}

// samePostings checks that got holds a posting for each key of want, of
// exactly its objects in order, and no other.
func samePostings[K comparable](got map[K]*Posting, want map[K][]*object.Object) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d postings, want %d", len(got), len(want))
	}
	for k, objs := range want {
		p := got[k]
		if p == nil {
			return fmt.Errorf("missing posting %v", k)
		}
		var have []*object.Object
		p.Ascend(nil, func(o *object.Object) bool { have = append(have, o); return true })
		if !slices.Equal(have, objs) {
			return fmt.Errorf("posting %v holds %s, want %s", k, keysOf(have), keysOf(objs))
		}
	}
	return nil
}

// verify checks that the ordered index holds the objects all (in Position
// order) by their values, those without one apart.
func (oi *OrderedIndex) verify(all []*object.Object) error {
	// all is in Position order, which a stable sort keeps among equal
	// values, as the tree does.
	var present, absent []*object.Object
	for _, o := range all {
		if object.SortValueOf(oi.path, o, nil).Kind == object.Absent {
			absent = append(absent, o)
		} else {
			present = append(present, o)
		}
	}
	slices.SortStableFunc(present, func(a, b *object.Object) int {
		return object.CompareSortValues(object.SortValueOf(oi.path, a, nil), object.SortValueOf(oi.path, b, nil))
	})
	var got []*object.Object
	var stale error
	oi.tree.Ascend(func(e orderedEntry) bool {
		if e.v != object.SortValueOf(oi.path, e.o, nil) && stale == nil {
			stale = fmt.Errorf("stale value of %s", e.o.Key())
		}
		got = append(got, e.o)
		return true
	})
	if stale != nil {
		return stale
	}
	if !slices.Equal(got, present) {
		return fmt.Errorf("holds %s, want %s", keysOf(got), keysOf(present))
	}
	var gotAbsent []*object.Object
	oi.absent.Ascend(nil, func(o *object.Object) bool { gotAbsent = append(gotAbsent, o); return true })
	if !slices.Equal(gotAbsent, absent) {
		return fmt.Errorf("holds without a value %s, want %s", keysOf(gotAbsent), keysOf(absent))
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
