// Package relations adds the fields that relate kinds to the GraphQL
// schema: Pod.node, Node.pods, Service.pods and Pod.services, the owner
// chain (Resource.owner), a workload's ReplicaSets and Pods, an object's
// events and an Event's object, claims and volumes, the ConfigMaps and
// Secrets a Pod uses and their Pods, Ingress.services,
// HorizontalPodAutoscaler.target, EndpointSlice.service and
// Service.endpointSlices, and Resource.related(kinds:), all of them at
// once (docs/graphql.md, "Relations").
//
// The relations are one table (table.go): a source kind, a field, a
// target kind and a finder that returns the relation's Related objects
// within the source object's cluster: disjoint planner filters (answered
// through postings: labels, owners, the index of a path) and objects found
// by key. The package reads the engine through Engine, which package
// graphql implements: lookups by key, the index of selectors
// (index.Index.Selecting), the caller's rights, and the connection of a
// Related (paging, totalCount, authorization, as resources). Add adds the
// fields of the kinds to their types, leaving out a relation whose target
// kind is not cached; ResourceFields are those of every object, and
// Owners and Children resolve Resource.owners and Resource.children.
//
// Narrow (through.go) answers a filter through a relation
// (ResourceFilter.through: a Pod's Node, an object's owners): it reads the
// related objects the caller may see and narrows the caller's scoped
// filters to one filter per cluster, with the related objects' node names
// or owner UIDs, so that the planner pages, sorts and counts them.
package relations
