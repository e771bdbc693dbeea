package graphql

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/graphql-go/graphql"
	"github.com/graphql-go/graphql/language/ast"

	"github.com/fleetcache/fleetcache/pkg/graphql/document"
)

// An operation's cost is the most objects its answer can hold, computed
// from the document before it runs, so that one request cannot make the
// server build an answer of hundreds of megabytes: each ResourceEdge and
// each Resource the answer can hold counts one (an edge's node is its
// edge's object: it does not count again). A list's length is
//
//   - for resources(first:) { edges }, its first (a literal or a variable;
//     DefaultPageSize when absent or null; at most MaxPageSize, over which
//     the query fails anyway);
//   - for Resource.owners, ownersPerObject; for Resource.children,
//     childrenPerObject: their lengths are the fleet's, not the query's;
//   - for the other lists (clusters, facets, …), which hold no Resource, 1.
//
// Lists multiply through nesting, and fields add up over aliases and
// fragments; fields of one response key merge as execution merges them.
// @skip and @include are not read: the cost is what the operation can
// return whatever its variables. A subscription's cost is that of one
// event's payload. docs/graphql.md shows how to compute it.

// The lengths counted for the Resource lists without a first argument: an
// estimate, as their real lengths are the fleet's (Options.MaxResponseBytes
// bounds what a larger fan-out adds). Almost every object has at most one
// owner (its controller). Children run from none (most objects) to a
// ReplicaSet's replicas or a Deployment's ReplicaSets, most scaled to zero:
// a few, typically. At 5, the tree of a page of 100 Deployments, their
// ReplicaSets and those's Pods costs 3,100, well within the default limit.
const (
	ownersPerObject   = 1
	childrenPerObject = 5
)

// maxExpandedFields bounds how many fields an operation may select with
// its fragments expanded and its merged fields counted once: a document
// within document.MaxSelections can spread fragments into an exponential number of
// fields, which neither the cost nor a plan should be computed for.
const maxExpandedFields = 10 * document.MaxSelections

// errTooManyFields reports an operation over maxExpandedFields.
var errTooManyFields = fmt.Errorf("the operation selects more than %d fields with its fragments expanded", maxExpandedFields)

// costWalker computes the cost of an operation.
type costWalker struct {
	fragments map[string]*ast.FragmentDefinition
	varDefs   map[string]*ast.VariableDefinition
	vars      map[string]any
	// defaultPage and maxPage are Options.DefaultPageSize and MaxPageSize.
	defaultPage, maxPage int

	cost   int
	fields int
	// dynamic records that a variable's value was read: the cost then
	// holds for these variables only.
	dynamic bool
}

// costed is the cost of an operation that holds for any variables, kept
// with its document.
type costed struct {
	cost int
	err  error
}

// costOf returns the cost of op (of one event's payload for a
// subscription) with the variables vars, or errTooManyFields. Costs that
// hold for any variables are kept with the document.
func (s *Server) costOf(d *parsedDocument, op *ast.OperationDefinition, vars map[string]any) (int, error) {
	if c, ok := d.costs.Load(op); ok {
		return c.(costed).cost, c.(costed).err
	}
	cost, static, err := s.computeCost(d.ast, op, vars)
	if static {
		d.costs.Store(op, costed{cost, err})
	}
	return cost, err
}

// computeCost returns the cost of op with vars, and whether it holds for
// any variables.
func (s *Server) computeCost(doc *ast.Document, op *ast.OperationDefinition, vars map[string]any) (cost int, static bool, err error) {
	var root *graphql.Object
	switch op.Operation {
	case ast.OperationTypeQuery:
		root = s.schema.QueryType()
	case ast.OperationTypeMutation:
		root = s.schema.MutationType()
	case ast.OperationTypeSubscription:
		root = s.schema.SubscriptionType()
	}
	if root == nil {
		return 0, true, nil // checkRoot reports it
	}
	w := &costWalker{fragments: document.Fragments(doc), varDefs: map[string]*ast.VariableDefinition{}, vars: vars,
		defaultPage: s.opts.DefaultPageSize, maxPage: s.opts.MaxPageSize}
	for _, d := range op.VariableDefinitions {
		if d != nil && d.Variable != nil && d.Variable.Name != nil {
			w.varDefs[d.Variable.Name.Value] = d
		}
	}
	if err := w.walk(root, []*ast.SelectionSet{op.SelectionSet}, 1, 0); err != nil {
		return 0, !w.dynamic, err
	}
	return w.cost, !w.dynamic, nil
}

// walk adds the cost of the fields that sets select of n values of type t.
// page is the length of edges when t is a ResourceConnection.
func (w *costWalker) walk(t *graphql.Object, sets []*ast.SelectionSet, n, page int) error {
	keys, fields := document.CollectFields(sets, w.fragments)
	for _, k := range keys {
		if w.fields++; w.fields > maxExpandedFields {
			return errTooManyFields
		}
		occurrences := fields[k]
		f := occurrences[0] // merged fields have the same name and arguments
		if f.Name == nil {
			continue
		}
		def := t.Fields()[f.Name.Value]
		if def == nil {
			continue // __typename, introspection
		}
		named, ok := graphql.GetNamed(def.Type).(*graphql.Object)
		if !ok {
			continue // a scalar or an enum
		}
		values := n
		if isList(def.Type) {
			values = saturatingMul(n, listLength(t.Name(), f.Name.Value, page))
		}
		if counted(t.Name(), f.Name.Value, named.Name()) {
			w.cost = saturatingAdd(w.cost, values)
		}
		var subs []*ast.SelectionSet
		for _, o := range occurrences {
			if o.SelectionSet != nil {
				subs = append(subs, o.SelectionSet)
			}
		}
		subPage := 0
		if named.Name() == "ResourceConnection" {
			subPage = w.pageSize(f)
		}
		if err := w.walk(named, subs, values, subPage); err != nil {
			return err
		}
	}
	return nil
}

// counted reports whether a field of parent whose values are of type typ
// counts one per value: Resource and ResourceEdge values, except the node
// of an edge.
func counted(parent, field, typ string) bool {
	switch {
	case parent == "ResourceEdge" && field == "node":
		return false
	case typ == "Resource", typ == "ResourceEdge":
		return true
	}
	return false
}

// listLength is the length counted for the list field of parent; page is
// the first of the connection when parent is a ResourceConnection.
func listLength(parent, field string, page int) int {
	switch parent + "." + field {
	case "ResourceConnection.edges":
		return page
	case "Resource.owners":
		return ownersPerObject
	case "Resource.children":
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
// variable's value or default, else DefaultPageSize; within 0 and
// MaxPageSize (a first outside fails when the field resolves).
func (w *costWalker) pageSize(f *ast.Field) int {
	n := w.defaultPage
	for _, a := range f.Arguments {
		if a.Name != nil && a.Name.Value == "first" {
			if v, ok := w.intArgument(a.Value); ok {
				n = v
			}
		}
	}
	return min(max(n, 0), w.maxPage)
}

// intArgument returns the integer value of an argument, false when it is
// null or not an integer (the argument's default then applies, or
// coercion fails later).
func (w *costWalker) intArgument(v ast.Value) (int, bool) {
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

// checkCost returns the error result of an operation over
// Options.MaxCost, or over maxExpandedFields, or nil.
func (s *Server) checkCost(doc *parsedDocument, op *ast.OperationDefinition, vars map[string]any) *Result {
	cost, err := s.costOf(doc, op, vars)
	if err != nil {
		return errorResult(CodeQueryTooComplex, fmt.Errorf("query too complex: %w", err))
	}
	if cost <= s.opts.MaxCost {
		return nil
	}
	what := "its answer could hold"
	if op.Operation == ast.OperationTypeSubscription {
		what = "each event could hold"
	}
	return errorResult(CodeQueryTooComplex, fmt.Errorf(
		"query too complex: %s %s objects, over the limit of %s: ask for fewer (first) or split the query; see \"Query cost\" in docs/graphql.md",
		what, formatCount(cost), formatCount(s.opts.MaxCost)))
}

// formatCount writes n with thousands separators: 100,000.
func formatCount(n int) string {
	s := strconv.Itoa(n)
	out := make([]byte, 0, len(s)+len(s)/3)
	for i, c := range []byte(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, c)
	}
	return string(out)
}
