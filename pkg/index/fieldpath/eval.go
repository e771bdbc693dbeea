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

// EachMember calls fn with each member of an Object value, in order,
// until fn returns false; with none for other values.
func (v Value) EachMember(fn func(key string, m Value) bool) {
	if v.Kind != Object {
		return
	}
	gjson.Parse(v.raw).ForEach(func(k, r gjson.Result) bool {
		if m, ok := valueOf(r); ok {
			return fn(k.Str, m)
		}
		return true
	})
}

// AppendJSON appends the value as JSON: its stored text.
func (v Value) AppendJSON(dst []byte) []byte {
	if v.raw == "" {
		b, _ := json.Marshal(v.Str) // a string always encodes
		return append(dst, b...)
	}
	return append(dst, v.raw...)
}

// Doc is a stored object as paths read it: its cluster's name, its JSON,
// and, when known, where in Raw the values of its top-level members spec
// and status begin (0: not known). A path into spec or status then reads
// that member only, instead of skipping every member before it: status
// comes last in a Kubernetes object, after a spec of kilobytes.
type Doc struct {
	Cluster      string
	Raw          []byte
	Spec, Status int
	// StatusOnly marks a Doc whose Raw begins with the value of status,
	// all that was decoded of a body stored in parts: paths into status
	// read it (see IntoStatus), and others find nothing.
	StatusOnly bool
}

// IntoStatus reports whether p reads a value inside the top-level member
// status, which a StatusOnly Doc holds.
func (p Path) IntoStatus() bool {
	return !p.cluster && len(p.segs) > 1 && !p.segs[0].each && p.segs[0].key == "status"
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
	return p.EachIn(Doc{Cluster: cluster, Raw: raw}, fn)
}

// EachIn is Each in d, starting at the value of spec or status when the
// path goes into one of them and d says where it begins.
func (p Path) EachIn(d Doc, fn func(Value) bool) bool {
	if p.cluster {
		return fn(Value{Kind: String, Str: d.Cluster})
	}
	raw, segs := d.Raw, p.segs
	if len(segs) == 0 || len(raw) == 0 {
		return true
	}
	if d.StatusOnly {
		if !p.IntoStatus() {
			return true
		}
		segs = segs[1:]
	} else if at := d.memberAt(segs[0]); at > 0 && at < len(raw) && len(segs) > 1 {
		// gjson reads the member's value, the first in raw[at:], and
		// stops at its end.
		raw, segs = raw[at:], segs[1:]
	}
	// Raw is never modified: a string view of it saves gjson a copy.
	root := gjson.Parse(unsafe.String(unsafe.SliceData(raw), len(raw)))
	return each(root, segs, fn)
}

// memberAt returns where the value of the top-level member s names
// begins, 0 when not known.
func (d Doc) memberAt(s segment) int {
	switch {
	case s.each:
		return 0
	case s.key == "spec":
		return d.Spec
	case s.key == "status":
		return d.Status
	}
	return 0
}

// Members returns raw, a JSON object, as a Doc that knows where the
// values of its top-level members spec and status begin. It reads raw
// once, skipping the members' values.
func Members(cluster string, raw []byte) Doc {
	d := Doc{Cluster: cluster, Raw: raw}
	root := gjson.Parse(unsafe.String(unsafe.SliceData(raw), len(raw)))
	if !root.IsObject() {
		return d
	}
	root.ForEach(func(k, v gjson.Result) bool {
		// The first of duplicate keys, as gjson finds it.
		switch {
		case k.Str == "spec" && d.Spec == 0:
			d.Spec = v.Index
		case k.Str == "status" && d.Status == 0:
			d.Status = v.Index
		}
		return true
	})
	return d
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
		r = r.Get(s.run)
		segs = segs[s.runLen-1:]
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

// EachInJSON calls fn with each value AppendJSONIn wrote into text for p,
// the values EachIn found, until fn returns false; it returns false if fn
// did. The values' strings point into text.
func (p Path) EachInJSON(text []byte, fn func(Value) bool) bool {
	r := gjson.Parse(unsafe.String(unsafe.SliceData(text), len(text)))
	if !p.crosses {
		if v, ok := valueOf(r); ok {
			return fn(v)
		}
		return true
	}
	more := true
	r.ForEach(func(_, e gjson.Result) bool {
		if v, ok := valueOf(e); ok {
			more = fn(v)
		}
		return more
	})
	return more
}

// Has reports whether p has a value (not null) in the object.
func (p Path) Has(cluster string, raw []byte) bool {
	return p.HasIn(Doc{Cluster: cluster, Raw: raw})
}

// HasIn is Has in d.
func (p Path) HasIn(d Doc) bool {
	return !p.EachIn(d, func(Value) bool { return false })
}

// AppendJSON appends the value at p as JSON, copied from the stored bytes:
// for a path that crosses an array, the list of the values found (nested
// arrays flattened, absent values and nulls left out); otherwise the value.
// Either is null when no value is found.
func (p Path) AppendJSON(dst []byte, cluster string, raw []byte) []byte {
	return p.AppendJSONIn(dst, Doc{Cluster: cluster, Raw: raw})
}

// AppendJSONIn is AppendJSON in d.
func (p Path) AppendJSONIn(dst []byte, d Doc) []byte {
	w := newJSONList(dst, p.crosses)
	p.EachIn(d, func(v Value) bool {
		w.add(v)
		return p.crosses
	})
	return w.end()
}

// jsonList writes a path's values as AppendJSONIn does: null when there
// are none, the list of them for a path that crosses an array, the first
// otherwise.
type jsonList struct {
	dst      []byte
	start, n int
	crosses  bool
}

func newJSONList(dst []byte, crosses bool) jsonList {
	w := jsonList{dst: dst, start: len(dst), crosses: crosses}
	if crosses {
		w.dst = append(w.dst, '[')
	}
	return w
}

func (w *jsonList) add(v Value) {
	switch {
	case w.n > 0 && !w.crosses:
		return
	case w.n > 0:
		w.dst = append(w.dst, ',')
	}
	w.dst = v.AppendJSON(w.dst)
	w.n++
}

func (w *jsonList) end() []byte {
	switch {
	case w.n == 0:
		return append(w.dst[:w.start], "null"...)
	case w.crosses:
		return append(w.dst, ']')
	}
	return w.dst
}
