package graphql

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/graphql-go/graphql"
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/fleetcache/fleetcache/pkg/graphql/execute"
	"github.com/fleetcache/fleetcache/pkg/graphql/relations"
	"github.com/fleetcache/fleetcache/pkg/graphql/typed"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
	"github.com/fleetcache/fleetcache/pkg/openapi"
)

// Kinds is what the fleet serves of its kinds' OpenAPI schemas;
// *openapi.Follower implements it.
type Kinds interface {
	Snapshot() (*openapi.Snapshot, uint64)
	Watch() (uint64, <-chan struct{})
}

// generation is a schema and what belongs to it: the kinds' types, and the
// documents validated against it.
type generation struct {
	schema graphql.Schema
	types  *typed.Types
	docs   *lru.Cache[string, *parsedDocument]
	// kindEvents are the resources of the kinds' subscriptions, by field
	// name: podEvents → pods.
	kindEvents map[string]string
	// version is the version of the kinds' snapshot it was built from.
	version uint64
}

// rebuildQuiet is how long the kinds must stay unchanged before the
// schema is rebuilt: a fleet that starts changes them once per cluster.
const rebuildQuiet = 200 * time.Millisecond

// reserveNames records the names of the engine's own types and root
// fields, from a schema without kinds.
func (s *Server) reserveNames() error {
	gen, err := s.newSchema(nil)
	if err != nil {
		return fmt.Errorf("build schema: %w", err)
	}
	s.reserved.types = map[string]bool{}
	for name := range gen.schema.TypeMap() {
		s.reserved.types[name] = true
	}
	s.reserved.fields = map[string]bool{}
	for name := range maps.Keys(gen.schema.QueryType().Fields()) {
		s.reserved.fields[name] = true
	}
	return nil
}

// rebuild builds the schema of the kinds Options.Kinds serves now, and
// makes it the current one. Requests that hold the previous one finish
// with it; subscriptions keep it.
func (s *Server) rebuild() error {
	var snap *openapi.Snapshot
	var version uint64
	if s.opts.Kinds != nil {
		snap, version = s.opts.Kinds.Snapshot()
	}
	gen, err := s.newSchema(snap)
	if err != nil {
		return fmt.Errorf("build schema: %w", err)
	}
	gen.version = version
	if gen.docs, err = lru.New[string, *parsedDocument](s.opts.DocumentCacheSize); err != nil {
		return fmt.Errorf("document cache: %w", err)
	}
	s.gen.Store(gen)
	return nil
}

// followKinds rebuilds the schema each time the kinds change, once they
// stay unchanged for rebuildQuiet, until ctx ends.
func (s *Server) followKinds(ctx context.Context) {
	tried := s.gen.Load().version
	for {
		version, changed := s.opts.Kinds.Watch()
		if version != tried {
			// Tried once per version: a schema that fails to build
			// fails again until the kinds change.
			tried = version
			start := time.Now()
			if err := s.rebuild(); err != nil {
				s.opts.Logger.Error(err, "Rebuilding the schema for the fleet's kinds failed; the previous one stays")
			} else {
				s.opts.Logger.V(2).Info("Rebuilt the schema for the fleet's kinds", "kinds", len(s.gen.Load().types.Kinds), "took", time.Since(start))
			}
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
		quiet := time.NewTimer(rebuildQuiet)
		select {
		case <-ctx.Done():
			quiet.Stop()
			return
		case <-quiet.C:
		}
	}
}

// writer returns the execute.Writer of the field def of t: a Resource
// field that a page asks of each object (resourceWriter), or a typed
// kind's leaf, written from the stored bytes.
func (g *generation) writer(t *graphql.Object, def *graphql.FieldDefinition, args map[string]any) execute.Writer {
	if w := resourceWriter(t, def, args); w != nil {
		return w
	}
	return g.types.Writer(t, def)
}

// kindField returns the root field of a typed kind: resources' arguments
// and answer, of that kind's objects only, in a connection of its type.
func (s *Server) kindField(k typed.Kind, conn *graphql.Object) *graphql.Field {
	return &graphql.Field{Type: graphql.NewNonNull(conn), Args: s.pageArgs(),
		Description: fmt.Sprintf("The %s objects (group %q) matching the filter, a page at a time, as resources answers with the kind's type: "+
			"resources(filter: {kinds: [%q]}). Served at %s.", k.Kind, k.Group, kindName(k), k.Versions),
		Resolve: func(p graphql.ResolveParams) (any, error) {
			return s.resolveConnection(p, k.Resource)
		}}
}

// kindEventsField returns the subscription of a typed kind, <kind>Events:
// resourceEvents of that kind's objects only, whose events hold its type.
func (s *Server) kindEventsField(k typed.Kind, event *graphql.Object) *graphql.Field {
	f := s.resourceEventsField(event)
	f.Description = fmt.Sprintf("The changes of the %s objects matching the filter, as resourceEvents delivers them "+
		"(resourceEvents(filter: {kinds: [%q]})), each with the kind's type; it takes and gives the same cursors.", k.Kind, kindName(k))
	return f
}

// kindEventsName is the name of a kind's subscription: its type's name in
// lower camel case, then Events: podEvents, eventsK8sIoEventEvents.
func kindEventsName(k typed.Kind) string {
	n := k.Type.Name()
	return strings.ToLower(n[:1]) + n[1:] + "Events"
}

// kindName is the kind as filters name it: "Pod", "Deployment.apps".
func kindName(k typed.Kind) string {
	if k.Group == "" {
		return k.Kind
	}
	return k.Kind + "." + k.Group
}

// relationEngine is the Server as package relations reads it.
type relationEngine struct{ s *Server }

func (e relationEngine) Lookup(cluster, namespace, name string) []*object.Object {
	return e.s.ix.Lookup(cluster, namespace, name)
}

func (e relationEngine) Selecting(cluster, namespace, resource string, labels object.Labels) []*object.Object {
	return e.s.ix.Selecting(cluster, namespace, resource, labels)
}

func (e relationEngine) Find(fs []planner.Filter, limit int) []*object.Object {
	return e.s.ix.ListUnion(fs, nil, limit).Objects
}

func (e relationEngine) Scope(ctx context.Context, f planner.Filter) ([]planner.Filter, []string) {
	return e.s.scopeFilters(ctx, f)
}

func (e relationEngine) Holding(f planner.Filter) map[string][]string {
	out := map[string][]string{}
	for _, c := range e.s.ix.Contents(f) {
		for _, r := range c.Resources {
			out[c.Cluster] = append(out[c.Cluster], r.Resource)
		}
	}
	return out
}

func (e relationEngine) Namespaces(cluster string) []string { return e.s.ix.Namespaces(cluster) }

func (e relationEngine) Visible(ctx context.Context, o *object.Object) (bool, error) {
	return e.s.visible(ctx, o)
}

// Connection returns the connection of rel: the union of what the caller
// may see of each of its filters, and of its objects those the caller
// may see. A relation with objects is not sorted.
func (e relationEngine) Connection(p graphql.ResolveParams, rel relations.Related, query string) (any, error) {
	clusters := []string{rel.Cluster}
	c, err := e.s.pageOf(p, planner.Filter{Clusters: clusters}, clusters, query)
	if err != nil {
		return nil, err
	}
	if len(rel.Filters) > 0 {
		// The connection's own filter, for its revision's clocks and its
		// staleness: the first one's cluster and types.
		c.filter.Resources = rel.Filters[0].Resources
	}
	for _, f := range rel.Filters {
		visible, denied := e.s.scopeFilters(p.Context, f)
		c.visible = append(c.visible, visible...)
		for _, d := range denied {
			if !slices.Contains(c.denied, d) {
				c.denied = append(c.denied, d)
			}
		}
	}
	if len(rel.Objects) > 0 {
		if c.sort != nil {
			return nil, badInput("this relation is not sorted")
		}
		c.fixed = []*object.Object{}
		for _, o := range rel.Objects {
			if ok, err := e.s.visible(p.Context, o); err == nil && ok {
				c.fixed = append(c.fixed, o)
			} else if err != nil && !slices.Contains(c.denied, o.Cluster) {
				c.denied = append(c.denied, o.Cluster)
			}
		}
	}
	return c, nil
}

func (e relationEngine) CheckContext(ctx context.Context) error { return e.s.checkContext(ctx) }
