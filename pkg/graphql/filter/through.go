package filter

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/graphql-go/graphql"

	"github.com/fleetcache/fleetcache/pkg/index/planner"
)

// Relation names a relation a filter goes through: a field of the
// ThroughFilter input.
type Relation string

// The relations a filter goes through (docs/graphql.md, "Filtering
// through a relation").
const (
	// Nodes selects the Pods whose Node (spec.nodeName) matches.
	Nodes Relation = "nodes"
	// Owners selects the objects an owner of which (ownerReferences), or
	// an owner's owner, matches.
	Owners Relation = "owners"
)

// Through is one relation of a ResourceFilter's through: the objects
// whose related objects, in their cluster, match Filter.
type Through struct {
	Relation Relation
	// Filter selects the related objects: kinds (owners only), labels,
	// name, fields and search; never clusters or namespaces, which are
	// the relation's.
	Filter planner.Filter
	// Limit is the most related objects it may consult in the fleet.
	Limit int
}

// The bounds of RelatedFilter.limit: the default, and the most a query
// may ask. The limit counts in the query's cost (package cost), so the
// cost limit bounds it too.
const (
	DefaultThroughLimit = 1000
	MaxThroughLimit     = 10000
)

// refused are the relations ThroughFilter names only to refuse them, with
// why: they are not cheap.
var refused = map[string]string{
	"services": "the Pods of many Services are a union of label selectors, which the index cannot answer as one query " +
		"(each selector is an intersection of postings; their union would be built and counted Pod by Pod): " +
		"ask for the Services, then their pods",
	"configMaps": "the Pods of many ConfigMaps are a union over 14 reference paths, which would be built Pod by Pod: " +
		"ask for the ConfigMaps, then their pods",
	"secrets": "the Pods of many Secrets are a union over 14 reference paths, which would be built Pod by Pod: " +
		"ask for the Secrets, then their pods",
}

// relatedInput is RelatedFilter: what the related objects must match.
var relatedInput = graphql.NewInputObject(graphql.InputObjectConfig{
	Name: "RelatedFilter",
	Description: "Selects the related objects of a filter through a relation, in the cluster of each object filtered. " +
		"Fields are ANDed, the values of a list are ORed.",
	Fields: graphql.InputObjectConfigFieldMap{
		"kinds": {Type: stringList(), Description: `The owners' kinds, for owners only: "Deployment.apps", "Job", ` +
			`a custom resource's; null: the workloads (Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, CronJob, ReplicationController).`},
		"labelSelector": {Type: graphql.String, Description: `A Kubernetes label selector over the related objects' labels: "zone=a".`},
		"nameContains":  {Type: graphql.String, Description: "A substring of the related objects' names."},
		"fieldSelector": {Type: graphql.String, Description: `Requirements on the values at paths inside the related objects, ` +
			`as ResourceFilter.fieldSelector: "spec.unschedulable!=true".`},
		"search": {Type: graphql.String, Description: searchDesc},
		"limit": {Type: graphql.Int, DefaultValue: DefaultThroughLimit, Description: fmt.Sprintf(
			"The most related objects the filter may consult in the fleet (at most %s). It counts in the query's cost; "+
				"more matching is BAD_USER_INPUT: narrow the related filter, or raise it.", "10,000")},
	},
})

// throughInput is ThroughFilter: the relations a filter goes through.
var throughInput = graphql.NewInputObject(graphql.InputObjectConfig{
	Name: "ThroughFilter",
	Description: "Relations a filter goes through, each within one cluster; given several, an object must match through " +
		`each. Cheap ones only: services, configMaps and secrets are refused (BAD_USER_INPUT). See "Filtering through a ` +
		`relation" in docs/graphql.md.`,
	Fields: graphql.InputObjectConfigFieldMap{
		string(Nodes): {Type: relatedInput, Description: "The Pods whose Node (spec.nodeName) matches, in the same cluster: " +
			"the matching Nodes' names, then one union of postings on the index of spec.nodeName. Selects Pods only."},
		string(Owners): {Type: relatedInput, Description: "The objects an owner of which (ownerReferences), or an owner's owner " +
			"through a ReplicaSet or a Job, matches, in the same cluster: the Pods of Deployments, CronJobs, StatefulSets, " +
			"DaemonSets, Jobs or ReplicaSets labelled so. One union of owner postings."},
		"services":   {Type: relatedInput, Description: "Refused (BAD_USER_INPUT), not cheap: " + refused["services"] + "."},
		"configMaps": {Type: relatedInput, Description: "Refused (BAD_USER_INPUT), not cheap: " + refused["configMaps"] + "."},
		"secrets":    {Type: relatedInput, Description: "Refused (BAD_USER_INPUT), not cheap: " + refused["secrets"] + "."},
	},
})

// errThroughHere refuses a filter through a relation where Parse reads
// filters: subscriptions and changes.
var errThroughHere = errors.New("a filter through a relation (through) is answered by resources, the kinds' root fields " +
	"and facets, not by subscriptions or changes: the related objects move under a stream of changes, so which objects " +
	"match would change without an event of their own (see \"Filtering through a relation\" in docs/graphql.md)")

// SplitThrough reads a ResourceFilter argument's through, and returns the
// argument without it, for Parse. Relations that are not cheap, a related
// filter that does not parse and a limit out of bounds are errors.
func SplitThrough(arg any) (any, []Through, error) {
	m, _ := arg.(map[string]any)
	th, _ := m["through"].(map[string]any)
	if th == nil {
		return arg, nil, nil
	}
	rest := maps.Clone(m)
	delete(rest, "through")
	for _, name := range slices.Sorted(maps.Keys(refused)) {
		if why := refused[name]; th[name] != nil {
			return nil, nil, fmt.Errorf("a filter through %s is not answered: %s (see \"Filtering through a relation\" in docs/graphql.md)", name, why)
		}
	}
	var out []Through
	for _, rel := range []Relation{Nodes, Owners} {
		rm, _ := th[string(rel)].(map[string]any)
		if rm == nil {
			continue
		}
		t := Through{Relation: rel, Limit: DefaultThroughLimit}
		if v, ok := rm["limit"].(int); ok {
			t.Limit = v
		}
		if t.Limit < 1 || t.Limit > MaxThroughLimit {
			return nil, nil, fmt.Errorf("through %s: limit must be between 1 and %d, got %d", rel, MaxThroughLimit, t.Limit)
		}
		if rel == Nodes && rm["kinds"] != nil {
			return nil, nil, fmt.Errorf("through %s: kinds is for owners only: the related objects are Nodes", rel)
		}
		f, _, err := Parse(rm)
		if err != nil {
			return nil, nil, fmt.Errorf("through %s: %w", rel, err)
		}
		t.Filter = f
		out = append(out, t)
	}
	return rest, out, nil
}
