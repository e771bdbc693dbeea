package graphql

import (
	"strings"

	"github.com/graphql-go/graphql/language/ast"
)

// introspectionDepth is the least depth allowed to introspection
// (__schema, __type): graphql-js 16's introspection query, which GraphiQL
// sends, is 15 deep.
const introspectionDepth = 16

// depthLimits are the depth limits of a Server's documents.
type depthLimits struct {
	max, introspection int
}

func newDepthLimits(maxDepth int) depthLimits {
	return depthLimits{max: maxDepth, introspection: max(maxDepth, introspectionDepth)}
}

// nesting is the deepest bracket nesting a document may have before it is
// parsed. graphql-go's parser recurses once per level, so a document made of
// a million '{' would exhaust the stack: such documents are refused before
// parsing. A document within the depth limits nests one selection set per
// level, plus a few levels of arguments, lists and input objects.
func (l depthLimits) nesting() int { return 2*l.introspection + 32 }

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

// depthOf returns the depth of the deepest operation of doc, counting
// fields, with fragments expanded, and the depth of its deepest
// introspection selection (under __schema or __type). A fragment that
// spreads itself (a cycle, which validation reports) counts as empty where
// it recurs.
func depthOf(doc *ast.Document) (regular, introspection int) {
	w := depthWalker{fragments: map[string]*ast.FragmentDefinition{}, memo: map[string]int{}}
	for _, d := range doc.Definitions {
		if f, ok := d.(*ast.FragmentDefinition); ok && f.Name != nil {
			w.fragments[f.Name.Value] = f
		}
	}
	for _, d := range doc.Definitions {
		op, ok := d.(*ast.OperationDefinition)
		if !ok {
			continue
		}
		for _, f := range w.rootFields(op.SelectionSet, map[string]bool{}) {
			d := 1 + w.setDepth(f.SelectionSet)
			if f.Name != nil && (f.Name.Value == "__schema" || f.Name.Value == "__type") {
				introspection = max(introspection, d)
			} else {
				regular = max(regular, d)
			}
		}
	}
	return regular, introspection
}

type depthWalker struct {
	fragments map[string]*ast.FragmentDefinition
	// memo holds the depth of each fragment's selection set, -1 while it is
	// being computed.
	memo map[string]int
}

// rootFields returns the fields of an operation's selection set with
// fragments expanded.
func (w *depthWalker) rootFields(set *ast.SelectionSet, seen map[string]bool) []*ast.Field {
	if set == nil {
		return nil
	}
	var out []*ast.Field
	for _, sel := range set.Selections {
		switch s := sel.(type) {
		case *ast.Field:
			out = append(out, s)
		case *ast.InlineFragment:
			out = append(out, w.rootFields(s.SelectionSet, seen)...)
		case *ast.FragmentSpread:
			if s.Name == nil || seen[s.Name.Value] {
				continue
			}
			seen[s.Name.Value] = true
			if f := w.fragments[s.Name.Value]; f != nil {
				out = append(out, w.rootFields(f.SelectionSet, seen)...)
			}
		}
	}
	return out
}

// setDepth returns the depth of a selection set: 0 for none, 1 for leaf
// fields only.
func (w *depthWalker) setDepth(set *ast.SelectionSet) int {
	if set == nil {
		return 0
	}
	deepest := 0
	for _, sel := range set.Selections {
		switch s := sel.(type) {
		case *ast.Field:
			deepest = max(deepest, 1+w.setDepth(s.SelectionSet))
		case *ast.InlineFragment:
			deepest = max(deepest, w.setDepth(s.SelectionSet))
		case *ast.FragmentSpread:
			if s.Name != nil {
				deepest = max(deepest, w.fragmentDepth(s.Name.Value))
			}
		}
	}
	return deepest
}

func (w *depthWalker) fragmentDepth(name string) int {
	if d, ok := w.memo[name]; ok {
		return max(d, 0) // -1: a cycle
	}
	f := w.fragments[name]
	if f == nil {
		return 0
	}
	w.memo[name] = -1
	d := w.setDepth(f.SelectionSet)
	w.memo[name] = d
	return d
}

// maxSelections bounds how many selections (fields, fragment spreads,
// inline fragments) a document may hold, each counted once where it is
// written. graphql-go's validation (OverlappingFieldsCanBeMerged) takes time
// quadratic in the number of fields of a selection set: 2,000 fields cost
// about 0.1 s, the 200,000 a 1 MiB body can hold would cost many minutes.
const maxSelections = 2000

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
