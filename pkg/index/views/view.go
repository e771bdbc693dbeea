package views

import (
	"context"
	"time"

	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/feed"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
)

// View is the read side of an Index, in one value, as the GraphQL API
// reads it: lists, sorted lists and counts (package planner), facets and
// contents (this package), objects by name, and the change feed. It holds
// nothing but the index, and cannot change it.
type View struct{ ix *index.Index }

// Of returns the View of ix.
func Of(ix *index.Index) View { return View{ix: ix} }

// ListUnion is planner.ListUnion of the index.
func (v View) ListUnion(fs []planner.Filter, after *object.Position, limit int) planner.Page {
	return planner.ListUnion(v.ix, fs, after, limit)
}

// ListCountUnion is planner.ListCountUnion of the index.
func (v View) ListCountUnion(fs []planner.Filter, after *object.Position, limit int) (planner.Page, int) {
	return planner.ListCountUnion(v.ix, fs, after, limit)
}

// ListSorted is planner.ListSorted of the index.
func (v View) ListSorted(fs []planner.Filter, keys []planner.SortKey, after *planner.SortedPosition, limit int) (planner.Page, error) {
	return planner.ListSorted(v.ix, fs, keys, after, limit)
}

// CountUnion is planner.CountUnion of the index.
func (v View) CountUnion(fs []planner.Filter) int { return planner.CountUnion(v.ix, fs) }

// FacetsUnion is FacetsUnion of the index.
func (v View) FacetsUnion(fs []planner.Filter, by FacetBy) []Facet { return FacetsUnion(v.ix, fs, by) }

// Contents is ContentsOf the index.
func (v View) Contents(f planner.Filter) []Contents { return ContentsOf(v.ix, f) }

// Namespaces is Index.Namespaces.
func (v View) Namespaces(cluster string) []string { return v.ix.Namespaces(cluster) }

// Lookup is Index.Lookup.
func (v View) Lookup(cluster, namespace, name string) []*object.Object {
	return v.ix.Lookup(cluster, namespace, name)
}

// Selecting is Index.Selecting: the objects of resource in cluster and
// namespace whose label selector selects labels.
func (v View) Selecting(cluster, namespace, resource string, labels object.Labels) []*object.Object {
	return v.ix.Selecting(cluster, namespace, resource, labels)
}

// Epoch is Index.Epoch.
func (v View) Epoch() string { return v.ix.Epoch() }

// Revision is Index.Revision.
func (v View) Revision() uint64 { return v.ix.Revision() }

// Events is Index.Events.
func (v View) Events(after uint64, limit int) ([]feed.Event[*object.Object], error) {
	return v.ix.Events(after, limit)
}

// OldestRevision is Index.OldestRevision.
func (v View) OldestRevision() uint64 { return v.ix.OldestRevision() }

// RevisionBefore is Index.RevisionBefore.
func (v View) RevisionBefore(t time.Time) uint64 { return v.ix.RevisionBefore(t) }

// Wait is Index.Wait.
func (v View) Wait(ctx context.Context, after uint64) error { return v.ix.Wait(ctx, after) }

// ClocksAt is index.Index.ClocksAt.
func (v View) ClocksAt(rev uint64, selected func(index.Stream) bool) []index.Clock {
	return v.ix.ClocksAt(rev, selected)
}

// Since is index.Index.Since.
func (v View) Since(clocks []index.Clock, selected func(index.Stream) bool, match func(*object.Object) bool) ([]feed.Event[*object.Object], uint64, error) {
	return v.ix.Since(clocks, selected, match)
}
