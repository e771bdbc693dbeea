package document

import "github.com/graphql-go/graphql/language/ast"

// Depth returns the depth of the deepest operation of doc, counting
// fields, with fragments expanded, and the depth of its deepest
// introspection selection (under __schema or __type). A fragment that
// spreads itself (a cycle, which Limits.Check reports) counts as empty
// where it recurs.
func Depth(doc *ast.Document) (regular, introspection int) {
	w := depthWalker{fragments: Fragments(doc), memo: map[string]int{}}
	for _, d := range doc.Definitions {
		op, ok := d.(*ast.OperationDefinition)
		if !ok {
			continue
		}
		keys, fields := CollectFields([]*ast.SelectionSet{op.SelectionSet}, w.fragments, Selector{})
		for _, k := range keys {
			for _, f := range fields[k] {
				d := 1 + w.setDepth(f.SelectionSet)
				if f.Name != nil && (f.Name.Value == "__schema" || f.Name.Value == "__type") {
					introspection = max(introspection, d)
				} else {
					regular = max(regular, d)
				}
			}
		}
	}
	return regular, introspection
}

// depthWalker measures the depth of selection sets.
type depthWalker struct {
	fragments map[string]*ast.FragmentDefinition
	// memo holds the depth of each fragment's selection set, -1 while it is
	// being computed.
	memo map[string]int
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

// fragmentDepth returns the depth of the named fragment's selection set.
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
