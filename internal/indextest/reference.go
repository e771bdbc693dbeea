package indextest

import (
	"bytes"
	"cmp"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
	"github.com/fleetcache/fleetcache/pkg/index/fieldselector"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
)

// Reference evaluates Filters one object at a time, as a straightforward
// reading of the planner.Filter documentation, with code of its own: no
// posting, plan, index or field selector evaluation of the packages under
// test. Field selectors are evaluated on the object's body decoded with
// encoding/json, by walking the requirement's path (its canonical text);
// a search by tokenizing the object's name, namespace, labels, annotation
// values and images. It caches each object's decoded body (objects are
// immutable). The zero Reference is ready; it is safe for concurrent use.
type Reference struct {
	mu   sync.Mutex
	docs map[*object.Object]any
}

// RefMatches reports whether o matches f, by a Reference without a cache.
func RefMatches(f planner.Filter, o *object.Object) bool {
	var r Reference
	return r.Matches(f, o)
}

// Matches reports whether o satisfies every field of f.
func (r *Reference) Matches(f planner.Filter, o *object.Object) bool {
	in := func(vs []string, v string) bool { return len(vs) == 0 || slices.Contains(vs, v) }
	if !in(f.Clusters, o.Cluster) || !in(f.Namespaces, o.Namespace) || !in(f.Resources, o.Type.Resource) {
		return false
	}
	if len(f.Kinds) > 0 && !slices.ContainsFunc(f.Kinds, func(k string) bool { return refKindMatches(k, o.Type) }) {
		return false
	}
	if f.Selector != nil && !f.Selector.Matches(labels.Set(o.Labels.Map())) {
		return false
	}
	if !strings.Contains(o.Name, f.NameContains) {
		return false
	}
	if f.OwnerUID != "" && !slices.ContainsFunc(o.Owners, func(ref object.OwnerRef) bool { return ref.UID == f.OwnerUID }) {
		return false
	}
	if len(f.OwnerUIDs) > 0 && !slices.ContainsFunc(o.Owners, func(ref object.OwnerRef) bool { return slices.Contains(f.OwnerUIDs, ref.UID) }) {
		return false
	}
	for _, req := range f.Fields.Requirements() {
		if !r.fieldMatches(req, o) {
			return false
		}
	}
	return r.searchMatches(f.Search.Words(), o)
}

// refKindMatches: a kind without a dot names Type.Kind in any group, one
// with a dot the kind and its group.
func refKindMatches(k string, t *object.Type) bool {
	if !strings.Contains(k, ".") {
		return k == t.Kind
	}
	return t.GVR.Group != "" && k == t.Kind+"."+t.GVR.Group
}

// doc returns o's body decoded, numbers as json.Number; nil without a
// body (or with one that does not decode).
func (r *Reference) doc(o *object.Object) any {
	r.mu.Lock()
	defer r.mu.Unlock()
	if d, ok := r.docs[o]; ok {
		return d
	}
	var d any
	if raw := o.Raw(); len(raw) > 0 {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if dec.Decode(&d) != nil {
			d = nil
		}
	}
	if r.docs == nil {
		r.docs = map[*object.Object]any{}
	}
	r.docs[o] = d
	return d
}

// Values returns the values at p in o, in document order: for the path
// cluster, o's cluster; otherwise what the path's keys reach in o's
// decoded body, a key step into objects only, [] into arrays only (each
// element), nulls left out. Strings are strings, numbers json.Numbers,
// booleans bools, objects and arrays map[string]any and []any.
func (r *Reference) Values(p fieldpath.Path, o *object.Object) []any {
	if p.IsCluster() {
		return []any{o.Cluster}
	}
	var out []any
	var walk func(v any, segs []refSegment)
	walk = func(v any, segs []refSegment) {
		if len(segs) == 0 {
			if v != nil {
				out = append(out, v)
			}
			return
		}
		if segs[0].each {
			if a, ok := v.([]any); ok {
				for _, e := range a {
					walk(e, segs[1:])
				}
			}
			return
		}
		if m, ok := v.(map[string]any); ok {
			if c, ok := m[segs[0].key]; ok {
				walk(c, segs[1:])
			}
		}
	}
	walk(r.doc(o), refSegments(p.String()))
	return out
}

// refSegment is one step of a path: a key, or [] (each element).
type refSegment struct {
	key  string
	each bool
}

// refSegments splits a path's canonical text (fieldpath.Path.String):
// names joined by dots, [] and quoted keys ["…"].
func refSegments(text string) []refSegment {
	var segs []refSegment
	for text != "" {
		switch {
		case strings.HasPrefix(text, "[]"):
			segs, text = append(segs, refSegment{each: true}), text[2:]
		case strings.HasPrefix(text, `["`):
			q, err := strconv.QuotedPrefix(text[1:])
			if err != nil {
				panic("indextest: not a canonical path: " + text)
			}
			k, _ := strconv.Unquote(q)
			segs, text = append(segs, refSegment{key: k}), text[1+len(q)+1:]
		case text[0] == '.':
			text = text[1:]
		default:
			end := strings.IndexAny(text, ".[")
			if end < 0 {
				end = len(text)
			}
			segs, text = append(segs, refSegment{key: text[:end]}), text[end:]
		}
	}
	return segs
}

// fieldMatches evaluates one field selector requirement on o: =, in and
// the numeric comparisons hold when some value satisfies them, != and
// notin when no value equals one of theirs, exists and ! by whether there
// is a value.
func (r *Reference) fieldMatches(req fieldselector.Requirement, o *object.Object) bool {
	vals := r.Values(req.Path(), o)
	ops := req.Values()
	equalsAny := func(v any) bool { return slices.ContainsFunc(ops, func(op string) bool { return refEqual(v, op) }) }
	switch req.Operator() {
	case fieldselector.Exists:
		return len(vals) > 0
	case fieldselector.DoesNotExist:
		return len(vals) == 0
	case fieldselector.Equals, fieldselector.In:
		return slices.ContainsFunc(vals, equalsAny)
	case fieldselector.NotEquals, fieldselector.NotIn:
		return !slices.ContainsFunc(vals, equalsAny)
	case fieldselector.GreaterThan, fieldselector.LessThan:
		bound, _ := refNumber(ops[0])
		return slices.ContainsFunc(vals, func(v any) bool {
			var n float64
			var ok bool
			switch v := v.(type) {
			case json.Number:
				n, ok = refNumber(string(v))
			case string:
				n, ok = refNumber(v)
			}
			if !ok {
				return false
			}
			if req.Operator() == fieldselector.GreaterThan {
				return n > bound
			}
			return n < bound
		})
	}
	panic("indextest: unknown operator " + string(req.Operator()))
}

// refEqual reports whether a value equals a requirement's value text: a
// string the same text, a number the same number, a boolean "true" or
// "false"; objects and arrays equal nothing.
func refEqual(v any, text string) bool {
	switch v := v.(type) {
	case string:
		return v == text
	case json.Number:
		a, ok := refNumber(string(v))
		b, okText := refNumber(text)
		return ok && okText && a == b
	case bool:
		return text == strconv.FormatBool(v)
	}
	return false
}

// refNumber parses a decimal number as JSON writes it, with an optional
// leading +.
func refNumber(s string) (float64, bool) {
	if s == "" || strings.Trim(s, "0123456789.eE+-") != "" {
		return 0, false
	}
	n, err := strconv.ParseFloat(s, 64)
	return n, err == nil
}

// RefIndexedValue is a value in the form facets count it by: a string as
// it is, a number in its shortest decimal form (exponent from 1e21), a
// boolean "true" or "false"; false for objects and arrays.
func RefIndexedValue(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case bool:
		return strconv.FormatBool(v), true
	case json.Number:
		n, ok := refNumber(string(v))
		switch {
		case !ok:
			return "", false
		case n == 0:
			return "0", true
		case n < 1e21 && n > -1e21:
			return strconv.FormatFloat(n, 'f', -1, 64), true
		}
		return strconv.FormatFloat(n, 'g', -1, 64), true
	}
	return "", false
}

// searchPaths are the fields whose strings a search reads, besides the
// annotation values.
var searchPaths = []fieldpath.Path{
	fieldpath.MustParse("spec.containers[].image"),
	fieldpath.MustParse("spec.initContainers[].image"),
	fieldpath.MustParse("spec.template.spec.containers[].image"),
	fieldpath.MustParse("spec.template.spec.initContainers[].image"),
	fieldpath.MustParse("spec.jobTemplate.spec.template.spec.containers[].image"),
}

// searchMatches reports whether each word begins a token of o's name,
// namespace, label keys and values, annotation values or images.
func (r *Reference) searchMatches(words []string, o *object.Object) bool {
	if len(words) == 0 {
		return true
	}
	texts := []string{o.Name, o.Namespace}
	for _, l := range o.Labels {
		texts = append(texts, l.Key, l.Value)
	}
	if m, ok := r.doc(o).(map[string]any); ok {
		if md, ok := m["metadata"].(map[string]any); ok {
			if ann, ok := md["annotations"].(map[string]any); ok {
				for _, v := range ann {
					if s, ok := v.(string); ok {
						texts = append(texts, s)
					}
				}
			}
		}
	}
	for _, p := range searchPaths {
		for _, v := range r.Values(p, o) {
			if s, ok := v.(string); ok {
				texts = append(texts, s)
			}
		}
	}
	var tokens []string
	for _, s := range texts {
		tokens = append(tokens, refTokens(s)...)
	}
	for _, w := range words {
		if !slices.ContainsFunc(tokens, func(tok string) bool { return strings.HasPrefix(tok, w) }) {
			return false
		}
	}
	return true
}

// refTokens splits s into its runs of letters and digits, lowercased and
// cut to 64 bytes at a character boundary.
func refTokens(s string) []string {
	var out []string
	for _, run := range strings.FieldsFunc(s, func(c rune) bool { return !unicode.IsLetter(c) && !unicode.IsDigit(c) }) {
		tok := strings.ToLower(run)
		if len(tok) > 64 {
			cut := 64
			for !utf8.RuneStart(tok[cut]) {
				cut--
			}
			tok = tok[:cut]
		}
		out = append(out, tok)
	}
	return out
}

// SortRef sorts objs by keys as ListSorted documents it: by each key's
// value (object.SortValueOf; absent values last in either direction,
// present ones numbers, then times, then strings), then by Position.
func SortRef(objs []*object.Object, keys []planner.SortKey) {
	vals := make(map[*object.Object][]object.SortValue, len(objs))
	for _, o := range objs {
		vals[o] = RefSortValues(keys, o)
	}
	slices.SortFunc(objs, func(a, b *object.Object) int { return CompareRef(keys, vals[a], a, vals[b], b) })
}

// RefSortValues returns o's values of keys.
func RefSortValues(keys []planner.SortKey, o *object.Object) []object.SortValue {
	vs := make([]object.SortValue, len(keys))
	for i, k := range keys {
		vs[i] = object.SortValueOf(k.Path, o, nil).Owned()
	}
	return vs
}

// CompareRef orders two objects with their values of keys as SortRef
// does.
func CompareRef(keys []planner.SortKey, va []object.SortValue, a *object.Object, vb []object.SortValue, b *object.Object) int {
	for i, k := range keys {
		x, y := va[i], vb[i]
		switch {
		case x.Kind == object.Absent && y.Kind == object.Absent:
			continue
		case x.Kind == object.Absent:
			return 1
		case y.Kind == object.Absent:
			return -1
		}
		c := cmp.Compare(x.Kind, y.Kind)
		if c == 0 && x.Kind == object.String {
			c = strings.Compare(x.Str, y.Str)
		} else if c == 0 {
			c = cmp.Compare(x.Num, y.Num)
		}
		if k.Desc {
			c = -c
		}
		if c != 0 {
			return c
		}
	}
	return a.Position().Compare(b.Position())
}
