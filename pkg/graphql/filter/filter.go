package filter

import (
	"errors"
	"fmt"

	"github.com/graphql-go/graphql"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
	"github.com/fleetcache/fleetcache/pkg/index/fieldselector"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
	"github.com/fleetcache/fleetcache/pkg/index/search"
	"github.com/fleetcache/fleetcache/pkg/index/views"
	"github.com/fleetcache/fleetcache/pkg/inventory"
)

// FacetKey is the enum FacetKey: a views.FacetKey, or FacetClusterLabel.
var FacetKey = graphql.NewEnum(graphql.EnumConfig{
	Name:        "FacetKey",
	Description: "What facets group matching objects by.",
	Values: graphql.EnumValueConfigMap{
		"CLUSTER": {Value: views.FacetCluster, Description: "The cluster name."},
		"CLUSTER_LABEL": {Value: FacetClusterLabel, Description: "The value of the cluster label labelKey of the object's cluster " +
			"(Cluster.labels); objects of clusters without it are not counted."},
		"NAMESPACE": {Value: views.FacetNamespace, Description: `The namespace; "" for cluster-scoped objects.`},
		"KIND":      {Value: views.FacetKind, Description: `The kind: "Pod", or "Deployment.apps" outside the core group.`},
		"LABEL":     {Value: views.FacetLabel, Description: "The value of the label labelKey; objects without it are not counted."},
		"FIELD": {Value: views.FacetField, Description: `The values at the path field ("status.phase", "spec.containers[].image"): ` +
			`an object counts once under each distinct value (across an array, once per value), not at all without one. ` +
			`Numbers in their shortest form, booleans as "true" and "false"; objects and arrays are not counted.`},
	},
})

// Input is ResourceFilter, which Parse reads.
var Input = graphql.NewInputObject(graphql.InputObjectConfig{
	Name:        "ResourceFilter",
	Description: "Selects objects. Fields are ANDed, the values of a list are ORed; a null or empty list does not constrain.",
	Fields: graphql.InputObjectConfigFieldMap{
		"clusters":      {Type: stringList(), Description: "Cluster names."},
		"kinds":         {Type: stringList(), Description: `Kinds: "Pod" matches the kind in any group, "Deployment.apps" names the group.`},
		"namespaces":    {Type: stringList(), Description: `Namespaces; "" selects cluster-scoped objects.`},
		"labelSelector": {Type: graphql.String, Description: `A Kubernetes label selector: "app=web,tier in (fe,be),!canary".`},
		"nameContains":  {Type: graphql.String, Description: "A substring of the object name."},
		"ownerUid":      {Type: graphql.String, Description: "The UID of an owner named in the objects' ownerReferences."},
		"fieldSelector": {Type: graphql.String, Description: `Requirements on the values at paths inside the objects, all of which must hold: ` +
			`"status.phase!=Running,spec.nodeName in (node-1,node-2),status.containerStatuses[].restartCount>3". ` +
			`Operators =, ==, !=, in, notin, >, < (numbers), path (present), !path (absent); across an array ([]) some ` +
			`element must satisfy it, for != and notin no element may equal. See "Paths and field selectors" in docs/graphql.md.`},
		"clusterSelector": {Type: graphql.String, Description: `A Kubernetes label selector over the clusters' labels (Cluster.labels): ` +
			`"env=prod,region in (eu,us)". With clusters, the clusters of both. In resourceEvents, a cluster that starts or stops ` +
			`matching (relabelled) brings its objects as ADDED or DELETED.`},
		"search": {Type: graphql.String, Description: searchDesc},
		"through": {Type: throughInput, Description: `Objects whose related objects, in the same cluster, match: ` +
			`{nodes: {labelSelector: "zone=a"}} selects the Pods on Nodes labelled zone=a. Answered by resources, the kinds' ` +
			`root fields and facets; refused by subscriptions and changes. See "Filtering through a relation" in docs/graphql.md.`},
	},
})

const searchDesc = `Words, each of which must begin (case-insensitively) a token of the name, ` +
	`namespace, a label key or value, an annotation value or a container image: "redis prod". Tokens are the runs of ` +
	`letters and digits. See "Search" in docs/graphql.md.`

// Order is the enum SortOrder.
var Order = graphql.NewEnum(graphql.EnumConfig{
	Name:        "SortOrder",
	Description: "The direction of a sort key.",
	Values: graphql.EnumValueConfigMap{
		"ASC":  {Value: "ASC", Description: "Smallest first."},
		"DESC": {Value: "DESC", Description: "Largest first."},
	},
})

// Sort is ResourceSort, a key of a sort, which ParseSort reads.
var Sort = graphql.NewInputObject(graphql.InputObjectConfig{
	Name: "ResourceSort",
	Description: "A sort key: the value at a path. Times sort as times, numbers as numbers, the rest as strings; " +
		"objects without a value come last in either order.",
	Fields: graphql.InputObjectConfigFieldMap{
		"field": {Type: graphql.NewNonNull(graphql.String), Description: `A path that does not cross an array: "metadata.creationTimestamp", "status.phase", "cluster".`},
		"order": {Type: Order, DefaultValue: "ASC", Description: "The direction."},
	},
})

// stringList is [String!].
func stringList() *graphql.List { return graphql.NewList(graphql.NewNonNull(graphql.String)) }

// FacetClusterLabel is FacetKey CLUSTER_LABEL. The index does not know it:
// the engine counts by cluster and sums by the clusters' label.
const FacetClusterLabel views.FacetKey = -1

// ClusterSelector returns the filter argument's clusterSelector, nil when
// there is none.
func ClusterSelector(arg any) (labels.Selector, error) {
	m, _ := arg.(map[string]any)
	s, ok := m["clusterSelector"].(string)
	if !ok || s == "" {
		return nil, nil
	}
	sel, err := inventory.ParseSelector(s)
	if err != nil {
		return nil, err
	}
	return sel, nil
}

// MaxSortKeys bounds the keys of a sort.
const MaxSortKeys = 8

// ParseSort reads resources' sort argument; nil when it is null or empty.
func ParseSort(arg any) ([]planner.SortKey, error) {
	list, _ := arg.([]any)
	if len(list) > MaxSortKeys {
		return nil, fmt.Errorf("sort has %d keys, at most %d are allowed", len(list), MaxSortKeys)
	}
	var keys []planner.SortKey
	for _, item := range list {
		m, _ := item.(map[string]any)
		field, _ := m["field"].(string)
		path, err := fieldpath.Parse(field)
		if err != nil {
			return nil, fmt.Errorf("sort: %w", err)
		}
		order, _ := m["order"].(string)
		keys = append(keys, planner.SortKey{Path: path, Desc: order == "DESC"})
	}
	if err := planner.CheckSort(keys); err != nil {
		return nil, fmt.Errorf("sort: %w", err)
	}
	return keys, nil
}

// FacetBy reads facets' by, labelKey and field arguments: labelKey goes
// with LABEL only and is required there, field likewise with FIELD.
func FacetBy(args map[string]any) (views.FacetBy, error) {
	by := views.FacetBy{}
	by.Key, _ = args["by"].(views.FacetKey)
	labelKey, hasKey := args["labelKey"].(string)
	field, hasField := args["field"].(string)
	switch {
	case (by.Key == views.FacetLabel || by.Key == FacetClusterLabel) && labelKey == "":
		return by, errors.New("facets by LABEL and CLUSTER_LABEL need a labelKey")
	case by.Key != views.FacetLabel && by.Key != FacetClusterLabel && hasKey:
		return by, errors.New("labelKey is only used with by: LABEL and CLUSTER_LABEL")
	case by.Key == views.FacetField && !hasField:
		return by, errors.New("facets by FIELD need a field")
	case by.Key != views.FacetField && hasField:
		return by, errors.New("field is only used with by: FIELD")
	}
	by.Label = labelKey
	if hasField {
		path, err := fieldpath.Parse(field)
		if err != nil {
			return by, err
		}
		by.Field = path
	}
	return by, nil
}

// Parse turns a ResourceFilter argument into a planner.Filter, and
// returns the clusters it names (nil if none). A filter with through is
// refused: SplitThrough reads it where it is answered.
func Parse(arg any) (planner.Filter, []string, error) {
	var f planner.Filter
	m, _ := arg.(map[string]any)
	if m == nil {
		return f, nil, nil
	}
	if m["through"] != nil {
		return f, nil, errThroughHere
	}
	f.Clusters = Strings(m["clusters"])
	f.Kinds = Strings(m["kinds"])
	f.Namespaces = Strings(m["namespaces"])
	if s, ok := m["labelSelector"].(string); ok && s != "" {
		sel, err := labels.Parse(s)
		if err != nil {
			return f, nil, fmt.Errorf("invalid label selector %q: %w", s, err)
		}
		f.Selector = sel
	}
	f.NameContains, _ = m["nameContains"].(string)
	if uid, _ := m["ownerUid"].(string); uid != "" {
		f.OwnerUID = types.UID(uid)
	}
	if s, ok := m["fieldSelector"].(string); ok {
		sel, err := fieldselector.Parse(s)
		if err != nil {
			return f, nil, err
		}
		f.Fields = sel
	}
	if s, ok := m["search"].(string); ok {
		q, err := search.Parse(s)
		if err != nil {
			return f, nil, err
		}
		f.Search = q
	}
	if len(f.Clusters) == 0 {
		return f, nil, nil
	}
	return f, f.Clusters, nil
}

// Strings returns the strings of a list argument; nil for an empty one.
func Strings(v any) []string {
	list, _ := v.([]any)
	if len(list) == 0 {
		return nil
	}
	out := make([]string, 0, len(list))
	for _, e := range list {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}
