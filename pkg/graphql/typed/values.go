package typed

import (
	"encoding/json"
	"math"
	"unsafe"

	"github.com/graphql-go/graphql"
	"github.com/tidwall/gjson"

	"github.com/fleetcache/fleetcache/pkg/graphql/execute"
	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
	"github.com/fleetcache/fleetcache/pkg/index/object"
)

// node is the value of a nested object of a typed kind: its JSON text, a
// view of the object's stored bytes (or of their decoded copy), which
// nothing modifies. The text may go on after the object's end (a spec
// read from where the object's Doc says it begins): gjson stops there.
// obj is the object it is part of, when no list lies between them: its
// fields' values may then be kept beside the body (Object.Projected).
type node struct {
	raw string
	obj *object.Object
}

// member returns the value of the member key (gjson's escape of it: gkey)
// of src, an *object.Object or a *node; a missing value does not Exist.
// For a value read as an object (asNode), whose Raw may then run on past
// the value (gjson reads a node's members and stops at its end; not so a
// list's items), it starts where the object's Doc says spec and status
// begin, as paths do (fieldpath), or where leadingMember finds it, rather
// than read the value whole to find where it ends.
func member(src any, key, gkey string, asNode bool) gjson.Result {
	switch v := src.(type) {
	case *node:
		if asNode {
			if at := leadingMember(v.raw, key); at > 0 && v.raw[at] == '{' {
				return gjson.Parse(v.raw[at:])
			}
		}
		return gjson.Get(v.raw, gkey)
	case *object.Object:
		d := v.Doc()
		raw := unsafe.String(unsafe.SliceData(d.Raw), len(d.Raw))
		at := 0
		switch {
		case !asNode:
		case key == "spec":
			at = d.Spec
		case key == "status":
			at = d.Status
		}
		if asNode && at == 0 {
			at = leadingMember(raw, key)
		}
		if at > 0 && at < len(raw) && raw[at] == '{' {
			return gjson.Parse(raw[at:])
		}
		return gjson.Get(raw, gkey)
	}
	return gjson.Result{}
}

// leadingMember returns where the value of the top-level member key of
// the JSON object raw begins, when only members with string values come
// before it (metadata, after kind and apiVersion); else 0. gjson would
// read the value to its end to find it, a Pod's metadata whole, where the
// typed fields need a few members of it.
func leadingMember(raw, key string) int {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return 0
	}
	for {
		i = skipSpace(raw, i+1)
		k, end := plainString(raw, i)
		if end < 0 {
			return 0
		}
		i = skipSpace(raw, end)
		if i >= len(raw) || raw[i] != ':' {
			return 0
		}
		i = skipSpace(raw, i+1)
		if k == key {
			return i
		}
		if _, end = plainString(raw, i); end < 0 {
			return 0 // a value other than a plain string: let gjson find it
		}
		i = skipSpace(raw, end)
		if i >= len(raw) || raw[i] != ',' {
			return 0
		}
	}
}

// plainString returns the string without escapes that begins at i in s,
// and where it ends; -1 if there is none.
func plainString(s string, i int) (string, int) {
	if i >= len(s) || s[i] != '"' {
		return "", -1
	}
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			return "", -1
		case '"':
			return s[i+1 : j], j + 1
		}
	}
	return "", -1
}

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
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

// field is how a typed field reads its value: its JSON key, and its shape;
// its path from the kind, when no list lies on the way (projected), to
// read it beside the body where the object keeps it (Object.Projected).
type field struct {
	key, gkey string
	s         *shape
	path      fieldpath.Path
	projected bool
}

// stored returns the value of f in src when src's object keeps it beside
// its body, as Resource.field reads it.
func (f *field) stored(src any) (gjson.Result, bool) {
	if !f.projected {
		return gjson.Result{}, false
	}
	var o *object.Object
	switch src := src.(type) {
	case *object.Object:
		o = src
	case *node:
		o = src.obj
	}
	if o == nil {
		return gjson.Result{}, false
	}
	v, ok := o.Projected(f.path)
	if !ok {
		return gjson.Result{}, false
	}
	return gjson.Parse(unsafe.String(unsafe.SliceData(v), len(v))), true
}

// resolve is the field's resolver: a leaf's value, a list's values, or a
// nested object's node.
func (f *field) resolve(p graphql.ResolveParams) (any, error) {
	r := member(p.Source, f.key, f.gkey, f.s.object())
	switch {
	case f.s.list:
		if !r.IsArray() {
			return nil, nil
		}
		if f.s.item.object() {
			// The nodes in one allocation, and the list in another.
			nodes := make([]node, 0, 4)
			r.ForEach(func(_, e gjson.Result) bool {
				if e.IsObject() {
					nodes = append(nodes, node{raw: e.Raw}) // under a list: no obj
				}
				return true
			})
			out := make([]any, len(nodes))
			for i := range nodes {
				out[i] = &nodes[i]
			}
			return out, nil
		}
		out := make([]any, 0, 4)
		r.ForEach(func(_, e gjson.Result) bool {
			if fits(e, f.s.item.leaf) {
				out = append(out, leafValue(e, f.s.item.leaf))
			}
			return true
		})
		return out, nil
	case f.s.object():
		if !r.IsObject() {
			return nil, nil
		}
		n := &node{raw: r.Raw}
		switch src := p.Source.(type) {
		case *object.Object:
			n.obj = src
		case *node:
			n.obj = src.obj
		}
		return n, nil
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
			r := member(src, f.key, f.gkey, false)
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
		if r, ok := f.stored(src); ok {
			return appendLeaf(dst, r, l), true
		}
		return appendLeaf(dst, member(src, f.key, f.gkey, false), l), true
	}
}
