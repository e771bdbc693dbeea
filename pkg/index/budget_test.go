package index_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/fleetcache/fleetcache/internal/indextest"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/planner"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
)

// TestMemoryBudget fills an index past its memory budget and checks the
// policy: bodies kept below three quarters, metadata only above, new objects
// refused at the budget while modifications still apply, and bodies kept
// again once deletions free room.
func TestMemoryBudget(t *testing.T) {
	body := `{"metadata":{"name":"x"},"spec":{"nodeName":"n1","data":"` + strings.Repeat("a", 700) + `"},"status":{"phase":"Running"}}`
	full := int64(index.ObjectOverhead + len(body))
	// Room for 10 objects with their body.
	ix := index.New(index.Options{MemoryBudget: 10 * full})
	pod := func(i int, opts ...func(*object.Object)) *object.Object {
		return indextest.Obj("c1", indextest.PodType, "ns", fmt.Sprintf("p%03d", i), append([]func(*object.Object){indextest.WithLabels("app", "web"), indextest.WithRaw(body)}, opts...)...)
	}
	var kept, metaOnly, refused []string
	for i := range 40 {
		o := pod(i)
		switch {
		case !ix.Upsert(o):
			refused = append(refused, o.Name)
		case o.MetadataOnly():
			metaOnly = append(metaOnly, o.Name)
		default:
			kept = append(kept, o.Name)
		}
	}
	st := ix.Budget()
	t.Logf("kept %d, metadata only %d, refused %d; %+v", len(kept), len(metaOnly), len(refused), st)
	// 7 objects with their body fill three quarters; the rest of the
	// budget holds objects of index.ObjectOverhead each.
	wantMeta := int((10*full - 7*full) / index.ObjectOverhead)
	if len(kept) != 7 || len(metaOnly) != wantMeta || len(refused) != 40-7-wantMeta {
		t.Fatalf("kept %d with their body (want 7), %d metadata only (want %d), %d refused", len(kept), len(metaOnly), wantMeta, len(refused))
	}
	if st.Used > st.Budget || st.MetadataOnly != len(metaOnly) || st.Refused != uint64(len(refused)) {
		t.Errorf("status %+v, want used within the budget, %d metadata only, %d refused", st, len(metaOnly), len(refused))
	}
	if m, r := ix.Degraded("c1", "pods"); m != len(metaOnly) || r != uint64(len(refused)) {
		t.Errorf("Degraded = %d, %d", m, r)
	}

	// A metadata-only object reads as its metadata; labels still select it.
	o := ix.Get(object.Key{Cluster: "c1", Resource: "pods", Namespace: "ns", Name: metaOnly[0]})
	var got map[string]any
	if err := json.Unmarshal(o.Raw(), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": metaOnly[0], "namespace": "ns",
		"uid": string(o.UID), "resourceVersion": "1", "labels": map[string]any{"app": "web"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("metadata-only object (-want +got):\n%s", diff)
	}
	if n := planner.Count(ix, planner.Filter{Selector: indextest.MustSelector(t, "app=web")}); n != len(kept)+len(metaOnly) {
		t.Errorf("app=web counts %d", n)
	}
	if n := planner.Count(ix, planner.Filter{Fields: indextest.MustFields(t, "spec.nodeName=n1")}); n != len(kept) {
		t.Errorf("spec.nodeName=n1 (indexed) counts %d, want the %d objects with a body", n, len(kept))
	}

	// A modification over the budget applies, without its body.
	mod := indextest.Modified(pod(0), "2")
	if !ix.Upsert(mod) || !mod.MetadataOnly() {
		t.Errorf("a modification over the budget: stored %t, metadata only %t", ix.Get(mod.Key()) == mod, mod.MetadataOnly())
	}
	if err := ix.Verify(); err != nil {
		t.Fatal(err)
	}

	// Deleting frees room: new objects keep their body again.
	for i := range 25 {
		ix.Delete(pod(i).Key())
	}
	fresh := pod(100)
	if !ix.Upsert(fresh) || fresh.MetadataOnly() {
		t.Errorf("after deletions a new object is stored %t, metadata only %t", ix.Get(fresh.Key()) == fresh, fresh.MetadataOnly())
	}
	if st := ix.Budget(); st.Used != int64(planner.Count(ix, planner.Filter{}))*index.ObjectOverhead+bodies(ix) {
		t.Errorf("used %d does not add up", st.Used)
	}
	ix.RemoveCluster("c1")
	if st := ix.Budget(); st.Used != 0 || st.MetadataOnly != 0 {
		t.Errorf("empty index: %+v", st)
	}
	if _, r := ix.Degraded("c1", "pods"); r != 0 {
		t.Errorf("a removed cluster still counts %d refusals", r)
	}
}

// TestProjectedMetadataOnly: an object the memory budget keeps as its
// metadata only has no values of its type's Projected paths beside it
// either (TestProjected in package object checks the values of others).
func TestProjectedMetadataOnly(t *testing.T) {
	projected := indextest.Paths("status.phase", "spec.nodeName", "spec.containers[].image", "status.n", "metadata.name")
	ty := *indextest.PodType
	ty.Projected = fieldpath.NewSet(projected)
	ix := index.New(index.Options{MemoryBudget: 2 * index.ObjectOverhead})
	o := indextest.Obj("c1", &ty, "ns", "p", indextest.WithRaw(`{"metadata":{"name":"p"},"spec":{"data":"`+strings.Repeat("a", index.ObjectOverhead)+`"},"status":{"phase":"Running"}}`))
	ix.Upsert(o)
	if got := ix.Get(o.Key()); got == nil || !got.MetadataOnly() {
		t.Fatalf("a budget of two objects' overhead kept %+v", got)
	}
	if v, ok := ix.Get(o.Key()).Projected(fieldpath.MustParse("status.phase")); ok {
		t.Errorf("a metadata-only object has status.phase %q", v)
	}
}

func bodies(ix *index.Index) int64 {
	n := int64(0)
	for _, o := range planner.List(ix, planner.Filter{}, nil, 0).Objects {
		n += int64(o.BodySize())
	}
	return n
}
