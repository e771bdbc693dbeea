package index

import (
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

// Contents returns the Contents of the clusters that hold objects, in
// cluster order, narrowed to the clusters, resources, kinds and namespaces
// that f names (its other fields are ignored).
func (ix *Index) Contents(f Filter) []Contents {
	q := compile(f)
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	clusters := q.clusters
	if clusters == nil {
		clusters = ix.clusterNames
	}
	namespaced := make(map[string]bool, len(ix.types))
	wanted := make(map[string]bool, len(ix.types))
	for t := range ix.types {
		namespaced[t.Resource] = t.Namespaced
		if q.resources != nil && !slices.Contains(q.resources, t.Resource) {
			continue
		}
		if (q.kinds != nil || q.bareKinds != nil) && !q.kindMatches(t) {
			continue
		}
		wanted[t.Resource] = true
	}
	var out []Contents
	for _, c := range clusters {
		st := ix.clusters[c]
		if st == nil {
			continue
		}
		cc := Contents{Cluster: c}
		for _, r := range slices.Sorted(maps.Keys(st.resources)) {
			if wanted[r] {
				cc.Resources = append(cc.Resources, ResourceContents{Resource: r, Namespaced: namespaced[r]})
			}
		}
		if q.namespaces != nil {
			cc.Namespaces = []string{}
			for _, ns := range q.namespaces {
				if ns != "" && st.namespaces[ns] > 0 {
					cc.Namespaces = append(cc.Namespaces, ns)
				}
			}
		}
		out = append(out, cc)
	}
	return out
}

// Namespaces returns the namespaces of cluster that hold objects, sorted.
func (ix *Index) Namespaces(cluster string) []string {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	st := ix.clusters[cluster]
	if st == nil {
		return nil
	}
	out := make([]string, 0, len(st.namespaces))
	for ns := range st.namespaces {
		if ns != "" {
			out = append(out, ns)
		}
	}
	slices.Sort(out)
	return out
}
