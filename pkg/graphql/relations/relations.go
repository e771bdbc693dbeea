package relations

import (
	"context"
	"slices"
	"strings"

	"github.com/graphql-go/graphql"

	"github.com/fleetcache/fleetcache/pkg/graphql/typed"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
)

// Engine is what relations read of the engine that serves them; the
// GraphQL server (package graphql) implements it.
type Engine interface {
	// Lookup returns the cached objects of cluster named name in
	// namespace ("" for cluster-scoped ones), of every kind.
	Lookup(cluster, namespace, name string) []*object.Object
	// Selecting returns the objects of resource in cluster and namespace
	// whose label selector selects labels (index.Index.Selecting).
	Selecting(cluster, namespace, resource string, labels object.Labels) []*object.Object
	// Find returns the first limit objects that the disjoint filters fs
	// select (0: all), whatever the caller may see: the hops of a
	// relation (a Deployment's ReplicaSets on the way to its Pods), which
	// it does not show, or what Scope lets the caller see.
	Find(fs []planner.Filter, limit int) []*object.Object
	// Scope returns the disjoint filters of what the caller of ctx may
	// see of f, each naming its clusters when the caller is restricted,
	// and the clusters whose access reviews failed.
	Scope(ctx context.Context, f planner.Filter) ([]planner.Filter, []string)
	// Holding returns the resources of f's resources and kinds that the
	// index holds objects of, by cluster, in f's clusters.
	Holding(f planner.Filter) map[string][]string
	// Namespaces returns the namespaces of cluster that hold objects.
	Namespaces(cluster string) []string
	// Visible reports whether the caller of ctx may see o; an error is a
	// failed access review, coded for the caller.
	Visible(ctx context.Context, o *object.Object) (bool, error)
	// Connection returns the page of rel's objects that the arguments of
	// p ask for (first, after, and sort for a relation without Objects),
	// under the caller's rights, as resources answers: a
	// ResourceConnection's value. query names the relation and its
	// object, for the cursors of sorted pages.
	Connection(p graphql.ResolveParams, rel Related, query string) (any, error)
	// CheckContext returns the coded error of ctx when it is done.
	CheckContext(ctx context.Context) error
}

// Related are the objects of a relation, all in Cluster: those any of
// Filters selects (disjoint filters, each answered through the index's
// postings), and Objects, found by key, in Position order, no two equal
// and none among those the Filters select.
type Related struct {
	Cluster string
	Filters []planner.Filter
	Objects []*object.Object
}

// add adds r's filters and objects to rel.
func (rel *Related) add(r Related) {
	rel.Filters = append(rel.Filters, r.Filters...)
	for _, o := range r.Objects {
		i, found := slices.BinarySearchFunc(rel.Objects, o, object.CompareObjects)
		if !found {
			rel.Objects = slices.Insert(rel.Objects, i, o)
		}
	}
}

// Schema is what relations are added to: the kinds' types, the Resource
// interface and UntypedResource, the ResourceConnection type and the
// arguments of a page (filter, first, after, sort).
type Schema struct {
	Types      *typed.Types
	Resource   *graphql.Interface
	Untyped    *graphql.Object
	Connection *graphql.Object
	PageArgs   func() graphql.FieldConfigArgument
}

// kindRef names a kind: its group ("" for the core group) and kind.
type kindRef struct{ group, kind string }

// anyKind, as a relation's from, is every kind.
var anyKind = kindRef{kind: "*"}

// String is the kind as filters name it: "Pod", "Deployment.apps".
func (k kindRef) String() string {
	if k.group == "" {
		return k.kind
	}
	return k.kind + "." + k.group
}

// of reports whether o is of kind k.
func (k kindRef) of(o *object.Object) bool {
	return k == anyKind || (o.Type.Kind == k.kind && o.Type.GVR.Group == k.group)
}

// matches reports whether a kinds argument's entry, "Pod" (any group) or
// "Deployment.apps", names k.
func (k kindRef) matches(name string) bool {
	if g, ok := strings.CutPrefix(name, k.kind); ok {
		return g == "" || g == "."+k.group
	}
	return false
}

// relation is one relation of a kind: the field name, the kind it leads
// to, and how its objects are found. A relation with one is a field of
// type Resource (null when there is none); the others are connections.
type relation struct {
	from, to kindRef
	name     string
	one      bool
	// sorted relations find filters only: their connection takes sort.
	sorted bool
	desc   string
	find   func(r *resolver, o *object.Object) Related
}

// resolver resolves the relation fields of one schema.
type resolver struct{ e Engine }

// pageArgs returns the arguments of a relation's connection: those of
// sc.PageArgs but filter, and sort for a relation that is not sorted.
func (sc Schema) pageArgs(sorted bool) graphql.FieldConfigArgument {
	a := sc.PageArgs()
	delete(a, "filter")
	if !sorted {
		delete(a, "sort")
	}
	return a
}

// ResourceFields returns the relations of every object, fields of
// Resource and of every type implementing it: owner (the owner chain)
// and related(kinds:). Each call returns new fields.
func ResourceFields(e Engine, sc Schema) graphql.Fields {
	r := &resolver{e: e}
	fields := graphql.Fields{}
	for _, rel := range table {
		if rel.from == anyKind && rel.to == anyKind {
			fields[rel.name] = &graphql.Field{Type: sc.Resource, Description: rel.desc, Resolve: r.one(rel)}
		}
	}
	related := &graphql.Field{Type: graphql.NewNonNull(sc.Connection), Args: sc.pageArgs(false), Resolve: r.related,
		Description: "The objects related to this one, in its cluster, of the kinds named (all when null): every relation " +
			`field of its kind at once (see "Relations" in docs/graphql.md), a page at a time.`}
	related.Args["kinds"] = &graphql.ArgumentConfig{Type: graphql.NewList(graphql.NewNonNull(graphql.String)),
		Description: `Kinds: "Pod" in any group, "Deployment.apps" in one; null: every kind.`}
	fields["related"] = related
	return fields
}

// Add adds the relation fields of the kinds (see table) to their types in
// sc. A relation whose source or target kind has no type (is not cached)
// is left out; so is one whose name the kind's schema has.
func Add(e Engine, sc Schema) {
	r := &resolver{e: e}
	var kinds []typed.Kind
	if sc.Types != nil {
		kinds = sc.Types.Kinds
	}
	args := sc.pageArgs
	for _, rel := range table {
		if rel.from == anyKind && rel.to == anyKind {
			continue // a field of Resource: ResourceFields
		}
		if sc.Types.Of(rel.to.group, rel.to.kind) == nil && rel.to != anyKind {
			continue
		}
		var types []*graphql.Object
		if rel.from == anyKind {
			for _, k := range kinds {
				if k.Kind != rel.to.kind || k.Group != rel.to.group { // a kind's own events are not its relation
					types = append(types, k.Type)
				}
			}
		} else if t := sc.Types.Of(rel.from.group, rel.from.kind); t != nil {
			types = append(types, t)
		}
		f := &graphql.Field{Description: rel.desc}
		if rel.one {
			f.Type, f.Resolve = sc.Resource, r.one(rel)
		} else {
			f.Type, f.Args, f.Resolve = graphql.NewNonNull(sc.Connection), args(rel.sorted), r.many(rel)
		}
		for _, t := range types {
			if _, taken := t.Fields()[rel.name]; !taken {
				t.AddFieldConfig(rel.name, f)
			}
		}
	}
}

// one resolves a relation to at most one object.
func (r *resolver) one(rel relation) graphql.FieldResolveFn {
	return func(p graphql.ResolveParams) (any, error) {
		if err := r.e.CheckContext(p.Context); err != nil {
			return nil, err
		}
		for _, o := range rel.find(r, p.Source.(*object.Object)).Objects {
			ok, err := r.e.Visible(p.Context, o)
			if err != nil {
				return nil, err
			}
			if ok {
				return o, nil
			}
		}
		return nil, nil
	}
}

// many resolves a relation to a connection.
func (r *resolver) many(rel relation) graphql.FieldResolveFn {
	return func(p graphql.ResolveParams) (any, error) {
		if err := r.e.CheckContext(p.Context); err != nil {
			return nil, err
		}
		o := p.Source.(*object.Object)
		return r.e.Connection(p, rel.find(r, o), rel.from.String()+"."+rel.name+"/"+o.Cluster+"/"+o.Namespace+"/"+o.Name)
	}
}

// related resolves Resource.related: the union of the object's relations
// whose target kind the kinds argument names.
func (r *resolver) related(p graphql.ResolveParams) (any, error) {
	if err := r.e.CheckContext(p.Context); err != nil {
		return nil, err
	}
	o := p.Source.(*object.Object)
	kinds, _ := p.Args["kinds"].([]any)
	named := func(k kindRef) bool {
		if kinds == nil {
			return true
		}
		return slices.ContainsFunc(kinds, func(v any) bool { s, _ := v.(string); return k.matches(s) })
	}
	all := Related{Cluster: o.Cluster}
	for _, rel := range table {
		if !rel.from.of(o) || (rel.from == anyKind && rel.to != anyKind && rel.to.of(o)) {
			continue
		}
		found := rel.find(r, o)
		if rel.to == anyKind {
			// The owner: its kind is known once found.
			found.Objects = slices.DeleteFunc(found.Objects, func(x *object.Object) bool {
				return kinds != nil && !named(kindRef{x.Type.GVR.Group, x.Type.Kind})
			})
		} else if !named(rel.to) {
			continue
		}
		all.add(found)
	}
	return r.e.Connection(p, all, "related/"+o.Cluster+"/"+o.Namespace+"/"+o.Name)
}

// MergeFixed merges into p, a page of at most limit objects after after,
// the objects of fixed (a Related's Objects, in Position order) after
// after, keeping the first limit.
func MergeFixed(p planner.Page, fixed []*object.Object, after *object.Position, limit int) planner.Page {
	if after != nil {
		from := after.Placeholder()
		i, _ := slices.BinarySearchFunc(fixed, from, object.CompareObjects)
		if i < len(fixed) && object.CompareObjects(fixed[i], from) == 0 {
			i++
		}
		fixed = fixed[i:]
	}
	merged := make([]*object.Object, 0, min(limit+1, len(p.Objects)+len(fixed)))
	a, b := p.Objects, fixed
	for len(merged) <= limit && (len(a) > 0 || len(b) > 0) {
		if len(b) == 0 || (len(a) > 0 && object.CompareObjects(a[0], b[0]) < 0) {
			merged, a = append(merged, a[0]), a[1:]
		} else {
			merged, b = append(merged, b[0]), b[1:]
		}
	}
	p.More = p.More || len(merged) > limit || len(b) > 0
	if len(merged) > limit {
		merged = merged[:limit]
	}
	p.Objects = merged
	return p
}

// Owners resolves Resource.owners: the cached objects named in the
// object's ownerReferences, in its namespace or cluster-scoped, with the
// reference's UID, that the caller may see.
func Owners(e Engine) graphql.FieldResolveFn {
	return func(p graphql.ResolveParams) (any, error) {
		if err := e.CheckContext(p.Context); err != nil {
			return nil, err
		}
		o := p.Source.(*object.Object)
		out := []*object.Object{}
		for _, ref := range o.Owners {
			found := false
			for _, ns := range []string{o.Namespace, ""} {
				for _, c := range e.Lookup(o.Cluster, ns, ref.Name) {
					if ok, _ := e.Visible(p.Context, c); ok && c.UID == ref.UID {
						out = append(out, c)
					}
					found = found || c.UID == ref.UID
				}
				if found {
					break
				}
			}
		}
		return out, nil
	}
}

// Children resolves Resource.children: the cached objects of the object's
// cluster whose ownerReferences name its UID, that the caller may see.
func Children(e Engine) graphql.FieldResolveFn {
	return func(p graphql.ResolveParams) (any, error) {
		if err := e.CheckContext(p.Context); err != nil {
			return nil, err
		}
		o := p.Source.(*object.Object)
		fs, _ := e.Scope(p.Context, planner.Filter{Clusters: []string{o.Cluster}, OwnerUID: o.UID})
		if out := e.Find(fs, 0); out != nil {
			return out, nil
		}
		return []*object.Object{}, nil
	}
}
