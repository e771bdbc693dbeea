package ordered

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"

	"github.com/graphql-go/graphql/language/ast"

	"github.com/fleetcache/fleetcache/pkg/graphql/document"
)

// ErrTooLarge stops an encoding that passed its limit.
var ErrTooLarge = errors.New("response too large")

// Selections are the selections of the operation a result answers, to
// order its data.
type Selections struct {
	set       *ast.SelectionSet
	fragments map[string]*ast.FragmentDefinition
}

// New returns the selections of op, an operation of doc.
func New(doc *ast.Document, op *ast.OperationDefinition) *Selections {
	return &Selections{set: op.SelectionSet, fragments: document.Fragments(doc)}
}

// Encode encodes data, as graphql-go returns it, with the fields of each
// object in selection order. It stops with ErrTooLarge once the encoding
// passes limit bytes.
func (s *Selections) Encode(data any, limit int) ([]byte, error) {
	var buf bytes.Buffer
	if err := s.write(&buf, data, []*ast.SelectionSet{s.set}, limit); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// write encodes v, an object or list of objects when sets select its
// fields, a leaf value otherwise.
func (s *Selections) write(buf *bytes.Buffer, v any, sets []*ast.SelectionSet, limit int) error {
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
		return ErrTooLarge
	}
	return nil
}

// keys returns the response keys the selection sets select, in order, and
// the selection sets of each key's fields.
func (s *Selections) keys(sets []*ast.SelectionSet) ([]string, map[string][]*ast.SelectionSet) {
	keys, fields := document.CollectFields(sets, s.fragments)
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
