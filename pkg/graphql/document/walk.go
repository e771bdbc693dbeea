package document

import (
	"github.com/graphql-go/graphql"
	"github.com/graphql-go/graphql/language/ast"
)

// RootType returns the object type of schema that op, a query, mutation
// or subscription, selects fields of; nil when the schema has none.
func RootType(schema *graphql.Schema, op *ast.OperationDefinition) *graphql.Object {
	switch op.Operation {
	case ast.OperationTypeQuery:
		return schema.QueryType()
	case ast.OperationTypeMutation:
		return schema.MutationType()
	case ast.OperationTypeSubscription:
		return schema.SubscriptionType()
	}
	return nil
}

// Fragments returns the fragment definitions of doc, by name.
func Fragments(doc *ast.Document) map[string]*ast.FragmentDefinition {
	out := map[string]*ast.FragmentDefinition{}
	for _, d := range doc.Definitions {
		if f, ok := d.(*ast.FragmentDefinition); ok && f.Name != nil {
			out[f.Name.Value] = f
		}
	}
	return out
}

// A Selector decides which selections CollectFields follows. Its zero
// value follows every one: an upper bound of what any execution selects,
// as the cost of an operation is computed before its variables are known.
type Selector struct {
	// Include reports whether a field or fragment with these directives
	// is selected (@skip, @include); nil selects all.
	Include func(directives []*ast.Directive) bool
	// Applies reports whether a fragment with this type condition (nil
	// when it has none) applies to the object being collected; nil
	// applies all.
	Applies func(condition *ast.Named) bool
}

// CollectFields returns the response keys that sets select, in order, and
// the fields of each key, with inline fragments and fragment spreads (each
// fragment once) expanded, as GraphQL's CollectFields does: sel says which
// selections are followed.
func CollectFields(sets []*ast.SelectionSet, fragments map[string]*ast.FragmentDefinition, sel Selector) ([]string, map[string][]*ast.Field) {
	c := collector{sel: sel, fragments: fragments, fields: map[string][]*ast.Field{}, visited: map[string]bool{}}
	for _, set := range sets {
		c.collect(set)
	}
	return c.keys, c.fields
}

// collector is one run of CollectFields.
type collector struct {
	sel       Selector
	fragments map[string]*ast.FragmentDefinition
	keys      []string
	fields    map[string][]*ast.Field
	visited   map[string]bool
}

func (c *collector) include(dirs []*ast.Directive) bool {
	return c.sel.Include == nil || len(dirs) == 0 || c.sel.Include(dirs)
}

func (c *collector) applies(cond *ast.Named) bool {
	return c.sel.Applies == nil || c.sel.Applies(cond)
}

func (c *collector) collect(set *ast.SelectionSet) {
	if set == nil {
		return
	}
	for _, s := range set.Selections {
		switch s := s.(type) {
		case *ast.Field:
			if !c.include(s.Directives) {
				continue
			}
			k := ResponseKey(s)
			if _, ok := c.fields[k]; !ok {
				c.keys = append(c.keys, k)
			}
			c.fields[k] = append(c.fields[k], s)
		case *ast.InlineFragment:
			if c.include(s.Directives) && c.applies(s.TypeCondition) {
				c.collect(s.SelectionSet)
			}
		case *ast.FragmentSpread:
			// A fragment counts as visited once spread, even where its
			// condition does not apply (as graphql-go collects).
			if s.Name == nil || c.visited[s.Name.Value] || !c.include(s.Directives) {
				continue
			}
			c.visited[s.Name.Value] = true
			if f := c.fragments[s.Name.Value]; f != nil && c.applies(f.TypeCondition) {
				c.collect(f.SelectionSet)
			}
		}
	}
}

// ResponseKey returns the key of a field in a response: its alias, or
// else its name.
func ResponseKey(f *ast.Field) string {
	if f.Alias != nil && f.Alias.Value != "" {
		return f.Alias.Value
	}
	if f.Name != nil {
		return f.Name.Value
	}
	return ""
}

// ReadsVariables reports whether the argument value v is a variable or
// holds one (in a list or an input object).
func ReadsVariables(v ast.Value) bool {
	switch v := v.(type) {
	case *ast.Variable:
		return true
	case *ast.ListValue:
		for _, e := range v.Values {
			if ReadsVariables(e) {
				return true
			}
		}
	case *ast.ObjectValue:
		for _, f := range v.Fields {
			if f != nil && ReadsVariables(f.Value) {
				return true
			}
		}
	}
	return false
}

// Subfields returns the names of the fields selected in the selection
// sets of fields, inline fragments expanded whatever their type condition
// and directives (what the fields may select); complete is false when a
// fragment spread may select more.
func Subfields(fields []*ast.Field) (names []string, complete bool) {
	complete = true
	var walk func(set *ast.SelectionSet)
	walk = func(set *ast.SelectionSet) {
		if set == nil {
			return
		}
		for _, s := range set.Selections {
			switch s := s.(type) {
			case *ast.Field:
				if s.Name != nil {
					names = append(names, s.Name.Value)
				}
			case *ast.InlineFragment:
				walk(s.SelectionSet)
			default:
				complete = false
			}
		}
	}
	for _, f := range fields {
		walk(f.SelectionSet)
	}
	return names, complete
}
