package execute

import (
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/graphql-go/graphql"
	"github.com/graphql-go/graphql/language/ast"

	"github.com/fleetcache/fleetcache/pkg/graphql/document"
)

// Plan is what an operation selects of one object type: its fields, in
// response order.
type Plan struct {
	Type   *graphql.Object
	Fields []*Field
	// size is how many bytes Write wrote for the plan last time, so that
	// the next response's buffer is allocated at once rather than grown
	// by doubling: half the garbage of a page of 50.
	size atomic.Int64
}

// Field is one response key of a selection set and what it selects.
type Field struct {
	Key  string
	json []byte // the response key as a JSON string, then ':'
	Name string
	// Nodes are the field's occurrences in the document: the first one's
	// arguments, all of them where an error is located.
	Nodes []*ast.Field
	// Def is the field's definition; nil for __typename.
	Def *graphql.FieldDefinition
	// Args are the field's arguments as its resolver gets them. The root
	// fields' may be given to Write instead, for a plan kept for any
	// variables.
	Args map[string]any
	// sub selects the fields of an object-typed field.
	sub *Plan
	// abstract selects the fields of an interface- or union-typed field,
	// per runtime type, compiled when a value of that type first comes.
	abstract *abstractPlans
	// write writes the field's value in place of its resolver, when the
	// server gave a Writer for it.
	write Writer
	// schema is given to introspection's resolvers, which read it; other
	// resolvers get no schema (the copy costs a page's time).
	schema *graphql.Schema
}

// A Writer appends the value of a leaf field of src to dst as JSON, in
// place of the field's resolver and the boxing of the value it returns:
// for fields read straight from an object, which a page asks for each of
// its objects. It returns false, and dst as it was, when it cannot; the
// resolver then runs.
type Writer func(dst []byte, src any) ([]byte, bool)

// Writers returns the Writer of the field def of t, below the root, for
// its arguments args (constant in a plan), or nil when it has none.
type Writers func(t *graphql.Object, def *graphql.FieldDefinition, args map[string]any) Writer

// compiler turns selection sets into plans.
type compiler struct {
	schema    *graphql.Schema
	writers   Writers
	fragments map[string]*ast.FragmentDefinition
	vars      map[string]any
	// dynamic records that a field below the root or a directive reads a
	// variable: the plan then holds for these variables only.
	dynamic bool
}

// Compile returns the plan of op, an operation of doc that schema
// validated, for vars, the operation's variables as graphql-go coerces
// them; and whether the plan holds for any variables, which it does when
// variables reach only the root fields' arguments (which Write can be
// given). writers, which may be nil, gives the leaf fields written without
// their resolvers.
func Compile(schema *graphql.Schema, doc *ast.Document, op *ast.OperationDefinition, vars map[string]any, writers Writers) (*Plan, bool, error) {
	root := document.RootType(schema, op)
	if root == nil {
		return nil, false, errors.New("the schema has no " + op.Operation + " type")
	}
	c := &compiler{schema: schema, writers: writers, fragments: document.Fragments(doc), vars: vars}
	p := c.plan(root, []*ast.SelectionSet{op.SelectionSet}, true)
	return p, !c.dynamic, nil
}

// plan collects the fields that sets select of t.
func (c *compiler) plan(t *graphql.Object, sets []*ast.SelectionSet, root bool) *Plan {
	keys, occurrences := document.CollectFields(sets, c.fragments, document.Selector{
		Include: c.include,
		Applies: func(cond *ast.Named) bool { return c.applies(cond, t) },
	})
	p := &Plan{Type: t, Fields: make([]*Field, 0, len(keys))}
	for _, k := range keys {
		nodes := occurrences[k]
		name := nodes[0].Name.Value
		key, _ := json.Marshal(k)
		f := &Field{Key: k, json: append(key, ':'), Name: name, Nodes: nodes}
		if name == "__typename" {
			p.Fields = append(p.Fields, f)
			continue
		}
		f.Def = c.fieldDef(t, name)
		if f.Def == nil {
			continue // as graphql-go does; validation leaves none
		}
		p.Fields = append(p.Fields, f)
		if introspection(t, name) {
			f.schema = c.schema
		}
		if len(f.Def.Args) > 0 {
			if !root && readsVariables(nodes[0].Arguments) {
				c.dynamic = true
			}
			f.Args = ArgumentValues(f.Def.Args, nodes[0].Arguments, c.vars)
		}
		var subs []*ast.SelectionSet
		for _, n := range nodes {
			if n.SelectionSet != nil {
				subs = append(subs, n.SelectionSet)
			}
		}
		switch named := graphql.GetNamed(f.Def.Type).(type) {
		case *graphql.Object:
			f.sub = c.plan(named, subs, false)
		case *graphql.Interface, *graphql.Union: // not graphql.Abstract: every named type has a Name
			// Its plans are compiled later: whether they read variables
			// is known now.
			if setsReadVariables(subs, c.fragments, map[string]bool{}) {
				c.dynamic = true
			}
			f.abstract = &abstractPlans{c: c, sets: subs}
		default:
			if !root && c.writers != nil {
				f.write = c.writers(t, f.Def, f.Args)
			}
		}
	}
	return p
}

// fieldDef returns the definition of the field name of t, with the
// introspection fields of the query type, as graphql-go finds it.
func (c *compiler) fieldDef(t *graphql.Object, name string) *graphql.FieldDefinition {
	if t == c.schema.QueryType() {
		switch name {
		case graphql.SchemaMetaFieldDef.Name:
			return graphql.SchemaMetaFieldDef
		case graphql.TypeMetaFieldDef.Name:
			return graphql.TypeMetaFieldDef
		}
	}
	return t.Fields()[name]
}

// introspection reports whether the field name of t is introspection's:
// its resolvers read the schema.
func introspection(t *graphql.Object, name string) bool {
	return len(name) > 1 && name[:2] == "__" || len(t.Name()) > 1 && t.Name()[:2] == "__"
}

// include evaluates @skip and @include as graphql-go does: the last of
// each counts, skip first, and an "if" that is not a boolean does not
// exclude.
func (c *compiler) include(dirs []*ast.Directive) bool {
	var skip, incl *ast.Directive
	for _, d := range dirs {
		if d == nil || d.Name == nil {
			continue
		}
		switch d.Name.Value {
		case graphql.SkipDirective.Name:
			skip = d
		case graphql.IncludeDirective.Name:
			incl = d
		}
	}
	if skip != nil {
		if b, ok := c.condition(graphql.SkipDirective, skip).(bool); ok && b {
			return false
		}
	}
	if incl != nil {
		if b, ok := c.condition(graphql.IncludeDirective, incl).(bool); ok && !b {
			return false
		}
	}
	return true
}

// condition returns the "if" of a directive d defined by def.
func (c *compiler) condition(def *graphql.Directive, d *ast.Directive) any {
	if readsVariables(d.Arguments) {
		c.dynamic = true
	}
	return ArgumentValues(def.Args, d.Arguments, c.vars)["if"]
}

// applies reports whether a fragment's type condition applies to t, as
// graphql-go decides: the same type, or an abstract type t is a possible
// type of.
func (c *compiler) applies(cond *ast.Named, t *graphql.Object) bool {
	if cond == nil || cond.Name == nil {
		return true
	}
	if cond.Name.Value == t.Name() {
		return true
	}
	switch ct := c.schema.Type(cond.Name.Value).(type) {
	case *graphql.Interface:
		return isPossibleType(c.schema, ct, t)
	case *graphql.Union:
		return isPossibleType(c.schema, ct, t)
	}
	return false
}

// isPossibleType reports whether t is a possible type of the abstract type
// a, as schema.IsPossibleType does; but that one caches its answers in the
// schema without a lock, and requests run at once.
func isPossibleType(schema *graphql.Schema, a graphql.Abstract, t *graphql.Object) bool {
	return slices.Contains(schema.PossibleTypes(a), t)
}

// abstractPlans are the plans of an interface- or union-typed field, one
// per runtime type, compiled when first needed: an interface that many
// kinds implement would otherwise compile a plan per kind for every field
// that returns it.
type abstractPlans struct {
	c    *compiler
	sets []*ast.SelectionSet
	mu   sync.Mutex
	// plans holds a *Plan per *graphql.Object.
	plans sync.Map
	// possibleTypes holds, per *graphql.Object, whether it is a
	// possible type of the field's type: a list of hundreds of kinds is
	// not searched for each object.
	possibleTypes sync.Map
}

// possible reports whether t is a possible type of a, the field's type.
func (a *abstractPlans) possible(abstract graphql.Abstract, t *graphql.Object) bool {
	if ok, found := a.possibleTypes.Load(t); found {
		return ok.(bool)
	}
	ok := isPossibleType(a.c.schema, abstract, t)
	a.possibleTypes.Store(t, ok)
	return ok
}

// of returns the plan for values of t.
func (a *abstractPlans) of(t *graphql.Object) *Plan {
	if p, ok := a.plans.Load(t); ok {
		return p.(*Plan)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if p, ok := a.plans.Load(t); ok {
		return p.(*Plan)
	}
	// The compiler's variables are the plan's: a plan kept for any
	// variables reads none below its root.
	c := *a.c
	p := c.plan(t, a.sets, false)
	a.plans.Store(t, p)
	return p
}

// setsReadVariables reports whether any argument or directive in sets,
// their fragments expanded, refers to a variable.
func setsReadVariables(sets []*ast.SelectionSet, fragments map[string]*ast.FragmentDefinition, visited map[string]bool) bool {
	for _, set := range sets {
		if set == nil {
			continue
		}
		for _, s := range set.Selections {
			var dirs []*ast.Directive
			var sub *ast.SelectionSet
			switch s := s.(type) {
			case *ast.Field:
				if readsVariables(s.Arguments) {
					return true
				}
				dirs, sub = s.Directives, s.SelectionSet
			case *ast.InlineFragment:
				dirs, sub = s.Directives, s.SelectionSet
			case *ast.FragmentSpread:
				dirs = s.Directives
				if s.Name != nil && !visited[s.Name.Value] {
					visited[s.Name.Value] = true
					if f := fragments[s.Name.Value]; f != nil {
						sub = f.SelectionSet
					}
				}
			}
			for _, d := range dirs {
				if d != nil && readsVariables(d.Arguments) {
					return true
				}
			}
			if sub != nil && setsReadVariables([]*ast.SelectionSet{sub}, fragments, visited) {
				return true
			}
		}
	}
	return false
}

// readsVariables reports whether any argument refers to a variable.
func readsVariables(args []*ast.Argument) bool {
	for _, a := range args {
		if a != nil && document.ReadsVariables(a.Value) {
			return true
		}
	}
	return false
}

// ArgumentValues returns the arguments of a field (or directive) as
// graphql-go gives them to resolvers: each argument's value from its
// literal or variable (vars are the coerced variables), its default when
// that is null, left out when still null.
func ArgumentValues(defs []*graphql.Argument, nodes []*ast.Argument, vars map[string]any) map[string]any {
	out := make(map[string]any, len(defs))
	for _, d := range defs {
		var node ast.Value
		for _, n := range nodes {
			if n != nil && n.Name != nil && n.Name.Value == d.PrivateName {
				node = n.Value
			}
		}
		v := literalInput(node, d.Type, vars)
		if isNull(v) {
			v = d.DefaultValue
		}
		if !isNull(v) {
			out[d.PrivateName] = v
		}
	}
	return out
}

// literalInput returns the value of an argument's literal of type t, with
// the variables' values in place of variables. A single value where a list
// is expected is a list of one; input objects get their fields' defaults.
func literalInput(node ast.Value, t graphql.Input, vars map[string]any) any {
	if node == nil {
		return nil
	}
	if v, ok := node.(*ast.Variable); ok {
		if v.Name == nil {
			return nil
		}
		return vars[v.Name.Value]
	}
	switch t := t.(type) {
	case *graphql.NonNull:
		return literalInput(node, t.OfType, vars)
	case *graphql.List:
		list, ok := node.(*ast.ListValue)
		if !ok {
			return []any{literalInput(node, t.OfType, vars)}
		}
		out := make([]any, 0, len(list.Values))
		for _, item := range list.Values {
			out = append(out, literalInput(item, t.OfType, vars))
		}
		return out
	case *graphql.InputObject:
		obj, ok := node.(*ast.ObjectValue)
		if !ok {
			return nil
		}
		out := map[string]any{}
		for name, field := range t.Fields() {
			v := field.DefaultValue
			for _, f := range obj.Fields {
				if f != nil && f.Name != nil && f.Name.Value == name {
					v = literalInput(f.Value, field.Type, vars)
				}
			}
			if !isNull(v) {
				out[name] = v
			}
		}
		return out
	case *graphql.Scalar:
		return t.ParseLiteral(node)
	case *graphql.Enum:
		return t.ParseLiteral(node)
	}
	return nil
}
