package graphql

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/fleetcache/fleetcache/pkg/fanout"
	"github.com/fleetcache/fleetcache/pkg/graphql/filter"
	"github.com/fleetcache/fleetcache/pkg/index/feed"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
	"github.com/fleetcache/fleetcache/pkg/index/views"
)

// noCluster stands for "no cluster" in a filter's cluster list, which an
// empty list cannot say (it means every cluster): no registered cluster
// has an empty name.
const noCluster = ""

// resolveFilter parses a ResourceFilter and narrows its clusters to those
// its clusterSelector matches now. It returns the filter, the clusters it
// names (nil when it selects every cluster) and the selector (nil if none).
func (s *Server) resolveFilter(arg any) (planner.Filter, []string, labels.Selector, error) {
	f, clusters, err := filter.Parse(arg)
	if err != nil {
		return f, nil, nil, badInput("%w", err)
	}
	sel, err := filter.ClusterSelector(arg)
	if err != nil {
		return f, nil, nil, badInput("%w", err)
	}
	if sel == nil {
		return f, clusters, nil, nil
	}
	names, _ := s.opts.Inventory.Narrow(f.Clusters, sel)
	f.Clusters = orNoCluster(names)
	return f, f.Clusters, sel, nil
}

func orNoCluster(names []string) []string {
	if len(names) == 0 {
		return []string{noCluster}
	}
	return names
}

// facetsByClusterLabel sums facets by cluster into facets by the value of
// the clusters' label key, most frequent first, then by value.
func (s *Server) facetsByClusterLabel(byCluster []views.Facet, key string) []views.Facet {
	counts := make(map[string]int, len(byCluster))
	for _, f := range byCluster {
		counts[f.Value] = f.Count
	}
	out := []views.Facet{}
	for v, n := range s.opts.Inventory.CountByLabel(counts, key) {
		out = append(out, views.Facet{Value: v, Count: n})
	}
	slices.SortFunc(out, func(a, b views.Facet) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Value, b.Value))
	})
	return out
}

// selectorSub is a resourceEvents subscription filtered by a
// clusterSelector. It follows the hub with the selector's clusters of the
// moment; when the inventory changes so that clusters start or stop
// matching, it switches at one revision T of the index:
//
//  1. the changes after the last revision the client has seen, up to T,
//     read from the feed with the clusters of before;
//  2. each object, as of T, of the clusters that stopped matching as
//     DELETED and of those that started as ADDED (one snapshot at T);
//  3. the hub's changes after T with the clusters of after.
//
// The client's view is thus always that of one filter at one revision.
type selectorSub struct {
	s    *Server
	sel  labels.Selector
	base planner.Filter // the filter with its clusters as given
	req  fanout.Request[*operation]
	rs   *resourceSub

	clusters []string // the clusters followed now
	version  uint64   // the inventory version they were read at
	pending  []fanout.Change

	// mu guards rs.sub, which next replaces while close, called from
	// anywhere, closes it; closed keeps a replacement from outliving close.
	mu     sync.Mutex
	closed bool
}

// subscribeSelected starts rs following the clusters that sel picks
// among those of f.
func (s *Server) subscribeSelected(rs *resourceSub, f planner.Filter, sel labels.Selector, req fanout.Request[*operation]) *selectorSub {
	ss := &selectorSub{s: s, sel: sel, base: f, req: req, rs: rs}
	ss.clusters, ss.version = s.opts.Inventory.Narrow(f.Clusters, sel)
	ss.subscribe(req.Start)
	return ss
}

// subscribe replaces the hub subscription by one over ss.clusters after
// revision start.
func (ss *selectorSub) subscribe(start uint64) {
	req := ss.req
	req.Filter = ss.base
	req.Filter.Clusters = orNoCluster(ss.clusters)
	req.Start = start
	sub := ss.s.hub.Subscribe(req)
	ss.req.CatchUp = nil // a resume's catch-up, delivered once
	ss.mu.Lock()
	old := ss.rs.sub
	ss.rs.sub = sub
	closed := ss.closed
	ss.mu.Unlock()
	if old != nil {
		old.Close()
	}
	if closed {
		sub.Close() // its Next returns io.EOF
	}
	ss.rs.op = sub.Value()
	ss.rs.at = start
}

func (ss *selectorSub) next(ctx context.Context) (*Result, error) {
	for {
		if len(ss.pending) > 0 {
			c := &ss.pending[0]
			ss.pending = ss.pending[1:]
			if ss.rs.user != nil && !ss.rs.visible(ctx, c) {
				continue
			}
			return ss.rs.payload(c), nil
		}
		version, changed := ss.s.opts.Inventory.Watch()
		if version != ss.version {
			if res, err := ss.switchClusters(); err != nil {
				return res, err
			}
			continue
		}
		if ss.rs.ready() {
			return ss.rs.next(ctx)
		}
		// Wait for a change, or for the inventory to change.
		wctx, cancel := context.WithCancel(ctx)
		stop := context.AfterFunc(changed, cancel)
		res, err := ss.rs.next(wctx)
		stop()
		cancel()
		if err != nil && ctx.Err() == nil && errors.Is(err, context.Canceled) {
			continue // the inventory changed
		}
		return res, err
	}
}

// switchClusters moves the subscription to the clusters the selector
// picks now (see selectorSub).
func (ss *selectorSub) switchClusters() (*Result, error) {
	now, version := ss.s.opts.Inventory.Narrow(ss.base.Clusters, ss.sel)
	ss.version = version
	removed, added := diffSorted(ss.clusters, now)
	if len(removed) == 0 && len(added) == 0 {
		return nil, nil
	}
	f := ss.base
	f.Clusters = append(slices.Clone(removed), added...)
	page := ss.s.ix.ListUnion([]planner.Filter{f}, nil, 0)
	at := page.Revision

	// 1. The changes up to the snapshot, with the clusters of before.
	old := ss.base
	old.Clusters = orNoCluster(ss.clusters)
	m := planner.NewMatcher(old)
	for from := ss.rs.at; from < at; {
		evs, err := ss.s.ix.Events(from, 1024)
		if err != nil {
			return ss.rs.ended(&fanout.ExpiredError{Err: err})
		}
		if len(evs) == 0 {
			break
		}
		for i := range evs {
			ev := &evs[i]
			if ev.Revision > at {
				from = at
				break
			}
			from = ev.Revision
			if typ, obj := fanout.Classify(m, ev); typ != 0 {
				ss.pending = append(ss.pending, fanout.Change{Type: typ, Object: obj, Revision: ev.Revision, Time: ev.Time})
			}
		}
	}
	// 2. The objects of the clusters that changed sides, as of the snapshot.
	gone := map[string]bool{}
	for _, c := range removed {
		gone[c] = true
	}
	for _, o := range page.Objects {
		typ := feed.Added
		if gone[o.Cluster] {
			typ = feed.Deleted
		}
		ss.pending = append(ss.pending, fanout.Change{Type: typ, Object: o, Revision: at})
	}
	// 3. The hub's changes after it, with the clusters of now.
	ss.clusters = now
	ss.subscribe(at)
	return nil, nil
}

// diffSorted returns the elements of the sorted a missing from the sorted
// b, and those of b missing from a.
func diffSorted(a, b []string) (onlyA, onlyB []string) {
	for _, x := range a {
		if _, ok := slices.BinarySearch(b, x); !ok {
			onlyA = append(onlyA, x)
		}
	}
	for _, x := range b {
		if _, ok := slices.BinarySearch(a, x); !ok {
			onlyB = append(onlyB, x)
		}
	}
	return onlyA, onlyB
}

func (ss *selectorSub) ready() bool { return len(ss.pending) > 0 || ss.rs.ready() }

func (ss *selectorSub) close() {
	ss.mu.Lock()
	ss.closed = true
	sub := ss.rs.sub
	ss.mu.Unlock()
	if sub != nil {
		sub.Close()
	}
}
