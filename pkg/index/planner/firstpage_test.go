package planner_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetcache/fleetcache/internal/indextest"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
)

// TestFirstPageKept reads the first page of one label's posting again
// after each kind of write (index.Reader.FirstByRank keeps it): an object
// that joins the posting and sorts first, a new version of one on the
// page, one that leaves the posting, a delete, and a write elsewhere. Each
// read must be what the objects are at that moment, never a kept page of
// before.
func TestFirstPageKept(t *testing.T) {
	ix := index.New(index.Options{})
	// A sparse posting, far more than a small posting holds, its ids in
	// an order unrelated to their objects' names: the page is ranked
	// from a bitmap, not walked.
	for i := range 3000 {
		n := (i * 37) % 3000
		app := "db"
		if n%30 == 0 {
			app = "web"
		}
		ix.Upsert(indextest.Obj("c1", indextest.PodType, "ns", fmt.Sprintf("p%04d", n), indextest.WithLabels("app", app)))
	}
	f := planner.Filter{Selector: indextest.MustSelector(t, "app=web")}
	check := func(what string) {
		t.Helper()
		for range 2 { // the second read is the kept page's
			got := planner.List(ix, f, nil, 5).Objects
			var want []*object.Object
			all := ix.Objects("c1", "pods")
			slices.SortFunc(all, object.CompareObjects)
			for _, o := range all {
				if v, ok := o.Labels.Lookup("app"); ok && v == "web" && len(want) < 5 {
					want = append(want, o)
				}
			}
			if diff := cmp.Diff(indextest.Keys(want), indextest.Keys(got)); diff != "" {
				t.Fatalf("%s: first page (-want +got):\n%s", what, diff)
			}
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("%s: object %d of the page is not the index's version", what, i)
				}
			}
		}
	}
	check("at first")
	first := indextest.Obj("c1", indextest.PodType, "ns", "a000", indextest.WithLabels("app", "web"))
	ix.Upsert(first)
	check("after an object joined the posting and sorts first")
	ix.Upsert(indextest.Modified(first, "2", indextest.WithLabels("app", "web", "tier", "fe")))
	check("after a new version of an object on the page")
	ix.Upsert(indextest.Modified(ix.Get(first.Key()), "3", indextest.WithLabels("app", "db")))
	check("after an object left the posting")
	ix.Delete(indextest.Obj("c1", indextest.PodType, "ns", "p0000").Key())
	check("after a delete")
	ix.Upsert(indextest.Obj("c1", indextest.PodType, "ns", "a001", indextest.WithLabels("app", "db")))
	check("after a write to another posting")
	if err := ix.Verify(); err != nil {
		t.Error(err)
	}
}
