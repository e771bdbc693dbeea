package relations

import (
	"context"
	"encoding/json"

	"github.com/graphql-go/graphql"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/fleetcache/fleetcache/pkg/graphql/typed"
	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
	"github.com/fleetcache/fleetcache/pkg/index/fieldselector"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
)

// Engine is what relations read of the engine that serves them; the
// GraphQL server (package graphql) implements it.
type Engine interface {
	// Lookup returns the cached objects of cluster named name in
	// namespace ("" for cluster-scoped ones), of every kind.
	Lookup(cluster, namespace, name string) []*object.Object
	// Visible reports whether the caller of ctx may see o; an error is a
	// failed access review, coded for the caller.
	Visible(ctx context.Context, o *object.Object) (bool, error)
	// Connection returns the page of the objects f selects that the
	// arguments of p ask for (first, after, sort), as resources answers
	// them, under the caller's rights: a ResourceConnection's value.
	// query names the relation and its object, for the cursors of sorted
	// pages.
	Connection(p graphql.ResolveParams, f planner.Filter, query string) (any, error)
	// CheckContext returns the coded error of ctx when it is done.
	CheckContext(ctx context.Context) error
}

// Schema is what relations are added to: the kinds' types, the Resource
// interface, the ResourceConnection type and the arguments of a page
// (first, after, sort).
type Schema struct {
	Types      *typed.Types
	Resource   *graphql.Interface
	Connection *graphql.Object
	PageArgs   func() graphql.FieldConfigArgument
}

// relations resolves the relation fields of one schema.
type relations struct {
	e Engine
}

var (
	nodeNamePath = fieldpath.MustParse("spec.nodeName")
	selectorPath = fieldpath.MustParse("spec.selector")
)

// Add adds the relation fields of the kinds that have them to the types
// of sc: a typed Pod's node, a Node's pods, a Service's pods. A kind
// without a type (not cached) gets none.
func Add(e Engine, sc Schema) {
	s := &relations{e: e}
	resource, conn := sc.Resource, sc.Connection
	pageArgs := func() graphql.FieldConfigArgument {
		args := sc.PageArgs()
		delete(args, "filter")
		return args
	}
	add := func(kind, name string, f *graphql.Field) {
		if t := sc.Types.Of("", kind); t != nil {
			if _, taken := t.Fields()[name]; !taken {
				t.AddFieldConfig(name, f)
			}
		}
	}
	add("Pod", "node", &graphql.Field{Type: resource, Resolve: s.resolvePodNode,
		Description: "The Node the Pod is bound to (spec.nodeName), in its cluster; null if none, not cached or not visible to the caller."})
	add("Node", "pods", &graphql.Field{Type: graphql.NewNonNull(conn), Args: pageArgs(), Resolve: s.resolveNodePods,
		Description: "The Pods bound to the Node (spec.nodeName) in its cluster, a page at a time, as resources answers."})
	add("Service", "pods", &graphql.Field{Type: graphql.NewNonNull(conn), Args: pageArgs(), Resolve: s.resolveServicePods,
		Description: "The Pods the Service's selector selects in its namespace and cluster, a page at a time, as resources " +
			"answers; none for a Service without a selector."})
}

// resolvePodNode resolves Pod.node: the cached Node of the Pod's
// spec.nodeName, by key.
func (s *relations) resolvePodNode(p graphql.ResolveParams) (any, error) {
	if err := s.e.CheckContext(p.Context); err != nil {
		return nil, err
	}
	o := p.Source.(*object.Object)
	var name string
	nodeNamePath.EachIn(o.Doc(), func(v fieldpath.Value) bool {
		name = v.Str
		return false
	})
	if name == "" {
		return nil, nil
	}
	for _, n := range s.e.Lookup(o.Cluster, "", name) {
		if n.Type.GVR.Group != "" || n.Type.Kind != "Node" {
			continue
		}
		if ok, err := s.e.Visible(p.Context, n); err != nil || !ok {
			return nil, err
		}
		return n, nil
	}
	return nil, nil
}

// resolveNodePods resolves Node.pods: the Pods whose spec.nodeName is the
// Node's name, through the index on that path (a default index).
func (s *relations) resolveNodePods(p graphql.ResolveParams) (any, error) {
	if err := s.e.CheckContext(p.Context); err != nil {
		return nil, err
	}
	o := p.Source.(*object.Object)
	sel, err := fieldselector.Parse("spec.nodeName=" + o.Name) // a DNS subdomain: nothing to escape
	if err != nil {
		return nil, err
	}
	f := planner.Filter{Clusters: []string{o.Cluster}, Resources: []string{"pods"}, Fields: sel}
	return s.relation(p, f, "Node.pods")
}

// resolveServicePods resolves Service.pods: the Pods of the Service's
// namespace that its selector selects, through the label postings.
func (s *relations) resolveServicePods(p graphql.ResolveParams) (any, error) {
	if err := s.e.CheckContext(p.Context); err != nil {
		return nil, err
	}
	o := p.Source.(*object.Object)
	var set labels.Set
	selectorPath.EachIn(o.Doc(), func(v fieldpath.Value) bool {
		if v.Kind == fieldpath.Object {
			_ = json.Unmarshal(v.AppendJSON(nil), &set) // a map of strings, else no selector
		}
		return false
	})
	if len(set) == 0 {
		// No selector selects no Pod (its endpoints are managed apart).
		set = labels.Set{"fleetcache.io/no-selector": "\x00"}
	}
	f := planner.Filter{Clusters: []string{o.Cluster}, Namespaces: []string{o.Namespace}, Resources: []string{"pods"},
		Selector: labels.SelectorFromSet(set)}
	return s.relation(p, f, "Service.pods")
}

// relation returns the connection of a relation's objects, f.
func (s *relations) relation(p graphql.ResolveParams, f planner.Filter, name string) (any, error) {
	o := p.Source.(*object.Object)
	return s.e.Connection(p, f, name+"/"+o.Cluster+"/"+o.Namespace+"/"+o.Name)
}
