package fieldpath

import (
	"encoding/json"
	"unsafe"

	"github.com/tidwall/gjson"
)

// Kind is the JSON type of a Value.
type Kind uint8

// The kinds of values. Null is not among them: a null is absent.
const (
	String Kind = iota + 1
	Number
	Bool
	Object
	Array
)

// Value is one value found at a path. Its strings point into the object's
// stored bytes: they are valid as long as the object, which is immutable.
type Value struct {
	Kind Kind
	// Str is the string of a String, unescaped.
	Str string
	// Num is the number of a Number.
	Num float64
	// Bool is the value of a Bool.
	Bool bool
	// raw is the value's JSON text; "" for the cluster name.
	raw string
}

// AppendJSON appends the value as JSON: its stored text.
func (v Value) AppendJSON(dst []byte) []byte {
	if v.raw == "" {
		b, _ := json.Marshal(v.Str) // a string always encodes
		return append(dst, b...)
	}
	return append(dst, v.raw...)
}

// Each calls fn, in document order, for each value at p in the object of
// cluster whose stored JSON is raw, until fn returns false; it returns
// false if fn did. Absent values and nulls are skipped; where p crosses an
// array, each element is followed (so nested arrays are flattened). A key
// step applies to objects only, [] to arrays only: a step that does not
// apply finds nothing. It never decodes the object: each step skips the
// members it does not need. raw need not be valid JSON (what is not finds
// nothing or garbage, never a panic).
func (p Path) Each(cluster string, raw []byte, fn func(Value) bool) bool {
	if p.cluster {
		return fn(Value{Kind: String, Str: cluster})
	}
	if len(p.segs) == 0 || len(raw) == 0 {
		return true
	}
	// Raw is never modified: a string view of it saves gjson a copy.
	root := gjson.Parse(unsafe.String(unsafe.SliceData(raw), len(raw)))
	return each(root, p.segs, fn)
}

func each(r gjson.Result, segs []segment, fn func(Value) bool) bool {
	for len(segs) > 0 {
		s := segs[0]
		segs = segs[1:]
		if s.each {
			if !r.IsArray() {
				return true
			}
			more := true
			r.ForEach(func(_, e gjson.Result) bool {
				more = each(e, segs, fn)
				return more
			})
			return more
		}
		if !r.IsObject() {
			return true
		}
		r = r.Get(s.gkey)
	}
	v, ok := valueOf(r)
	if !ok {
		return true
	}
	return fn(v)
}

// valueOf returns r as a Value; false for nulls and absent values.
func valueOf(r gjson.Result) (Value, bool) {
	v := Value{raw: r.Raw}
	switch r.Type {
	case gjson.String:
		v.Kind, v.Str = String, r.Str
	case gjson.Number:
		v.Kind, v.Num = Number, r.Num
	case gjson.True:
		v.Kind, v.Bool = Bool, true
	case gjson.False:
		v.Kind = Bool
	case gjson.JSON:
		v.Kind = Object
		if r.IsArray() {
			v.Kind = Array
		}
	default:
		return Value{}, false
	}
	if v.raw == "" {
		return Value{}, false
	}
	return v, true
}

// Has reports whether p has a value (not null) in the object.
func (p Path) Has(cluster string, raw []byte) bool {
	return !p.Each(cluster, raw, func(Value) bool { return false })
}

// AppendJSON appends the value at p as JSON, copied from the stored bytes:
// for a path that crosses an array, the list of the values found (nested
// arrays flattened, absent values and nulls left out); otherwise the value.
// Either is null when no value is found.
func (p Path) AppendJSON(dst []byte, cluster string, raw []byte) []byte {
	n := 0
	start := len(dst)
	if p.crosses {
		dst = append(dst, '[')
	}
	p.Each(cluster, raw, func(v Value) bool {
		if n > 0 {
			dst = append(dst, ',')
		}
		dst = v.AppendJSON(dst)
		n++
		return p.crosses
	})
	switch {
	case n == 0:
		return append(dst[:start], "null"...)
	case p.crosses:
		return append(dst, ']')
	}
	return dst
}
