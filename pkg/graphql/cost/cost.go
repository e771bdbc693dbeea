package cost

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/graphql-go/graphql"
	"github.com/graphql-go/graphql/language/ast"

	"github.com/fleetcache/fleetcache/pkg/graphql/document"
	"github.com/fleetcache/fleetcache/pkg/graphql/filter"
)

// The lengths counted for the Resource lists without a first argument: an
// estimate, as their real lengths are the fleet's (the engine's
// Options.MaxResponseBytes bounds what a larger fan-out adds). Almost every
// object has at most one owner (its controller). Children run from none
// (most objects) to a ReplicaSet's replicas or a Deployment's ReplicaSets,
// most scaled to zero: a few, typically. At 5, the tree of a page of 100
// Deployments, their ReplicaSets and those's Pods costs 3,100, well within
// the default limit.
const (
	ownersPerObject   = 1
	childrenPerObject = 5
)

// maxExpandedFields bounds how many fields an operation may select with
// its fragments expanded and its merged fields counted once: a document
// within document.MaxSelections can spread fragments into an exponential number of
// fields, which neither the cost nor a plan should be computed for.
const maxExpandedFields = 10 * document.MaxSelections

// ErrTooManyFields reports an operation that selects more than
// maxExpandedFields (20,000) fields with its fragments expanded.
var ErrTooManyFields = fmt.Errorf("the operation selects more than %d fields with its fragments expanded", maxExpandedFields)

// Options holds the page sizes that Compute counts. They have no defaults
// of their own: the engine passes those of its Options, defaults filled.
type Options struct {
	// DefaultPageSize is the first counted for a resources field without
	// one, or whose first is null.
	DefaultPageSize int
	// MaxPageSize is the most a resources field's first counts.
	MaxPageSize int
}

// walker computes the cost of an operation.
type walker struct {
	schema    *graphql.Schema
	fragments map[string]*ast.FragmentDefinition
	varDefs   map[string]*ast.VariableDefinition
	vars      map[string]any
	opts      Options

	cost   int
	fields int
	// dynamic records that a variable's value was read: the cost then
	// holds for these variables only.
	dynamic bool
	// through are the filter arguments with variables: what their through
	// adds is read from each request's variables (Cost.Of).
	through []throughSite
}

// throughSite is a filter argument that holds variables, and how many
// times its field resolves.
type throughSite struct {
	filter ast.Value
	times  int
}

// Cost is an operation's cost without the variables of its filters:
// Of adds what their through adds with a request's variables.
type Cost struct {
	n       int
	static  bool
	through []throughSite
	varDefs map[string]*ast.VariableDefinition
}

// Static reports whether the cost holds for any variables, but for the
// filters' (which Of reads): the engine may keep it with the document.
func (c Cost) Static() bool { return c.static }

// Of returns the cost with the variables vars.
func (c Cost) Of(vars map[string]any) int {
	n := c.n
	w := &walker{varDefs: c.varDefs, vars: vars}
	for _, site := range c.through {
		n = saturatingAdd(n, saturatingMul(site.times, w.limits(site.filter)))
	}
	return n
}

// Compute returns the cost of op, an operation of doc over schema (of one
// event's payload for a subscription), with the variables vars, and
// whether it holds for any variables; or ErrTooManyFields. An operation
// of a type the schema does not have costs 0 (the engine refuses it).
func Compute(schema *graphql.Schema, doc *ast.Document, op *ast.OperationDefinition, vars map[string]any, opts Options) (n int, static bool, err error) {
	c, err := Of(schema, doc, op, vars, opts)
	return c.Of(vars), c.static && len(c.through) == 0, err
}

// Of returns the Cost of op as Compute does, with the filters that hold
// variables apart, so that a cost whose other parts hold for any
// variables is kept (Cost.Static) and only those are read per request.
func Of(schema *graphql.Schema, doc *ast.Document, op *ast.OperationDefinition, vars map[string]any, opts Options) (Cost, error) {
	root := document.RootType(schema, op)
	if root == nil {
		return Cost{static: true}, nil
	}
	w := &walker{schema: schema, fragments: document.Fragments(doc), varDefs: map[string]*ast.VariableDefinition{}, vars: vars, opts: opts}
	for _, d := range op.VariableDefinitions {
		if d != nil && d.Variable != nil && d.Variable.Name != nil {
			w.varDefs[d.Variable.Name.Value] = d
		}
	}
	err := w.walk(root, []*ast.SelectionSet{op.SelectionSet}, 1, 0)
	if err != nil {
		return Cost{static: !w.dynamic}, err
	}
	return Cost{n: w.cost, static: !w.dynamic, through: w.through, varDefs: w.varDefs}, nil
}

// walk adds the cost of the fields that sets select of n values of type t.
// page is the length of edges when t is a ResourceConnection or a
// ChangeConnection.
func (w *walker) walk(t composite, sets []*ast.SelectionSet, n, page int) error {
	keys, fields := document.CollectFields(sets, w.fragments, document.Selector{})
	for _, k := range keys {
		if w.fields++; w.fields > maxExpandedFields {
			return ErrTooManyFields
		}
		occurrences := fields[k]
		f := occurrences[0] // merged fields have the same name and arguments
		if f.Name == nil {
			continue
		}
		parent := t
		def := t.Fields()[f.Name.Value]
		if i, ok := t.(*graphql.Interface); ok && def == nil {
			// A field of an implementation, in an inline fragment: a
			// typed kind's relation (Node.pods) counts there too.
			for _, pt := range w.schema.PossibleTypes(i) {
				if d := pt.Fields()[f.Name.Value]; d != nil {
					def, parent = d, pt
					break
				}
			}
		}
		if def == nil {
			continue // __typename, introspection
		}
		named, ok := graphql.GetNamed(def.Type).(composite)
		if !ok {
			continue // a scalar, an enum or a union (none holds objects)
		}
		// A filter through relations consults up to its limits' related
		// objects each time the field resolves.
		w.throughCost(f, n)
		values := n
		if isList(def.Type) {
			values = saturatingMul(n, listLength(parent, f.Name.Value, page))
		}
		if counted(parent, f.Name.Value, named) {
			w.cost = saturatingAdd(w.cost, values)
		}
		var subs []*ast.SelectionSet
		for _, o := range occurrences {
			if o.SelectionSet != nil {
				subs = append(subs, o.SelectionSet)
			}
		}
		subPage := 0
		if isConnection(named) {
			subPage = w.pageSize(f)
		}
		if err := w.walk(named, subs, values, subPage); err != nil {
			return err
		}
	}
	return nil
}

// composite is an object type or an interface: a type with fields.
type composite interface {
	Name() string
	Fields() graphql.FieldDefinitionMap
}

// isResource reports whether t is Resource or one of the types that
// implement it (the typed kinds, UntypedResource).
func isResource(t composite) bool {
	if t.Name() == "Resource" {
		return true
	}
	if o, ok := t.(*graphql.Object); ok {
		for _, i := range o.Interfaces() {
			if i.Name() == "Resource" {
				return true
			}
		}
	}
	return false
}

// isConnection reports whether t is a page of objects or changes:
// ResourceConnection, ChangeConnection, a typed kind's <Kind>Connection.
func isConnection(t composite) bool {
	return strings.HasSuffix(t.Name(), "Connection") && t.Fields()["edges"] != nil
}

// isEdge reports whether t is an edge of a page of objects: ResourceEdge,
// a typed kind's <Kind>Edge.
func isEdge(t composite) bool {
	node := t.Fields()["node"]
	if !strings.HasSuffix(t.Name(), "Edge") || node == nil {
		return false
	}
	named, ok := graphql.GetNamed(node.Type).(composite)
	return ok && isResource(named)
}

// counted reports whether a field of parent whose values are of type typ
// counts one per value: Resource values (of any kind) and their edges,
// except the node of an edge.
func counted(parent composite, field string, typ composite) bool {
	switch {
	case isEdge(parent) && field == "node":
		return false
	case isResource(typ), isEdge(typ):
		return true
	}
	return false
}

// listLength is the length counted for the list field of parent; page is
// the first of the connection when parent is a connection.
func listLength(parent composite, field string, page int) int {
	switch {
	case field == "edges" && isConnection(parent):
		return page
	case field == "owners" && isResource(parent):
		return ownersPerObject
	case field == "children" && isResource(parent):
		return childrenPerObject
	}
	return 1
}

func isList(t graphql.Type) bool {
	if nn, ok := t.(*graphql.NonNull); ok {
		t = nn.OfType
	}
	_, ok := t.(*graphql.List)
	return ok
}

// pageSize returns the first of a resources field: its literal, or its
// variable's value or default, else Options.DefaultPageSize; within 0 and
// Options.MaxPageSize (a first outside fails when the field resolves).
func (w *walker) pageSize(f *ast.Field) int {
	n := w.opts.DefaultPageSize
	for _, a := range f.Arguments {
		if a.Name != nil && a.Name.Value == "first" {
			if v, ok := w.intArgument(a.Value); ok {
				n = v
			}
		}
	}
	return min(max(n, 0), w.opts.MaxPageSize)
}

// intArgument returns the integer value of an argument, false when it is
// null or not an integer (the argument's default then applies, or
// coercion fails later).
func (w *walker) intArgument(v ast.Value) (int, bool) {
	switch v := v.(type) {
	case *ast.IntValue:
		// Validation refused literals beyond 32 bits.
		n, err := strconv.Atoi(v.Value)
		return n, err == nil
	case *ast.Variable:
		if v.Name == nil {
			return 0, false
		}
		w.dynamic = true
		if val, ok := w.vars[v.Name.Value]; ok && val != nil {
			return intValue(val)
		}
		if d := w.varDefs[v.Name.Value]; d != nil && d.DefaultValue != nil {
			if _, isVar := d.DefaultValue.(*ast.Variable); !isVar {
				return w.intArgument(d.DefaultValue)
			}
		}
	}
	return 0, false
}

// throughCost adds, for a field that resolves n times, how many related
// objects its filter argument may consult: the sum of the limits of its
// through's relations (filter.DefaultThroughLimit where absent). A filter
// with variables is kept apart, for Cost.Of.
func (w *walker) throughCost(f *ast.Field, n int) {
	for _, a := range f.Arguments {
		if a.Name == nil || a.Name.Value != "filter" {
			continue
		}
		if document.ReadsVariables(a.Value) {
			w.through = append(w.through, throughSite{filter: a.Value, times: n})
			continue
		}
		w.cost = saturatingAdd(w.cost, saturatingMul(n, w.limits(a.Value)))
	}
}

// limits returns the sum of the limits of the relations of the through of
// a filter argument.
func (w *walker) limits(filterArg ast.Value) int {
	n := 0
	m, _ := w.valueOf(filterArg).(map[string]any)
	through, _ := m["through"].(map[string]any)
	for _, rel := range through {
		r, ok := rel.(map[string]any)
		if !ok {
			continue
		}
		limit, ok := intValue(r["limit"])
		if !ok {
			limit = filter.DefaultThroughLimit
		}
		n = saturatingAdd(n, min(max(limit, 0), filter.MaxThroughLimit))
	}
	return n
}

// valueOf returns an argument's value as variables give it: objects as
// maps, integers as ints, a variable's value (or its default); nil for
// what the cost does not read.
func (w *walker) valueOf(v ast.Value) any {
	switch v := v.(type) {
	case *ast.ObjectValue:
		m := map[string]any{}
		for _, f := range v.Fields {
			if f != nil && f.Name != nil {
				m[f.Name.Value] = w.valueOf(f.Value)
			}
		}
		return m
	case *ast.IntValue:
		n, err := strconv.Atoi(v.Value)
		if err != nil {
			return nil
		}
		return n
	case *ast.Variable:
		if v.Name == nil {
			return nil
		}
		if val, ok := w.vars[v.Name.Value]; ok {
			return val
		}
		if d := w.varDefs[v.Name.Value]; d != nil && d.DefaultValue != nil {
			if _, isVar := d.DefaultValue.(*ast.Variable); !isVar {
				return w.valueOf(d.DefaultValue)
			}
		}
	}
	return nil
}

// intValue returns a variable's value as an integer, as decoded from JSON
// (float64) or given by Go callers.
func intValue(v any) (int, bool) {
	switch v := v.(type) {
	case int:
		return v, true
	case int32:
		return int(v), true
	case int64:
		return int(v), true
	case float64:
		if v != math.Trunc(v) {
			return 0, false
		}
		return int(max(min(v, math.MaxInt32), math.MinInt32)), true
	case json.Number:
		f, err := v.Float64()
		if err != nil {
			return 0, false
		}
		return intValue(f)
	}
	return 0, false
}

// saturatingMul and saturatingAdd stay at math.MaxInt instead of
// overflowing: nested lists multiply fast.
func saturatingMul(a, b int) int {
	if a == 0 || b == 0 {
		return 0
	}
	if a > math.MaxInt/b {
		return math.MaxInt
	}
	return a * b
}

func saturatingAdd(a, b int) int {
	if a > math.MaxInt-b {
		return math.MaxInt
	}
	return a + b
}
