package typed

import (
	"encoding/json"
	"math"
	"unsafe"

	"github.com/graphql-go/graphql"
	"github.com/tidwall/gjson"

	"github.com/fleetcache/fleetcache/pkg/graphql/execute"
	"github.com/fleetcache/fleetcache/pkg/index/object"
)

// node is the value of a nested object of a typed kind: its JSON text, a
// view of the object's stored bytes (or of their decoded copy), which
// nothing modifies.
type node string

// member returns the value of the member key (gjson's escape of it: gkey)
// of src, an *object.Object or a node; a missing value does not Exist.
// For an object's spec and status it starts where the object's Doc says
// they begin, as paths do (fieldpath), rather than skip what precedes them.
func member(src any, key, gkey string) gjson.Result {
	switch v := src.(type) {
	case node:
		return gjson.Get(string(v), gkey)
	case *object.Object:
		d := v.Doc()
		raw := unsafe.String(unsafe.SliceData(d.Raw), len(d.Raw))
		at := 0
		switch key {
		case "spec":
			at = d.Spec
		case "status":
			at = d.Status
		}
		if at > 0 && at < len(raw) {
			if end := valueEnd(raw[at:]); end > 0 {
				return gjson.Parse(raw[at : at+end])
			}
		}
		return gjson.Get(raw, gkey)
	}
	return gjson.Result{}
}

// valueEnd returns the length of the JSON object or array s begins with,
// 0 if s does not begin with one or it does not end.
func valueEnd(s string) int {
	if len(s) == 0 || (s[0] != '{' && s[0] != '[') {
		return 0
	}
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"':
			for i++; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' {
					i++
				}
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				return i + 1
			}
		}
	}
	return 0
}

// fits reports whether r is a value of the scalar l.
func fits(r gjson.Result, l leaf) bool {
	switch l {
	case leafString:
		return r.Type == gjson.String
	case leafInt:
		return r.Type == gjson.Number && r.Num == math.Trunc(r.Num) && r.Num >= math.MinInt32 && r.Num <= math.MaxInt32
	case leafLong:
		return r.Type == gjson.Number && r.Num == math.Trunc(r.Num)
	case leafFloat:
		return r.Type == gjson.Number
	case leafBool:
		return r.Type == gjson.True || r.Type == gjson.False
	case leafIntOrString:
		return r.Type == gjson.String || r.Type == gjson.Number
	case leafJSON:
		return r.Exists() && r.Type != gjson.Null
	}
	return false
}

// leafValue returns r as the resolver of a field of scalar l returns it:
// what graphql-go's scalar serializes to the same JSON as appendLeaf
// writes; nil when r is not a value of l.
func leafValue(r gjson.Result, l leaf) any {
	if !fits(r, l) {
		return nil
	}
	switch l {
	case leafString:
		return r.Str
	case leafInt:
		return int(r.Num)
	case leafFloat:
		return r.Num
	case leafBool:
		return r.Type == gjson.True
	}
	// Long, IntOrString, JSON: their scalars write the stored text.
	return json.RawMessage(r.Raw)
}

// appendLeaf appends r as a value of the scalar l (its stored text), or
// null.
func appendLeaf(dst []byte, r gjson.Result, l leaf) []byte {
	if !fits(r, l) {
		return append(dst, "null"...)
	}
	if l == leafInt && r.Raw[0] == '-' && r.Num == 0 {
		return append(dst, '0') // -0 as graphql-go writes the int 0
	}
	return append(dst, r.Raw...)
}

// field is how a typed field reads its value: its JSON key, and its shape.
type field struct {
	key, gkey string
	s         *shape
}

// resolve is the field's resolver: a leaf's value, a list's values, or a
// nested object's node.
func (f *field) resolve(p graphql.ResolveParams) (any, error) {
	r := member(p.Source, f.key, f.gkey)
	switch {
	case f.s.list:
		if !r.IsArray() {
			return nil, nil
		}
		out := []any{}
		r.ForEach(func(_, e gjson.Result) bool {
			if f.s.item.object() {
				if e.IsObject() {
					out = append(out, node(e.Raw))
				}
			} else if fits(e, f.s.item.leaf) {
				out = append(out, leafValue(e, f.s.item.leaf))
			}
			return true
		})
		return out, nil
	case f.s.object():
		if !r.IsObject() {
			return nil, nil
		}
		return node(r.Raw), nil
	}
	return leafValue(r, f.s.leaf), nil
}

// writer returns the execute.Writer of a leaf field or a list of leaves,
// nil for others: their values are written from the stored text without
// a resolver.
func (f *field) writer() execute.Writer {
	switch {
	case f.s.list && !f.s.item.object():
		l := f.s.item.leaf
		return func(dst []byte, src any) ([]byte, bool) {
			r := member(src, f.key, f.gkey)
			if !r.IsArray() {
				return append(dst, "null"...), true
			}
			dst = append(dst, '[')
			n := 0
			r.ForEach(func(_, e gjson.Result) bool {
				if fits(e, l) {
					if n > 0 {
						dst = append(dst, ',')
					}
					dst = appendLeaf(dst, e, l)
					n++
				}
				return true
			})
			return append(dst, ']'), true
		}
	case f.s.list || f.s.object():
		return nil
	}
	l := f.s.leaf
	return func(dst []byte, src any) ([]byte, bool) {
		return appendLeaf(dst, member(src, f.key, f.gkey), l), true
	}
}
