package graphql

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/graphql-go/graphql/language/ast"
)

// graphql-go returns objects as Go maps, which encoding/json writes in key
// order; GraphQL responses should list fields in the order the query
// selects them. orderedData writes the data that way, guided by the
// operation's selection sets.

// selections is the operation a result answers, to order its data.
type selections struct {
	set       *ast.SelectionSet
	fragments map[string]*ast.FragmentDefinition
}

func newSelections(doc *ast.Document, op *ast.OperationDefinition) *selections {
	s := &selections{set: op.SelectionSet, fragments: map[string]*ast.FragmentDefinition{}}
	for _, d := range doc.Definitions {
		if f, ok := d.(*ast.FragmentDefinition); ok && f.Name != nil {
			s.fragments[f.Name.Value] = f
		}
	}
	return s
}

// orderedData encodes data with the fields of each object in selection
// order. It stops with errResponseTooLarge once the encoding passes limit
// bytes.
func (s *selections) orderedData(data any, limit int) ([]byte, error) {
	var buf bytes.Buffer
	if err := s.write(&buf, data, []*ast.SelectionSet{s.set}, limit); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// write encodes v, an object or list of objects when sets select its
// fields, a leaf value otherwise.
func (s *selections) write(buf *bytes.Buffer, v any, sets []*ast.SelectionSet, limit int) error {
	switch v := v.(type) {
	case map[string]any:
		if len(sets) == 0 {
			break
		}
		keys, sub := s.keys(sets)
		for k := range v {
			if _, ok := sub[k]; !ok {
				keys = append(keys, k) // not selected: cannot happen, but keep it
			}
		}
		buf.WriteByte('{')
		n := 0
		for _, k := range keys {
			fv, ok := v[k]
			if !ok {
				continue // skipped by a directive or a type condition
			}
			if n++; n > 1 {
				buf.WriteByte(',')
			}
			kb, err := json.Marshal(k)
			if err != nil {
				return err
			}
			buf.Write(kb)
			buf.WriteByte(':')
			if err := s.write(buf, fv, sub[k], limit); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
		return nil
	case []any:
		if len(sets) == 0 {
			break
		}
		buf.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := s.write(buf, e, sets, limit); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	buf.Write(b)
	if buf.Len() > limit {
		return errResponseTooLarge
	}
	return nil
}

// keys returns the response keys the selection sets select, in order, and
// the selection sets of each key's fields.
func (s *selections) keys(sets []*ast.SelectionSet) ([]string, map[string][]*ast.SelectionSet) {
	keys, fields := collectFields(sets, s.fragments)
	sub := make(map[string][]*ast.SelectionSet, len(keys))
	for _, k := range keys {
		sub[k] = nil
		for _, f := range fields[k] {
			if f.SelectionSet != nil && !slices.Contains(sub[k], f.SelectionSet) {
				sub[k] = append(sub[k], f.SelectionSet)
			}
		}
	}
	return keys, sub
}

// collectFields returns the response keys that sets select, in order, and
// the fields of each key, with inline fragments and fragment spreads (each
// fragment once) expanded. Type conditions and directives are not read:
// every type a fragment can be spread in is an object type, so validation
// leaves only conditions that hold.
func collectFields(sets []*ast.SelectionSet, fragments map[string]*ast.FragmentDefinition) ([]string, map[string][]*ast.Field) {
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
				k := responseKey(sel)
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

func responseKey(f *ast.Field) string {
	if f.Alias != nil && f.Alias.Value != "" {
		return f.Alias.Value
	}
	if f.Name != nil {
		return f.Name.Value
	}
	return ""
}
