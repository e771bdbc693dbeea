package graphql

import (
	"encoding/json"
	"maps"
	"strconv"
	"time"

	"github.com/graphql-go/graphql"

	"github.com/fleetcache/fleetcache/pkg/columns"
	"github.com/fleetcache/fleetcache/pkg/fanout"
	"github.com/fleetcache/fleetcache/pkg/graphql/changes"
	"github.com/fleetcache/fleetcache/pkg/graphql/cursor"
	"github.com/fleetcache/fleetcache/pkg/graphql/filter"
	"github.com/fleetcache/fleetcache/pkg/graphql/fleet"
	"github.com/fleetcache/fleetcache/pkg/graphql/relations"
	"github.com/fleetcache/fleetcache/pkg/graphql/typed"
	"github.com/fleetcache/fleetcache/pkg/index/feed"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/views"
	"github.com/fleetcache/fleetcache/pkg/openapi"
)

// The schema, in SDL (descriptions left out):
//
//	scalar JSON
//	scalar Time
//
//	type Query {
//	  clusters(selector: String): [Cluster!]!
//	  cluster(name: String!): Cluster
//	  resource(cluster: String!, kind: String!, namespace: String, name: String!): Resource
//	  resources(filter: ResourceFilter, sort: [ResourceSort!], first: Int = 100, after: String): ResourceConnection!
//	  facets(filter: ResourceFilter, by: FacetKey!, labelKey: String, field: String): [Facet!]!
//	  changes(filter: ResourceFilter, since: String, until: String, first: Int = 100, after: String,
//	          order: SortOrder = ASC): ChangeConnection!
//	}
//
//	type ChangeConnection { edges: [ResourceEvent!]!  pageInfo: ChangePageInfo!  revision: String!  truncated: Boolean! }
//	type ChangePageInfo { hasNextPage: Boolean!  endCursor: String }
//
//	(Query also has fleetcache: Fleetcache, the process's own health;
//	Cluster has server, kubernetesVersion and history: [StatusPeriod!]!;
//	ResourceSync has initialSyncSeconds.)
//
//	input ResourceFilter {
//	  clusters: [String!]  kinds: [String!]  namespaces: [String!]
//	  labelSelector: String  nameContains: String  ownerUid: String  fieldSelector: String  search: String
//	  clusterSelector: String
//	}
//
//	enum SortOrder { ASC DESC }
//	input ResourceSort { field: String!  order: SortOrder = ASC }
//
//	interface Resource {
//	  cluster: String!  apiVersion: String!  kind: String!  resource: String!
//	  namespace: String  name: String!  uid: String!  resourceVersion: String!
//	  labels: JSON!  annotations: JSON!  creationTimestamp: Time  object: JSON!
//	  field(path: String!): JSON
//	  owners: [Resource!]!  children: [Resource!]!
//	  columns(age: Boolean = false): [Column!]!
//	}
//	type UntypedResource implements Resource { (Resource's fields) }
//	type Column { name: String!  value: String!  priority: Int! }
//
//	(Each kind of Options.Kinds: a type that implements Resource with the
//	schema's properties, Pod { …  metadata: PodMetadata  spec: PodSpec
//	status: PodStatus  node: Resource }, a root field pods(filter, sort,
//	first, after): PodConnection! and PodConnection, PodEdge; Node.pods and
//	Service.pods are ResourceConnections. See package typed.)
//
//	type ResourceConnection {
//	  edges: [ResourceEdge!]!  pageInfo: PageInfo!  totalCount: Int!
//	  revision: String!  staleClusters: [String!]!  staleness: [StaleCluster!]!  deniedClusters: [String!]!
//	}
//	type ResourceEdge { cursor: String!  node: Resource! }
//	type PageInfo { hasNextPage: Boolean!  endCursor: String }
//
//	enum FacetKey { CLUSTER CLUSTER_LABEL NAMESPACE KIND LABEL FIELD }
//	type Facet { value: String!  count: Int! }
//
//	enum SyncStatus { PENDING SYNCING SYNCED DEGRADED DISCONNECTED }
//	type Cluster {
//	  name: String!  status: SyncStatus!  stale: Boolean!  lastSyncTime: Time  lastEventTime: Time
//	  objectCount: Int!  message: String  resources: [ResourceSync!]!
//	  labels: JSON!  source: String  controlPlaneHealthy: Boolean  controlPlaneMessage: String
//	}
//	type ResourceSync {
//	  resource: String!  kind: String!  status: SyncStatus!  objectCount: Int!  lastError: String
//	  lastSyncTime: Time  lastEventTime: Time  metadataOnly: Int!  refused: Int!
//	}
//
//	type Subscription {
//	  resourceEvents(filter: ResourceFilter, since: String): ResourceEvent!
//	  clusterHealth(cluster: String): Cluster!
//	}
//	enum EventType { ADDED MODIFIED DELETED }
//	type ResourceEvent { type: EventType!  resource: Resource!  cursor: String!  time: Time }
//
// Cluster also has removed: Boolean!, true only in the clusterHealth event
// that reports the cluster's removal.

// jsonScalar is any JSON value. Its serialized values are written to the
// response as they are: a json.RawMessage (an object's stored bytes) is
// copied, not re-encoded.
var jsonScalar = typed.JSON

var eventTypeEnum = graphql.NewEnum(graphql.EnumConfig{
	Name:        "EventType",
	Description: "What happened to an object, as the subscription's filter sees it.",
	Values: graphql.EnumValueConfigMap{
		"ADDED":    {Value: feed.Added, Description: "The object was created, or started to match the filter."},
		"MODIFIED": {Value: feed.Modified, Description: "The object changed and matches the filter before and after."},
		"DELETED":  {Value: feed.Deleted, Description: "The object was deleted (or its cluster removed), or stopped matching the filter."},
	},
})

func nonNullList(t graphql.Type) *graphql.NonNull {
	return graphql.NewNonNull(graphql.NewList(graphql.NewNonNull(t)))
}

// newSchema builds the schema, with a type and a root field for each kind
// snap holds (nil: none, and no Resource is typed); its resolvers read s.
// Each object type is built by a function of its own, from the types its
// fields return.
func (s *Server) newSchema(snap *openapi.Snapshot) (*generation, error) {
	var types *typed.Types
	resource, resourceFields := s.resourceType(func(o *object.Object) *graphql.Object { return types.Of(o.Type.GVR.Group, o.Type.Kind) })
	pages := pageTypes{pageInfo: pageInfoType(), staleCluster: fleet.StaleClusterType()}
	conn := s.connectionType("Resource", resource.Interface, pages)
	// Resource's relations (owner, related) need its connection: added
	// now, and given to every kind with the other fields of Resource.
	rels := relations.Schema{Resource: resource.Interface, Untyped: resource.untyped, Connection: conn, PageArgs: s.pageArgs}
	for name, f := range relations.ResourceFields(relationEngine{s}, rels) {
		resource.Interface.AddFieldConfig(name, f)
		resource.untyped.AddFieldConfig(name, f)
	}
	kindFields := func() graphql.Fields {
		fields := resourceFields()
		maps.Copy(fields, relations.ResourceFields(relationEngine{s}, rels))
		return fields
	}
	cluster := s.fleet.ClusterType()
	resourceEvent := s.resourceEventType("ResourceEvent", resource.Interface)
	query := s.queryType(resource.Interface, conn, cluster, s.changes.Field(resourceEvent, changes.Inputs{Filter: filter.Input, Order: filter.Order,
		DefaultPageSize: s.opts.DefaultPageSize, MaxPageSize: s.opts.MaxPageSize}))
	subscription := s.subscriptionType(resourceEvent, cluster)
	extra := []graphql.Type{resource.untyped}
	kindEvents := map[string]string{}
	if snap != nil {
		types = typed.Build(snap, typed.Options{Resource: resource.Interface, Fields: kindFields, JSON: jsonScalar,
			TypeNames: s.reserved.types, FieldNames: s.reserved.fields})
		for _, k := range types.Kinds {
			query.AddFieldConfig(k.Field, s.kindField(k, s.connectionType(k.Type.Name(), k.Type, pages)))
			if name := kindEventsName(k); subscription.Fields()[name] == nil {
				subscription.AddFieldConfig(name, s.kindEventsField(k, s.resourceEventType(k.Type.Name()+"Event", k.Type)))
				kindEvents[name] = k.Resource
			}
			extra = append(extra, k.Type)
		}
	}
	rels.Types = types
	relations.Add(relationEngine{s}, rels)
	schema, err := graphql.NewSchema(graphql.SchemaConfig{Query: query, Subscription: subscription, Types: extra})
	if err != nil {
		return nil, err
	}
	return &generation{schema: schema, types: types, kindEvents: kindEvents}, nil
}

// resourceTypes are Resource, the interface of every cached object, and
// UntypedResource, the type of objects whose kind has no type of its own.
type resourceTypes struct {
	*graphql.Interface
	untyped *graphql.Object
}

// resourceType returns Resource, whose owners and children are Resources
// too, with a function that returns its fields (each typed kind has them)
// and UntypedResource. An object's type is what typeOf returns, else
// UntypedResource.
func (s *Server) resourceType(typeOf func(*object.Object) *graphql.Object) (resourceTypes, func() graphql.Fields) {
	var r resourceTypes
	r.Interface = graphql.NewInterface(graphql.InterfaceConfig{
		Name: "Resource",
		Description: "One cached Kubernetes object of one cluster. Each kind whose OpenAPI schema the fleet serves has a type " +
			`of its own that implements it ("... on Pod { spec { nodeName } }"); other objects are UntypedResources.`,
		Fields: graphql.Fields{},
		ResolveType: func(p graphql.ResolveTypeParams) *graphql.Object {
			if o, ok := p.Value.(*object.Object); ok {
				if t := typeOf(o); t != nil {
					return t
				}
			}
			return r.untyped
		},
	})
	fields := func() graphql.Fields { return s.resourceFields(r.Interface) }
	for name, f := range fields() {
		r.Interface.AddFieldConfig(name, f)
	}
	r.untyped = graphql.NewObject(graphql.ObjectConfig{Name: "UntypedResource", Interfaces: []*graphql.Interface{r.Interface}, Fields: fields(),
		Description: "A cached object whose kind has no type of its own: the fleet serves no OpenAPI schema of it (yet)."})
	return r, fields
}

// resourceFields returns the fields of Resource.
func (s *Server) resourceFields(resource *graphql.Interface) graphql.Fields {
	return graphql.Fields{
		"cluster":           {Type: graphql.NewNonNull(graphql.String), Description: "The cluster the object is cached from.", Resolve: objectField(func(o *object.Object) any { return o.Cluster })},
		"apiVersion":        {Type: graphql.NewNonNull(graphql.String), Description: `"v1", "apps/v1".`, Resolve: objectField(func(o *object.Object) any { return o.Type.APIVersion() })},
		"kind":              {Type: graphql.NewNonNull(graphql.String), Description: `The kind, without group: "Deployment".`, Resolve: objectField(func(o *object.Object) any { return o.Type.Kind })},
		"resource":          {Type: graphql.NewNonNull(graphql.String), Description: `The kubectl resource name: "pods", "deployments.apps".`, Resolve: objectField(func(o *object.Object) any { return o.Type.Resource })},
		"namespace":         {Type: graphql.String, Description: "Null for cluster-scoped objects.", Resolve: objectField(resolveNamespace)},
		"name":              {Type: graphql.NewNonNull(graphql.String), Description: "The object name.", Resolve: objectField(func(o *object.Object) any { return o.Name })},
		"uid":               {Type: graphql.NewNonNull(graphql.String), Description: "The object UID.", Resolve: objectField(func(o *object.Object) any { return string(o.UID) })},
		"resourceVersion":   {Type: graphql.NewNonNull(graphql.String), Description: "The resourceVersion of the cached version.", Resolve: objectField(func(o *object.Object) any { return o.ResourceVersion })},
		"labels":            {Type: graphql.NewNonNull(jsonScalar), Description: "The labels, as an object.", Resolve: objectField(resolveLabels)},
		"annotations":       {Type: graphql.NewNonNull(jsonScalar), Description: "The annotations, as an object.", Resolve: resolveAnnotations},
		"creationTimestamp": {Type: typed.Time, Description: "When the object was created.", Resolve: objectField(func(o *object.Object) any { return o.Created() })},
		"object": {Type: graphql.NewNonNull(jsonScalar), Description: "The whole cached object (without managedFields).",
			Resolve: objectField(func(o *object.Object) any { return json.RawMessage(o.Raw()) })},
		"field": {Type: jsonScalar, Description: "The value at path in the object (status.phase, spec.containers[].image, " +
			`metadata.annotations["example.com/owner"], cluster): a list of the values found where the path crosses an array ([]), ` +
			"null when absent.",
			Args:    graphql.FieldConfigArgument{"path": {Type: graphql.NewNonNull(graphql.String), Description: "The path."}},
			Resolve: s.resolveField},
		"owners": {Type: nonNullList(resource), Description: "The cached objects named in ownerReferences (same cluster).",
			Resolve: relations.Owners(relationEngine{s})},
		"children": {Type: nonNullList(resource), Description: "The cached objects whose ownerReferences name this one (same cluster).",
			Resolve: relations.Children(relationEngine{s})},
		"columns": {Type: nonNullList(columnType), Description: "What `kubectl get -o wide` prints for the object, in its order, without the age " +
			`unless age is true (see "Columns" in docs/graphql.md).`,
			Args: graphql.FieldConfigArgument{"age": {Type: graphql.Boolean, DefaultValue: false,
				Description: "Also the age, computed now, where the server's Table has it (a column Age, a custom resource's date columns at .metadata.creationTimestamp)."}},
			Resolve: s.resolveColumns},
	}
}

// columnType is Column: a cell of an object's row as kubectl prints it.
var columnType = graphql.NewObject(graphql.ObjectConfig{Name: "Column", Description: "A column of kubectl's table and the object's value in it.",
	Fields: graphql.Fields{
		"name":  {Type: graphql.NewNonNull(graphql.String), Description: `The column's name, as the API server's Table names it: "Ready".`, Resolve: func(p graphql.ResolveParams) (any, error) { return p.Source.(columns.Cell).Name, nil }},
		"value": {Type: graphql.NewNonNull(graphql.String), Description: `The value, as kubectl prints it: "1/2".`, Resolve: func(p graphql.ResolveParams) (any, error) { return p.Source.(columns.Cell).Value, nil }},
		"priority": {Type: graphql.NewNonNull(graphql.Int), Description: "The column's priority in the server's Table: 0 for what `kubectl get` prints, above 0 for what only `-o wide` adds.",
			Resolve: func(p graphql.ResolveParams) (any, error) { return int(p.Source.(columns.Cell).Priority), nil }},
	}})

// resolveColumns resolves Resource.columns: the object's row, with the age
// if asked.
func (s *Server) resolveColumns(p graphql.ResolveParams) (any, error) {
	age, _ := p.Args["age"].(bool)
	return s.opts.Columns.Row(p.Source.(*object.Object), time.Now(), age), nil
}

// pageTypes are the types every connection's fields share.
type pageTypes struct{ pageInfo, staleCluster *graphql.Object }

// connectionType returns <name>Connection, a page of node, with <name>Edge.
func (s *Server) connectionType(name string, node graphql.Output, pages pageTypes) *graphql.Object {
	edge, pageInfo, staleCluster := edgeType(name, node), pages.pageInfo, pages.staleCluster
	return graphql.NewObject(graphql.ObjectConfig{
		Name:        name + "Connection",
		Description: "One page of objects, in order of the sort keys, then of cluster, namespace, name and kind.",
		Fields: graphql.Fields{
			"edges":    {Type: nonNullList(edge), Description: "The objects of the page, in order.", Resolve: resolveEdges},
			"pageInfo": {Type: graphql.NewNonNull(pageInfo), Description: "Where the page ends.", Resolve: func(p graphql.ResolveParams) (any, error) { return p.Source, nil }},
			"totalCount": {Type: graphql.NewNonNull(graphql.Int), Description: "How many objects match the filter, on all pages.",
				Resolve: s.resolveTotalCount},
			"revision": {Type: graphql.NewNonNull(graphql.String), Description: "The index revision this page was read at (subscribe from it).",
				Resolve: func(p graphql.ResolveParams) (any, error) {
					c := p.Source.(*connection)
					return s.revisionCursor(c.page().Revision, c.filter), nil
				}},
			"staleClusters": {Type: nonNullList(graphql.String), Description: "Selected clusters that are not SYNCED: the answer may be incomplete.",
				Resolve: s.resolveStaleClusters},
			"staleness": {Type: nonNullList(staleCluster), Description: "For each selected cluster that is not SYNCED, since when its data is not known current.",
				Resolve: s.resolveStaleness},
			"deniedClusters": {Type: nonNullList(graphql.String), Description: "Clusters left out because they could not say whether the caller may see their objects, " +
				"and clusters where a related kind that a filter `through` a relation consults is hidden from the caller in all or part: " +
				"their answer may be incomplete.",
				Resolve: func(p graphql.ResolveParams) (any, error) {
					if d := p.Source.(*connection).denied; d != nil {
						return d, nil
					}
					return []string{}, nil
				}},
		},
	})
}

// edgeType returns <name>Edge: an object of a page and its cursor.
func edgeType(name string, resource graphql.Output) *graphql.Object {
	return graphql.NewObject(graphql.ObjectConfig{
		Name:        name + "Edge",
		Description: "An object of a page, with its cursor.",
		Fields: graphql.Fields{
			"cursor": {Type: graphql.NewNonNull(graphql.String), Description: "Pass it as after to continue after this object.",
				Resolve: resolveEdgeCursor},
			"node": {Type: graphql.NewNonNull(resource), Description: "The object.", Resolve: resolveEdgeNode},
		},
	})
}

// pageInfoType returns PageInfo: where a page ends.
func pageInfoType() *graphql.Object {
	return graphql.NewObject(graphql.ObjectConfig{
		Name:        "PageInfo",
		Description: "Where a page of objects ends.",
		Fields: graphql.Fields{
			"hasNextPage": {Type: graphql.NewNonNull(graphql.Boolean), Description: "Whether objects follow this page.", Resolve: func(p graphql.ResolveParams) (any, error) {
				return p.Source.(*connection).page().More, nil
			}},
			"endCursor": {Type: graphql.String, Description: "The cursor of the last edge; null when there is none.",
				Resolve: func(p graphql.ResolveParams) (any, error) {
					c := p.Source.(*connection)
					objs := c.page().Objects
					if len(objs) == 0 {
						return nil, nil
					}
					return c.cursor(objs[len(objs)-1]), nil
				}},
		},
	})
}

// facetType returns Facet: a value and how many objects have it.
func facetType() *graphql.Object {
	return graphql.NewObject(graphql.ObjectConfig{
		Name:        "Facet",
		Description: "A value of a facet key and how many matching objects have it.",
		Fields: graphql.Fields{
			"value": {Type: graphql.NewNonNull(graphql.String), Description: `The value; "" for the namespace of cluster-scoped objects.`, Resolve: func(p graphql.ResolveParams) (any, error) { return p.Source.(views.Facet).Value, nil }},
			"count": {Type: graphql.NewNonNull(graphql.Int), Description: "How many matching objects have it.", Resolve: func(p graphql.ResolveParams) (any, error) { return p.Source.(views.Facet).Count, nil }},
		},
	})
}

// subscriptionType returns Subscription, whose fields are resolved by the
// subscriptions themselves (resolveSubscriptionRoot), with ResourceEvent.
func (s *Server) subscriptionType(resourceEvent, cluster *graphql.Object) *graphql.Object {
	return graphql.NewObject(graphql.ObjectConfig{
		Name:        "Subscription",
		Description: "Live views, over WebSocket (graphql-transport-ws) or Server-Sent Events.",
		Fields: graphql.Fields{
			"resourceEvents": s.resourceEventsField(resourceEvent),
			"clusterHealth": {Type: graphql.NewNonNull(cluster),
				Description: "The current status of the cluster (of every cluster when null), then each status change.",
				Args:        graphql.FieldConfigArgument{"cluster": {Type: graphql.String, Description: "The cluster name; null for every cluster."}},
				Resolve:     resolveSubscriptionRoot},
		},
	})
}

// resourceEventsField returns resourceEvents, whose events are event.
func (s *Server) resourceEventsField(event *graphql.Object) *graphql.Field {
	return &graphql.Field{Type: graphql.NewNonNull(event),
		Description: "Every change of the objects matching the filter, in revision order, from the current revision or " +
			"after since. An object that starts or stops matching arrives as ADDED or DELETED. A since older than the " +
			"retained changes, or from before a restart, ends the subscription with CURSOR_EXPIRED: list again and follow " +
			"from the connection's revision.",
		Args: graphql.FieldConfigArgument{
			"filter": {Type: filter.Input, Description: "Which objects; null selects all."},
			"since":  {Type: graphql.String, Description: "A ResourceConnection.revision or a ResourceEvent.cursor: replay the changes after it, then follow."},
		},
		Resolve: resolveSubscriptionRoot}
}

// resourceEventType returns ResourceEvent (name) of resource: a change of
// an object.
func (s *Server) resourceEventType(name string, resource graphql.Output) *graphql.Object {
	return graphql.NewObject(graphql.ObjectConfig{
		Name:        name,
		Description: "A change of an object that matches a resourceEvents subscription's filter.",
		Fields: graphql.Fields{
			"type": {Type: graphql.NewNonNull(eventTypeEnum), Description: "What happened, as the filter sees it.",
				Resolve: func(p graphql.ResolveParams) (any, error) { return p.Source.(*fanout.Change).Type, nil }},
			"resource": {Type: graphql.NewNonNull(resource), Description: "The object; for DELETED, its last known state (for an object that stopped matching, the state that no longer matches).",
				Resolve: func(p graphql.ResolveParams) (any, error) { return p.Source.(*fanout.Change).Object, nil }},
			"cursor": {Type: graphql.NewNonNull(graphql.String), Description: "Where the subscription is after this change: pass it as since to resume after it, on this or any other fleetcache of the same fleet.",
				Resolve: func(p graphql.ResolveParams) (any, error) {
					if c, ok := p.Context.Value(eventCursorKey{}).(string); ok {
						return c, nil
					}
					return cursor.EncodeRevision(cursor.Revision{Epoch: s.ix.Epoch(), Revision: p.Source.(*fanout.Change).Revision}), nil
				}},
			"time": {Type: typed.Time, Description: "When fleetcache recorded the change (it reached the cache then); null for the " +
				"ADDED and DELETED of a cluster that starts or stops matching a clusterSelector.",
				Resolve: func(p graphql.ResolveParams) (any, error) { return p.Source.(*fanout.Change).Time, nil }},
		},
	})
}

// queryType returns Query. Its resources field also keeps the coerced
// variables of probeVariables' execution (execute.go).
func (s *Server) queryType(resource graphql.Output, conn, cluster *graphql.Object, changes *graphql.Field) *graphql.Object {
	facet := facetType()
	queryFields := graphql.Fields{
		"clusters": {Type: nonNullList(cluster), Description: "Every registered cluster, by name.",
			Args:    graphql.FieldConfigArgument{"selector": {Type: graphql.String, Description: `Only the clusters whose labels this label selector matches: "env=prod".`}},
			Resolve: s.fleet.ResolveClusters},
		"cluster": {Type: cluster, Description: "One cluster, or null if it is not registered.",
			Args:    graphql.FieldConfigArgument{"name": {Type: graphql.NewNonNull(graphql.String), Description: "The cluster name."}},
			Resolve: s.fleet.ResolveCluster},
		"resource": {Type: resource, Description: "One object by its key, or null if the index does not hold it.",
			Args: graphql.FieldConfigArgument{
				"cluster":   {Type: graphql.NewNonNull(graphql.String), Description: "The cluster name."},
				"kind":      {Type: graphql.NewNonNull(graphql.String), Description: `"Pod", or "Deployment.apps" outside the core group.`},
				"namespace": {Type: graphql.String, Description: "Null or absent for cluster-scoped objects."},
				"name":      {Type: graphql.NewNonNull(graphql.String), Description: "The object name."},
			},
			Resolve: s.resolveResource},
		"resources": {Type: graphql.NewNonNull(conn), Description: "The objects matching the filter, a page at a time.",
			Args:    s.pageArgs(),
			Resolve: s.resolveResources},
		"facets": {Type: nonNullList(facet), Description: "How many objects matching the filter have each value of a key, most frequent first.",
			Args: graphql.FieldConfigArgument{
				"filter":   {Type: filter.Input, Description: "Which objects to count; null selects all."},
				"by":       {Type: graphql.NewNonNull(filter.FacetKey), Description: "What to group them by."},
				"labelKey": {Type: graphql.String, Description: "The label key, with by: LABEL."},
				"field":    {Type: graphql.String, Description: `The path, with by: FIELD: "status.phase", "spec.containers[].image" (see "Paths and field selectors" in docs/graphql.md).`},
			},
			Resolve: s.resolveFacets},
		"fleetcache": {Type: fleet.ProcessType(), Description: "The fleetcache process that answers: its version, uptime, memory against its " +
			"limit and budget, list slots. Null when the server does not say.",
			Resolve: func(graphql.ResolveParams) (any, error) {
				if s.opts.Process == nil {
					return nil, nil
				}
				ps := s.opts.Process()
				return &ps, nil
			}},
		"changes": changes,
	}
	// probeVariables has graphql-go coerce variables through this field.
	queryFields["resources"].Resolve = probingVariables(queryFields["resources"].Resolve)
	return graphql.NewObject(graphql.ObjectConfig{
		Name:        "Query",
		Description: "What runs where in every cluster, answered from fleetcache's index.",
		Fields:      queryFields,
	})
}

// pageArgs returns the arguments of resources and of the kinds' root fields.
func (s *Server) pageArgs() graphql.FieldConfigArgument {
	return graphql.FieldConfigArgument{
		"filter": {Type: filter.Input, Description: "Which objects; null selects all."},
		"first": {Type: graphql.Int, DefaultValue: s.opts.DefaultPageSize,
			Description: "The page size, from 0 to " + strconv.Itoa(s.opts.MaxPageSize) + "."},
		"after": {Type: graphql.String, Description: "A cursor: the page starts after its object. A sorted page's cursor holds for the same filter and sort only."},
		"sort": {Type: graphql.NewList(graphql.NewNonNull(filter.Sort)),
			Description: "Sort keys, then cluster, namespace, name and kind as the tie-break; null or empty: that order alone."},
	}
}

// objectField resolves a field of a Resource.
func objectField(fn func(*object.Object) any) graphql.FieldResolveFn {
	return func(p graphql.ResolveParams) (any, error) { return fn(p.Source.(*object.Object)), nil }
}
