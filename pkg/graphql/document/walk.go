package document

import "github.com/graphql-go/graphql/language/ast"

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

// RootFields returns the fields of op's selection set with inline
// fragments and fragment spreads (each fragment once) expanded; fragments
// are the document's, as Fragments returns them.
func RootFields(fragments map[string]*ast.FragmentDefinition, op *ast.OperationDefinition) []*ast.Field {
	return appendRootFields(nil, fragments, op.SelectionSet, map[string]bool{})
}

func appendRootFields(out []*ast.Field, fragments map[string]*ast.FragmentDefinition, set *ast.SelectionSet, seen map[string]bool) []*ast.Field {
	if set == nil {
		return out
	}
	for _, sel := range set.Selections {
		switch s := sel.(type) {
		case *ast.Field:
			out = append(out, s)
		case *ast.InlineFragment:
			out = appendRootFields(out, fragments, s.SelectionSet, seen)
		case *ast.FragmentSpread:
			if s.Name == nil || seen[s.Name.Value] {
				continue
			}
			seen[s.Name.Value] = true
			if f := fragments[s.Name.Value]; f != nil {
				out = appendRootFields(out, fragments, f.SelectionSet, seen)
			}
		}
	}
	return out
}

// CollectFields returns the response keys that sets select, in order, and
// the fields of each key, with inline fragments and fragment spreads (each
// fragment once) expanded. Type conditions and directives are not read:
// every type a fragment can be spread in is an object type, so validation
// leaves only conditions that hold.
func CollectFields(sets []*ast.SelectionSet, fragments map[string]*ast.FragmentDefinition) ([]string, map[string][]*ast.Field) {
	var keys []string
	fields := map[string][]*ast.Field{}
	visited := map[string]bool{}
	var collect func(set *ast.SelectionSet)
	collect = func(set *ast.SelectionSet) {
		if set == nil {
			return
		}
		for _, sel := range set.Selections {
			switch sel := sel.(type) {
			case *ast.Field:
				k := ResponseKey(sel)
				if _, ok := fields[k]; !ok {
					keys = append(keys, k)
				}
				fields[k] = append(fields[k], sel)
			case *ast.InlineFragment:
				collect(sel.SelectionSet)
			case *ast.FragmentSpread:
				if sel.Name == nil || visited[sel.Name.Value] {
					continue
				}
				visited[sel.Name.Value] = true
				if f := fragments[sel.Name.Value]; f != nil {
					collect(f.SelectionSet)
				}
			}
		}
	}
	for _, set := range sets {
		collect(set)
	}
	return keys, fields
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
