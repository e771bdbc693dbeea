package views

import (
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
	"maps"
	"slices"
)

// Contents is what the index holds of one cluster: the resource types and
// the namespaces that have objects. Authorization reads it to know which
// (cluster, namespace, type) a caller's rights must cover.
type Contents struct {
	Cluster string
	// Resources are the resource names with objects, sorted, each with
	// whether the type is namespaced.
	Resources []ResourceContents
	// Namespaces are the namespaces with objects that the filter names,
	// sorted; nil when the filter names none: then ask Namespaces, only if
	// needed (a cluster may have thousands).
	Namespaces []string
}

// ResourceContents is one resource type of a cluster's Contents.
type ResourceContents struct {
	Resource   string
	Namespaced bool
}

// ContentsOf returns the Contents of the clusters of ix that hold objects,
// in cluster order, narrowed to the clusters, resources, kinds and
// namespaces that f names (its other fields are ignored).
func ContentsOf(ix *index.Index, f planner.Filter) []Contents {
	var out []Contents
	q := planner.Compile(f)
	ix.Read(func(r index.Reader) { out = contents(r, q) })
	return out
}

func contents(r index.Reader, q *planner.Query) []Contents {
	clusters := q.Clusters()
	if clusters == nil {
		clusters = r.Clusters()
	}
	namespaced := map[string]bool{}
	wanted := map[string]bool{}
	r.EachType(func(t *object.Type) {
		namespaced[t.Resource] = t.Namespaced
		if (q.Resources() == nil || slices.Contains(q.Resources(), t.Resource)) && q.MatchesKind(t) {
			wanted[t.Resource] = true
		}
	})
	var out []Contents
	for _, c := range clusters {
		st := r.Cluster(c)
		if st == nil {
			continue
		}
		cc := Contents{Cluster: c}
		for _, r := range slices.Sorted(maps.Keys(st.Resources)) {
			if wanted[r] {
				cc.Resources = append(cc.Resources, ResourceContents{Resource: r, Namespaced: namespaced[r]})
			}
		}
		if q.Namespaces() != nil {
			cc.Namespaces = []string{}
			for _, ns := range q.Namespaces() {
				if ns != "" && st.Namespaces[ns] > 0 {
					cc.Namespaces = append(cc.Namespaces, ns)
				}
			}
		}
		out = append(out, cc)
	}
	return out
}
