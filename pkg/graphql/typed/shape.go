package typed

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/fleetcache/fleetcache/pkg/openapi"
)

// leaf is the GraphQL scalar a leaf value has.
type leaf uint8

const (
	leafNone leaf = iota
	leafString
	leafInt   // integer, format int32
	leafLong  // integer, any other format
	leafFloat // number
	leafBool
	leafIntOrString
	leafJSON
)

func (l leaf) String() string {
	return [...]string{"", "string", "int32", "int64", "number", "boolean", "int-or-string", "JSON"}[l]
}

// maxDepth bounds how deep a kind's types nest; deeper values (recursive
// schemas: a CRD's JSONSchemaProps) are JSON.
const maxDepth = 12

// shape is a value's type, as a kind's schemas describe it, merged over
// the versions the fleet serves.
type shape struct {
	// leaf is set for a scalar; a list has item, an object props; JSON
	// values have leaf leafJSON.
	leaf  leaf
	item  *shape
	props []prop
	// list marks a list (of item).
	list bool
	desc string
	// enum are the values the schema allows, if it says.
	enum []string
	// ref is the OpenAPI component an object came from
	// ("io.k8s.api.core.v1.Container"), "" if none (or versions differ).
	ref string
}

// prop is a property of an object shape, by its JSON name.
type prop struct {
	name string
	s    *shape
}

func (s *shape) object() bool { return s.leaf == leafNone && !s.list }

// kindString says what s is, for the descriptions of conflicts.
func (s *shape) kindString() string {
	switch {
	case s.list:
		return "a list of " + s.item.kindString()
	case s.object():
		return "an object"
	}
	return s.leaf.String()
}

// shapeOf converts sch of doc, depth levels down from its kind.
func shapeOf(doc *openapi.Document, sch *spec.Schema, depth int) *shape {
	desc, ref := sch.Description, ""
	// References, and allOf of one reference (OpenAPI v3's way to give a
	// reference a description or a default), are resolved.
	for range 8 {
		switch {
		case sch.Ref.String() != "":
			r := doc.Resolve(sch.Ref.String())
			if r == nil {
				return &shape{leaf: leafJSON, desc: desc}
			}
			sch, ref = r, strings.TrimPrefix(sch.Ref.String(), "#/components/schemas/")
		case len(sch.AllOf) == 1 && len(sch.Properties) == 0 && len(sch.Type) == 0:
			sch = &sch.AllOf[0]
		default:
			if desc == "" {
				desc = sch.Description
			}
			s := shapeOfResolved(doc, sch, desc, depth)
			if s.object() {
				s.ref = ref
			}
			return s
		}
		if desc == "" {
			desc = sch.Description
		}
	}
	return &shape{leaf: leafJSON, desc: desc}
}

func shapeOfResolved(doc *openapi.Document, sch *spec.Schema, desc string, depth int) *shape {
	ext := sch.Extensions
	if b, _ := ext.GetBool("x-kubernetes-int-or-string"); b || sch.Format == "int-or-string" {
		return &shape{leaf: leafIntOrString, desc: desc}
	}
	if b, _ := ext.GetBool("x-kubernetes-preserve-unknown-fields"); b {
		return &shape{leaf: leafJSON, desc: desc}
	}
	typ := ""
	if len(sch.Type) == 1 {
		typ = sch.Type[0]
	}
	switch {
	case typ == "string":
		return &shape{leaf: leafString, desc: desc, enum: enumOf(sch.Enum)}
	case typ == "integer" && sch.Format == "int32":
		return &shape{leaf: leafInt, desc: desc}
	case typ == "integer":
		return &shape{leaf: leafLong, desc: desc}
	case typ == "number":
		return &shape{leaf: leafFloat, desc: desc}
	case typ == "boolean":
		return &shape{leaf: leafBool, desc: desc}
	case typ == "array":
		if sch.Items == nil || sch.Items.Schema == nil || depth >= maxDepth {
			return &shape{leaf: leafJSON, desc: desc}
		}
		item := shapeOf(doc, sch.Items.Schema, depth+1)
		if item.list {
			// Lists of lists are rare (a few CRDs): JSON.
			return &shape{leaf: leafJSON, desc: desc}
		}
		return &shape{list: true, item: item, desc: desc}
	case (typ == "object" || typ == "") && len(sch.Properties) > 0 && depth < maxDepth:
		s := &shape{desc: desc}
		for _, name := range sortedKeys(sch.Properties) {
			p := sch.Properties[name]
			s.props = append(s.props, prop{name: name, s: shapeOf(doc, &p, depth+1)})
		}
		return s
	}
	// Maps (additionalProperties), objects without properties, values
	// of no type (RawExtension), oneOf and anyOf: JSON.
	return &shape{leaf: leafJSON, desc: desc}
}

func enumOf(values []any) []string {
	var out []string
	for _, v := range values {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// version is one served version's shape of a kind, for merging.
type version struct {
	name string // "v1 (clusters c1, c2)"
	s    *shape
}

// merge returns the union of the versions' shapes of one value: the
// properties of every version; a value whose versions disagree on its
// type is JSON, with a description that says why.
func merge(vs []version) *shape {
	first := vs[0].s
	same := true
	for _, v := range vs[1:] {
		if !compatible(first, v.s) {
			same = false
		}
	}
	if !same {
		var parts []string
		for _, v := range vs {
			parts = append(parts, fmt.Sprintf("%s in %s", v.s.kindString(), v.name))
		}
		return &shape{leaf: leafJSON, desc: first.desc + "\n\nJSON because the fleet's versions of this field conflict: " +
			strings.Join(parts, "; ") + "."}
	}
	switch {
	case first.list:
		items := make([]version, len(vs))
		for i, v := range vs {
			items[i] = version{v.name, v.s.item}
		}
		return &shape{list: true, item: merge(items), desc: first.desc}
	case first.object():
		out := &shape{desc: first.desc, ref: first.ref}
		for _, v := range vs[1:] {
			if v.s.ref != first.ref {
				out.ref = ""
			}
		}
		names := map[string][]version{}
		for _, v := range vs {
			for _, p := range v.s.props {
				names[p.name] = append(names[p.name], version{v.name, p.s})
			}
		}
		for _, name := range sortedKeys(names) {
			out.props = append(out.props, prop{name: name, s: merge(names[name])})
		}
		return out
	}
	out := *first
	for _, v := range vs[1:] {
		for _, e := range v.s.enum {
			if !slices.Contains(out.enum, e) {
				out.enum = append(out.enum, e)
			}
		}
	}
	return &out
}

// compatible reports whether a and b can merge: both objects, both lists
// of compatible items, or the same scalar.
func compatible(a, b *shape) bool {
	switch {
	case a.list || b.list:
		return a.list && b.list && compatible(a.item, b.item)
	case a.object() || b.object():
		return a.object() && b.object()
	}
	return a.leaf == b.leaf
}

// key returns a text that equal shapes, and only they, share: their
// fields, types, descriptions and enums, recursively.
func (s *shape) key() string {
	var b strings.Builder
	s.writeKey(&b)
	return b.String()
}

func (s *shape) writeKey(b *strings.Builder) {
	fmt.Fprintf(b, "(%d %t %q %q", s.leaf, s.list, s.desc, s.enum)
	if s.item != nil {
		s.item.writeKey(b)
	}
	for _, p := range s.props {
		fmt.Fprintf(b, " %q:", p.name)
		p.s.writeKey(b)
	}
	b.WriteByte(')')
}
