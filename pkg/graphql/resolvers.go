package graphql

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/graphql-go/graphql"

	"github.com/fleetcache/fleetcache/pkg/graphql/cursor"
	"github.com/fleetcache/fleetcache/pkg/graphql/document"
	"github.com/fleetcache/fleetcache/pkg/graphql/execute"
	"github.com/fleetcache/fleetcache/pkg/graphql/filter"
	"github.com/fleetcache/fleetcache/pkg/graphql/relations"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
	"github.com/fleetcache/fleetcache/pkg/index/views"
)

func resolveNamespace(o *object.Object) any {
	if o.Namespace == "" {
		return nil
	}
	return o.Namespace
}

func resolveLabels(o *object.Object) any {
	// The labels are sorted by key already: write the JSON object directly
	// instead of building a map for encoding/json to sort again.
	b := make([]byte, 0, 2+len(o.Labels)*24)
	b = append(b, '{')
	for i, l := range o.Labels {
		if i > 0 {
			b = append(b, ',')
		}
		b = execute.AppendString(b, l.Key)
		b = append(b, ':')
		b = execute.AppendString(b, l.Value)
	}
	return json.RawMessage(append(b, '}'))
}

// resolveAnnotations decodes the annotations from the object's JSON: the
// index does not keep them apart.
func resolveAnnotations(p graphql.ResolveParams) (any, error) {
	o := p.Source.(*object.Object)
	var v struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(o.Raw(), &v); err != nil {
		return nil, fmt.Errorf("decode annotations of %s: %w", o.Key(), err)
	}
	if v.Metadata.Annotations == nil {
		return map[string]string{}, nil
	}
	return v.Metadata.Annotations, nil
}

// pathCacheSize is how many parsed paths Server.paths holds: far more than
// the distinct paths of the queries a portal sends.
const pathCacheSize = 1024

// resolveField returns the value at the argument path, written from the
// object's stored bytes; nil when absent.
func (s *Server) resolveField(p graphql.ResolveParams) (any, error) {
	text, _ := p.Args["path"].(string)
	path, ok := s.paths.Get(text)
	if !ok {
		var err error
		if path, err = fieldpath.Parse(text); err != nil {
			return nil, badInput("%w", err)
		}
		s.paths.Add(text, path)
	}
	v := appendField(nil, p.Source.(*object.Object), path)
	if string(v) == "null" {
		return nil, nil
	}
	return json.RawMessage(v), nil
}

// appendField appends the value at path in o to dst as JSON, null when
// absent: from the values kept beside the body when path is indexed,
// else read from the body.
func appendField(dst []byte, o *object.Object, path fieldpath.Path) []byte {
	if v, ok := o.Projected(path); ok {
		return append(dst, v...)
	}
	return path.AppendJSONIn(dst, o.Doc())
}

// isResource reports whether t implements Resource.
func isResource(t *graphql.Object) bool {
	for _, i := range t.Interfaces() {
		if i.Name() == "Resource" {
			return true
		}
	}
	return false
}

// resourceWriter returns the execute.Writer of the Resource fields a page asks of
// each of its objects: its identity, and field with a well-formed path
// (a malformed one is left to resolveField, which reports it).
func resourceWriter(t *graphql.Object, def *graphql.FieldDefinition, args map[string]any) execute.Writer {
	if !isResource(t) {
		return nil
	}
	var fn func(dst []byte, o *object.Object) []byte
	switch def.Name {
	case "cluster":
		fn = func(dst []byte, o *object.Object) []byte { return execute.AppendString(dst, o.Cluster) }
	case "name":
		fn = func(dst []byte, o *object.Object) []byte { return execute.AppendString(dst, o.Name) }
	case "kind":
		fn = func(dst []byte, o *object.Object) []byte { return execute.AppendString(dst, o.Type.Kind) }
	case "uid":
		fn = func(dst []byte, o *object.Object) []byte { return execute.AppendString(dst, string(o.UID)) }
	case "resourceVersion":
		fn = func(dst []byte, o *object.Object) []byte { return execute.AppendString(dst, o.ResourceVersion) }
	case "namespace":
		fn = func(dst []byte, o *object.Object) []byte {
			if o.Namespace == "" {
				return append(dst, "null"...)
			}
			return execute.AppendString(dst, o.Namespace)
		}
	case "field":
		text, _ := args["path"].(string)
		path, err := fieldpath.Parse(text)
		if err != nil {
			return nil
		}
		fn = func(dst []byte, o *object.Object) []byte { return appendField(dst, o, path) }
	default:
		return nil
	}
	return func(dst []byte, src any) ([]byte, bool) {
		o, ok := src.(*object.Object)
		if !ok {
			return dst, false
		}
		return fn(dst, o), true
	}
}

// connection is the value of a ResourceConnection: the page is read once,
// when the first field that needs it is resolved.
type connection struct {
	s        *Server
	filter   planner.Filter
	clusters []string // the filter's clusters, as given
	// visible are the filters of what the caller may see of filter
	// (authz.Scope.Filters); denied the clusters hidden for failed reviews.
	visible []planner.Filter
	denied  []string
	first   int
	// sort is the sort, nil for Position order; query fingerprints the
	// filter and sort for the cursors of a sorted page.
	sort  []planner.SortKey
	query uint64
	// after is where the page starts, nil at the start.
	after *planner.SortedPosition
	// fixed, for a relation, are objects found by key beside what visible
	// selects, in Position order, each visible to the caller and none
	// selected by visible; the page merges them in. Such a connection is
	// never sorted.
	fixed []*object.Object

	// counted: the page and totalCount are both selected, and read
	// together (planner.ListCountUnion) into p and count.
	counted bool
	once    sync.Once
	p       planner.Page
	count   int
}

func (c *connection) page() planner.Page {
	c.once.Do(func() {
		limit := max(c.first, 1) // an empty page: is there anything after it?
		var p planner.Page
		if c.sort == nil {
			var after *object.Position
			if c.after != nil {
				after = &c.after.Position
			}
			if c.counted {
				p, c.count = c.s.ix.ListCountUnion(c.visible, after, limit)
			} else {
				p = c.s.ix.ListUnion(c.visible, after, limit)
			}
			if c.fixed != nil {
				p = relations.MergeFixed(p, c.fixed, after, limit)
			}
		} else {
			// The sort paths and the cursor's values were checked by
			// resolveResources: ListSorted cannot fail.
			p, _ = c.s.ix.ListSorted(c.visible, c.sort, c.after, limit)
		}
		if c.first == 0 {
			p = planner.Page{Revision: p.Revision, More: len(p.Objects) > 0}
		}
		c.p = p
	})
	return c.p
}

// cursor returns the cursor of o, an object of the page.
func (c *connection) cursor(o *object.Object) string {
	if c.sort == nil {
		return cursor.EncodePage(o.Position())
	}
	return cursor.EncodeSorted(cursor.Sorted{Query: c.query,
		SortedPosition: planner.SortedPosition{Values: planner.SortValues(c.sort, o), Position: o.Position()}})
}

// sortedEdge is an edge of a sorted page: its cursor needs the sort.
type sortedEdge struct {
	c *connection
	o *object.Object
}

// resolveEdges returns the page's edges: its objects, which are their own
// edges in Position order, or sortedEdges.
func resolveEdges(p graphql.ResolveParams) (any, error) {
	c := p.Source.(*connection)
	objs := c.page().Objects
	if c.sort == nil {
		return objs, nil
	}
	edges := make([]sortedEdge, len(objs))
	for i, o := range objs {
		edges[i] = sortedEdge{c: c, o: o}
	}
	return edges, nil
}

func resolveEdgeCursor(p graphql.ResolveParams) (any, error) {
	if e, ok := p.Source.(sortedEdge); ok {
		return e.c.cursor(e.o), nil
	}
	return cursor.EncodePage(p.Source.(*object.Object).Position()), nil
}

func resolveEdgeNode(p graphql.ResolveParams) (any, error) {
	if e, ok := p.Source.(sortedEdge); ok {
		return e.o, nil
	}
	return p.Source, nil
}

func (s *Server) resolveResources(p graphql.ResolveParams) (any, error) {
	return s.resolveConnection(p, "")
}

// resolveConnection resolves a page of the objects of resource (a
// kind's root field), or of any resource when it is "".
func (s *Server) resolveConnection(p graphql.ResolveParams, resource string) (any, error) {
	if err := s.checkContext(p.Context); err != nil {
		return nil, err
	}
	arg, through, err := filter.SplitThrough(p.Args["filter"])
	if err != nil {
		return nil, badInput("%w", err)
	}
	f, clusters, _, err := s.resolveFilter(arg)
	if err != nil {
		return nil, err
	}
	if resource != "" {
		f.Resources = []string{resource}
	}
	c, err := s.pageOf(p, f, clusters, resource)
	if err != nil {
		return nil, err
	}
	if c.visible, c.denied, err = s.scopeThrough(p.Context, f, through); err != nil {
		return nil, err
	}
	return c, nil
}

// pageOf returns a connection of the page of f that p's first, after and
// sort ask for, without what the caller may see of it (visible).
func (s *Server) pageOf(p graphql.ResolveParams, f planner.Filter, clusters []string, query string) (*connection, error) {
	c := &connection{s: s, filter: f, clusters: clusters}
	var err error
	if c.first, err = s.pageSize(p.Args); err != nil {
		return nil, err
	}
	if c.sort, err = filter.ParseSort(p.Args["sort"]); err != nil {
		return nil, badInput("%w", err)
	}
	if c.sort != nil {
		c.query = cursor.Fingerprint(p.Args["filter"], p.Args["sort"], query)
	}
	if v, ok := p.Args["after"].(string); ok {
		if c.after, err = c.decodeAfter(v); err != nil {
			return nil, err
		}
	}
	names, complete := document.Subfields(p.Info.FieldASTs)
	c.counted = c.sort == nil && complete && slices.Contains(names, "totalCount") &&
		slices.ContainsFunc(names, func(n string) bool { return n == "edges" || n == "pageInfo" })
	return c, nil
}

// pageSize reads a connection's first argument: Options.DefaultPageSize
// when absent, BAD_USER_INPUT outside 0 to Options.MaxPageSize.
func (s *Server) pageSize(args map[string]any) (int, error) {
	v, ok := args["first"].(int)
	if !ok {
		return s.opts.DefaultPageSize, nil
	}
	if v < 0 || v > s.opts.MaxPageSize {
		return 0, badInput("first must be between 0 and %d, got %d", s.opts.MaxPageSize, v)
	}
	return v, nil
}

// decodeAfter decodes the after cursor of c's page: a page cursor, or for a
// sorted page a sorted page cursor of the same filter and sort.
func (c *connection) decodeAfter(v string) (*planner.SortedPosition, error) {
	if c.sort == nil {
		pos, err := cursor.DecodePage(v)
		if err != nil {
			return nil, badInput("invalid after cursor: %w", err)
		}
		return &planner.SortedPosition{Position: pos}, nil
	}
	sc, err := cursor.DecodeSorted(v)
	switch {
	case err != nil:
		return nil, badInput("invalid after cursor: %w", err)
	case sc.Query != c.query || len(sc.Values) != len(c.sort):
		return nil, badInput("invalid after cursor: it continues a page with another filter or sort")
	}
	return &sc.SortedPosition, nil
}

func (s *Server) resolveTotalCount(p graphql.ResolveParams) (any, error) {
	if err := s.checkContext(p.Context); err != nil {
		return nil, err
	}
	c := p.Source.(*connection)
	if c.counted {
		c.page()
		return c.count + len(c.fixed), nil
	}
	return s.ix.CountUnion(c.visible) + len(c.fixed), nil
}

// resolveStaleClusters returns the names of the clusters notSynced returns.
func (s *Server) resolveStaleClusters(p graphql.ResolveParams) (any, error) {
	out := []string{}
	for _, st := range s.notSynced(p.Source.(*connection)) {
		out = append(out, st.Name)
	}
	return out, nil
}

// resolveStaleness returns the status of each cluster notSynced returns.
func (s *Server) resolveStaleness(p graphql.ResolveParams) (any, error) {
	out := []*health.ClusterStatus{}
	for _, st := range s.notSynced(p.Source.(*connection)) {
		out = append(out, &st)
	}
	return out, nil
}

// notSynced returns the selected clusters (those of the filter, or all
// registered ones) that are not SYNCED. Clusters the filter names that are
// not registered are not stale: there is nothing to miss.
func (s *Server) notSynced(c *connection) []health.ClusterStatus {
	var statuses []health.ClusterStatus
	if c.clusters == nil {
		statuses, _ = s.health.Clusters()
	} else {
		for _, name := range c.filter.Clusters {
			if st, ok := s.health.Cluster(name); ok {
				statuses = append(statuses, st)
			}
		}
	}
	var out []health.ClusterStatus
	for _, st := range statuses {
		if st.Status != health.Synced {
			out = append(out, st)
		}
	}
	return out
}

func (s *Server) resolveFacets(p graphql.ResolveParams) (any, error) {
	if err := s.checkContext(p.Context); err != nil {
		return nil, err
	}
	arg, through, err := filter.SplitThrough(p.Args["filter"])
	if err != nil {
		return nil, badInput("%w", err)
	}
	f, _, _, err := s.resolveFilter(arg)
	if err != nil {
		return nil, err
	}
	by, err := filter.FacetBy(p.Args)
	if err != nil {
		return nil, badInput("%w", err)
	}
	fs, _, err := s.scopeThrough(p.Context, f, through)
	if err != nil {
		return nil, err
	}
	if by.Key == filter.FacetClusterLabel {
		return s.facetsByClusterLabel(s.ix.FacetsUnion(fs, views.FacetBy{Key: views.FacetCluster}), by.Label), nil
	}
	out := s.ix.FacetsUnion(fs, by)
	if out == nil {
		out = []views.Facet{}
	}
	return out, nil
}

// resolveResource finds one object by cluster, kind, namespace and name. A
// kind with a group ("Deployment.apps") matches Type.KindName(); a bare kind
// ("Pod") matches Type.Kind in any group, and must then match only one
// object.
func (s *Server) resolveResource(p graphql.ResolveParams) (any, error) {
	if err := s.checkContext(p.Context); err != nil {
		return nil, err
	}
	cluster, _ := p.Args["cluster"].(string)
	kind, _ := p.Args["kind"].(string)
	namespace, _ := p.Args["namespace"].(string)
	name, _ := p.Args["name"].(string)
	if kind == "" {
		return nil, badInput("kind must not be empty")
	}
	var found []*object.Object
	for _, o := range s.ix.Lookup(cluster, namespace, name) {
		if ok, err := s.visible(p.Context, o); err != nil || !ok {
			// Another tenant's object is not there, as far as the
			// caller can tell; a failed review says so.
			if err != nil {
				return nil, err
			}
			continue
		}
		switch {
		case o.Type.KindName() == kind:
			return o, nil
		case !strings.Contains(kind, ".") && o.Type.Kind == kind:
			found = append(found, o)
		}
	}
	switch len(found) {
	case 0:
		return nil, nil
	case 1:
		return found[0], nil
	}
	names := make([]string, len(found))
	for i, o := range found {
		names[i] = o.Type.KindName()
	}
	return nil, badInput("kind %q is ambiguous here, name the group: one of %s", kind, strings.Join(names, ", "))
}
