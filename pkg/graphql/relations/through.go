package relations

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/types"

	gqlfilter "github.com/fleetcache/fleetcache/pkg/graphql/filter"
	"github.com/fleetcache/fleetcache/pkg/index/fieldselector"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
)

// hopsOf returns the resources through which owners of kind k reach
// their objects' objects: a Deployment's Pods through its ReplicaSets, a
// CronJob's through its Jobs, a custom resource's (a rollout's) through
// either; none for the kinds that own Pods directly.
func hopsOf(k *object.Type) []string {
	switch k.KindName() {
	case "Deployment.apps":
		return []string{replicaSetsRes}
	case "CronJob.batch":
		return []string{"jobs.batch"}
	case "ReplicaSet.apps", "Job.batch", "StatefulSet.apps", "DaemonSet.apps", "ReplicationController":
		return nil
	}
	return []string{replicaSetsRes, "jobs.batch"}
}

// workloadKinds are the owners a filter through owners consults when it
// names no kinds: the kinds that own Pods, and ReplicaSets and Jobs.
var workloadKinds = []string{"Deployment.apps", "ReplicaSet.apps", "StatefulSet.apps", "DaemonSet.apps", "Job.batch",
	"CronJob.batch", "ReplicationController"}

// constraint is what one relation of a filter through relations asks of
// the objects of one cluster: a node name in nodes, an owner in owners.
type constraint struct {
	nodes  []string
	owners []types.UID
}

// Narrow narrows fs, the disjoint filters of what the caller of ctx may
// see of a filter's objects (as the engine's scope gives them), to the
// objects whose related objects, in their own cluster, match each of
// through (docs/graphql.md, "Filtering through a relation"): a filter of
// fs becomes one filter per cluster that has matching related objects,
// with spec.nodeName in their names (nodes) or an owner among their UIDs
// (owners), so that paging, sorting and counting stay the planner's.
//
// The related objects consulted are those the caller may see; it returns
// too the clusters where it may see none of a related kind the index
// holds there, or whose access reviews failed: the answer is incomplete
// there. More related objects than a Through's Limit is an error.
func Narrow(ctx context.Context, e Engine, fs []planner.Filter, through []gqlfilter.Through) ([]planner.Filter, []string, error) {
	if len(through) == 0 || len(fs) == 0 {
		return fs, nil, nil
	}
	targets, namespaces := targetClusters(fs), targetNamespaces(fs)
	var hidden []string
	perCluster := map[string]*constraint{}
	for i, t := range through {
		found, h, err := consult(ctx, e, t, targets, namespaces)
		if err != nil {
			return nil, nil, err
		}
		hidden = union(hidden, h)
		if i == 0 {
			perCluster = found
			continue
		}
		for c, con := range perCluster { // an object must match through each
			if other := found[c]; other == nil {
				delete(perCluster, c)
			} else {
				con.nodes = append(con.nodes, other.nodes...)
				con.owners = append(con.owners, other.owners...)
			}
		}
	}
	var out []planner.Filter
	for _, f := range fs {
		for _, c := range slices.Sorted(maps.Keys(perCluster)) {
			if f.Clusters != nil && !slices.Contains(f.Clusters, c) {
				continue
			}
			if nf, ok := narrowed(f, c, perCluster[c]); ok {
				out = append(out, nf)
			}
		}
	}
	return out, hidden, nil
}

// narrowed returns f in cluster c with con's constraints; false when it
// can select nothing (a filter through Nodes of other resources than
// Pods).
func narrowed(f planner.Filter, c string, con *constraint) (planner.Filter, bool) {
	f.Clusters = []string{c}
	if con.nodes != nil {
		switch {
		case f.Resources == nil:
			f.Resources = []string{podsResource}
		case slices.Contains(f.Resources, podsResource):
			f.Resources = []string{podsResource}
		default:
			return f, false
		}
		f.Fields = fieldselector.Of(append(f.Fields.Requirements(), fieldselector.CompareIn(nodeNamePath, con.nodes...))...)
	}
	if con.owners != nil {
		f.OwnerUIDs = con.owners
	}
	return f, true
}

// targetClusters returns the clusters fs name, nil when one names none
// (every cluster).
func targetClusters(fs []planner.Filter) []string {
	var out []string
	for _, f := range fs {
		if f.Clusters == nil {
			return nil
		}
		out = union(out, f.Clusters)
	}
	return out
}

// targetNamespaces returns the namespaces fs name, and "" (the
// cluster-scoped objects), nil when one names none (every namespace).
func targetNamespaces(fs []planner.Filter) []string {
	out := []string{""}
	for _, f := range fs {
		if f.Namespaces == nil {
			return nil
		}
		out = union(out, f.Namespaces)
	}
	return out
}

// consult finds the related objects of t that the caller may see in
// targets (nil: every cluster), owners in namespaces (nil: any), at most
// t.Limit of them, and returns the
// constraint of each cluster that has some, and the clusters hidden from
// the caller.
func consult(ctx context.Context, e Engine, t gqlfilter.Through, targets, namespaces []string) (map[string]*constraint, []string, error) {
	rf := t.Filter
	rf.Clusters = targets
	if t.Relation == gqlfilter.Nodes {
		rf.Resources = []string{"nodes"}
	} else {
		// An owner is in its object's namespace, or cluster-scoped.
		rf.Namespaces = namespaces
		if rf.Kinds == nil {
			rf.Kinds = workloadKinds
		}
	}
	related, hidden := visibleFind(ctx, e, rf, targets, t.Limit)
	if len(related) > t.Limit {
		return nil, nil, tooMany(t, "")
	}
	out := map[string]*constraint{}
	at := func(c string) *constraint {
		if out[c] == nil {
			out[c] = &constraint{}
		}
		return out[c]
	}
	for _, o := range related {
		if t.Relation == gqlfilter.Nodes {
			at(o.Cluster).nodes = append(at(o.Cluster).nodes, o.Name)
		} else {
			at(o.Cluster).owners = append(at(o.Cluster).owners, o.UID)
		}
	}
	// The owners' ReplicaSets and Jobs, which own too: in their owners'
	// namespaces, so that those are all a partial denial is asked of.
	hf := planner.Filter{Namespaces: rf.Namespaces}
	for _, o := range related {
		if hops := hopsOf(o.Type); t.Relation == gqlfilter.Owners && hops != nil {
			hf.Clusters = union(hf.Clusters, []string{o.Cluster})
			hf.Resources = union(hf.Resources, hops)
			hf.OwnerUIDs = append(hf.OwnerUIDs, o.UID)
		}
	}
	if hf.OwnerUIDs != nil {
		// One query over the owner postings of all of them.
		left := t.Limit - len(related)
		hops, h := visibleFind(ctx, e, hf, hf.Clusters, left)
		if len(hops) > left {
			return nil, nil, tooMany(t, " with their ReplicaSets and Jobs")
		}
		hidden = union(hidden, h)
		for _, o := range hops {
			// Only an owner of its own cluster: UIDs are unique within one.
			if slices.ContainsFunc(out[o.Cluster].owners, o.HasOwner) {
				at(o.Cluster).owners = append(at(o.Cluster).owners, o.UID)
			}
		}
	}
	return out, hidden, nil
}

// visibleFind returns the first limit+1 objects of rf that the caller of
// ctx may see, and the clusters of targets (nil: none) where the index
// holds objects of a resource of rf that the caller may not list (in any
// namespace, or in some: partlyHidden), or whose access reviews failed.
func visibleFind(ctx context.Context, e Engine, rf planner.Filter, targets []string, limit int) ([]*object.Object, []string) {
	visible, hidden := e.Scope(ctx, rf)
	if targets != nil {
		for c, resources := range e.Holding(rf) {
			if !slices.Contains(targets, c) {
				continue
			}
			for _, r := range resources {
				i := slices.IndexFunc(visible, func(f planner.Filter) bool { return selects(f.Clusters, c) && selects(f.Resources, r) })
				if i < 0 || partlyHidden(e, rf, visible[i], c, r) {
					hidden = union(hidden, []string{c})
					break
				}
			}
		}
	}
	return e.Find(visible, limit+1), hidden
}

// partlyHidden reports whether the index holds objects of resource r in
// cluster c in namespaces that rf names (nil: any) but vf, the filter of
// what the caller may see of them, leaves out: the caller may list r in
// some namespaces only, and some of its objects were not consulted. Only
// the type's presence is asked, as for a type hidden in all namespaces,
// so that the answer says nothing of what the related filter matches.
func partlyHidden(e Engine, rf, vf planner.Filter, c, r string) bool {
	if vf.Namespaces == nil {
		return false
	}
	candidates := rf.Namespaces
	if candidates == nil {
		candidates = e.Namespaces(c)
	}
	var rest []string
	for _, ns := range candidates {
		if ns != "" && !slices.Contains(vf.Namespaces, ns) {
			rest = append(rest, ns)
		}
	}
	return rest != nil && len(e.Find([]planner.Filter{{Clusters: []string{c}, Resources: []string{r}, Namespaces: rest}}, 1)) > 0
}

// selects reports whether a filter's list of values (nil: any) holds v.
func selects(values []string, v string) bool { return values == nil || slices.Contains(values, v) }

// tooMany is the error of a filter through more related objects than its
// limit.
func tooMany(t gqlfilter.Through, with string) error {
	return fmt.Errorf("the filter through %s matches more than %d objects%s (its limit): narrow the related filter "+
		"(kinds, labelSelector, fieldSelector), or raise through.%s.limit (at most %d; it counts in the query's cost)",
		t.Relation, t.Limit, with, t.Relation, gqlfilter.MaxThroughLimit)
}

// union returns the sorted union of a and b, without duplicates.
func union(a, b []string) []string {
	if len(b) == 0 {
		return a
	}
	out := append(slices.Clone(a), b...)
	slices.Sort(out)
	return slices.Compact(out)
}
