package document

import (
	"errors"
	"fmt"
	"strings"

	"github.com/graphql-go/graphql/language/ast"
)

// MinIntrospectionDepth is the least depth allowed to introspection
// (__schema, __type): graphql-js 16's introspection query, which GraphiQL
// sends, is 15 deep.
const MinIntrospectionDepth = 16

// MaxSelections bounds how many selections (fields, fragment spreads,
// inline fragments) a document may hold, each counted once where it is
// written. graphql-go's validation (OverlappingFieldsCanBeMerged) takes time
// quadratic in the number of fields of a selection set: 2,000 fields cost
// about 0.1 s, the 200,000 a 1 MiB body can hold would cost many minutes.
const MaxSelections = 2000

// ErrSyntax is wrapped by the errors of Check that graphql-go's parser
// should have reported: the document is not valid GraphQL.
var ErrSyntax = errors.New("syntax error")

// Limits are the depth limits of a server's documents.
type Limits struct {
	// Depth is how deeply an operation may nest field selections, with
	// fragments expanded.
	Depth int
	// IntrospectionDepth is how deeply introspection (__schema, __type)
	// may nest: Depth, or MinIntrospectionDepth if that is more.
	IntrospectionDepth int
}

// NewLimits returns the limits of documents that nest field selections at
// most maxDepth deep.
func NewLimits(maxDepth int) Limits {
	return Limits{Depth: maxDepth, IntrospectionDepth: max(maxDepth, MinIntrospectionDepth)}
}

// nesting is the deepest bracket nesting a document may have before it is
// parsed. graphql-go's parser recurses once per level, so a document made of
// a million '{' would exhaust the stack: such documents are refused before
// parsing. A document within the depth limits nests one selection set per
// level, plus a few levels of arguments, lists and input objects.
func (l Limits) nesting() int { return 2*l.IntrospectionDepth + 32 }

// CheckText refuses a query text, before it is parsed, whose brackets nest
// deeper than those of any document within the limits.
func (l Limits) CheckText(query string) error {
	if n, limit := bracketDepth(query, l.nesting()), l.nesting(); n > limit {
		return fmt.Errorf("document nests brackets more than %d levels deep; the query depth limit is %d", limit, l.Depth)
	}
	return nil
}

// Check returns why a parsed document is refused before graphql-go
// validates it, or nil: a variable definition without a type (an error
// wrapping ErrSyntax), more than MaxSelections selections, a fragment that
// spreads itself, or operations deeper than the limits (one error for
// Depth and one for IntrospectionDepth). The first three are checked in
// that order, each only if the ones before pass, since graphql-go crashes
// on them or takes too long.
func (l Limits) Check(doc *ast.Document) []error {
	if err := checkVariableTypes(doc); err != nil {
		return []error{err}
	}
	if n := countSelections(doc, MaxSelections); n > MaxSelections {
		return []error{fmt.Errorf("document has more than %d selections", MaxSelections)}
	}
	if err := checkFragmentCycles(doc); err != nil {
		return []error{err}
	}
	var errs []error
	regular, introspection := Depth(doc)
	if regular > l.Depth {
		errs = append(errs, fmt.Errorf("query depth %d exceeds the limit of %d", regular, l.Depth))
	}
	if introspection > l.IntrospectionDepth {
		errs = append(errs, fmt.Errorf("introspection depth %d exceeds the limit of %d", introspection, l.IntrospectionDepth))
	}
	return errs
}

// bracketDepth returns how deeply (, [ and { nest in the query text, outside
// strings and comments, stopping early once the depth passes limit.
func bracketDepth(q string, limit int) int {
	depth, deepest := 0, 0
	for i := 0; i < len(q); i++ {
		switch c := q[i]; c {
		case '#':
			for i < len(q) && q[i] != '\n' && q[i] != '\r' {
				i++
			}
		case '"':
			if strings.HasPrefix(q[i:], `"""`) {
				// Block string: ends at the next """ not escaped as \""".
				i += 3
				for i < len(q) && !strings.HasPrefix(q[i:], `"""`) {
					if strings.HasPrefix(q[i:], `\"""`) {
						i += 3
					}
					i++
				}
				i += 2
				continue
			}
			for i++; i < len(q) && q[i] != '"' && q[i] != '\n'; i++ {
				if q[i] == '\\' {
					i++
				}
			}
		case '(', '[', '{':
			depth++
			if depth > deepest {
				deepest = depth
				if deepest > limit {
					return deepest
				}
			}
		case ')', ']', '}':
			if depth > 0 {
				depth--
			}
		}
	}
	return deepest
}

// countSelections returns how many selections doc holds, stopping once the
// count passes limit.
func countSelections(doc *ast.Document, limit int) int {
	n := 0
	var walk func(set *ast.SelectionSet)
	walk = func(set *ast.SelectionSet) {
		if set == nil {
			return
		}
		for _, sel := range set.Selections {
			if n++; n > limit {
				return
			}
			switch s := sel.(type) {
			case *ast.Field:
				walk(s.SelectionSet)
			case *ast.InlineFragment:
				walk(s.SelectionSet)
			}
		}
	}
	for _, d := range doc.Definitions {
		switch d := d.(type) {
		case *ast.OperationDefinition:
			walk(d.SelectionSet)
		case *ast.FragmentDefinition:
			walk(d.SelectionSet)
		}
		if n > limit {
			break
		}
	}
	return n
}

// checkVariableTypes reports variable definitions without a type, which
// graphql-go's parser accepts ("query($a:) {…}") and its validation
// crashes on.
func checkVariableTypes(doc *ast.Document) error {
	for _, d := range doc.Definitions {
		op, ok := d.(*ast.OperationDefinition)
		if !ok {
			continue
		}
		for _, v := range op.VariableDefinitions {
			if v == nil || v.Type == nil || v.Variable == nil || v.Variable.Name == nil {
				return fmt.Errorf("%w: a variable definition lacks its type", ErrSyntax)
			}
		}
	}
	return nil
}

// checkFragmentCycles reports a fragment that spreads itself, directly or
// through others. Validation rejects such documents too, but graphql-go's
// OverlappingFieldsCanBeMerged rule runs first and recurses without end on
// some of them: a stack overflow, which no recover catches.
func checkFragmentCycles(doc *ast.Document) error {
	spreads := map[string][]string{} // by fragment name; duplicates merged
	var names []string               // in document order, so the error is the same for the same document
	for _, d := range doc.Definitions {
		if f, ok := d.(*ast.FragmentDefinition); ok && f.Name != nil {
			if _, seen := spreads[f.Name.Value]; !seen {
				names = append(names, f.Name.Value)
			}
			spreads[f.Name.Value] = appendSpreads(spreads[f.Name.Value], f.SelectionSet)
		}
	}
	const (
		visiting = 1
		done     = 2
	)
	state := map[string]int{}
	var visit func(name string) error
	visit = func(name string) error {
		switch state[name] {
		case visiting:
			return fmt.Errorf("cannot spread fragment %q within itself", name)
		case done:
			return nil
		}
		state[name] = visiting
		for _, next := range spreads[name] {
			if err := visit(next); err != nil {
				return err
			}
		}
		state[name] = done
		return nil
	}
	for _, name := range names {
		if err := visit(name); err != nil {
			return err
		}
	}
	return nil
}

// appendSpreads appends the names of the fragments set spreads, at any
// depth, to names.
func appendSpreads(names []string, set *ast.SelectionSet) []string {
	if set == nil {
		return names
	}
	for _, sel := range set.Selections {
		switch s := sel.(type) {
		case *ast.Field:
			names = appendSpreads(names, s.SelectionSet)
		case *ast.InlineFragment:
			names = appendSpreads(names, s.SelectionSet)
		case *ast.FragmentSpread:
			if s.Name != nil {
				names = append(names, s.Name.Value)
			}
		}
	}
	return names
}
