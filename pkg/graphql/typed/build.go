package typed

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/graphql-go/graphql"
	"github.com/graphql-go/graphql/language/ast"
	"github.com/tidwall/gjson"

	"github.com/fleetcache/fleetcache/pkg/graphql/execute"
	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
	"github.com/fleetcache/fleetcache/pkg/openapi"
)

// Options are what Build needs of the engine's schema.
type Options struct {
	// Resource is the interface every kind's type implements.
	Resource *graphql.Interface
	// Fields returns the fields of Resource, which every kind's type has
	// beside its schema's; called once per kind.
	Fields func() graphql.Fields
	// JSON is the scalar of any JSON value, written as it is stored.
	JSON *graphql.Scalar
	// TypeNames and FieldNames are the names of the engine's own types
	// and root query fields, which kinds do not take.
	TypeNames, FieldNames map[string]bool
}

// Kind is the GraphQL type of a cached kind.
type Kind struct {
	Group, Kind string
	// Resource is the kubectl resource name of its objects: "pods",
	// "widgets.example.com".
	Resource string
	// Type is its object type: "Pod", or group-qualified where two groups
	// have the kind ("EventsK8sIoEvent").
	Type *graphql.Object
	// Field is the name of its root field: "pods", or group-qualified
	// where two groups have the plural ("podsFooExampleCom").
	Field string
	// Versions says which versions the fleet serves, for descriptions:
	// "v1 (c1, c2)".
	Versions string
}

// Types are the kinds' types of one snapshot of the fleet.
type Types struct {
	Kinds []Kind
	// of holds each kind's type by group and kind.
	of map[[2]string]*graphql.Object
	// fields holds how the fields of the nested types read their values.
	fields map[*graphql.Object]map[string]*field
}

// Of returns the type of the kind of group, or nil.
func (t *Types) Of(group, kind string) *graphql.Object {
	if t == nil {
		return nil
	}
	return t.of[[2]string{group, kind}]
}

// Writer returns the execute.Writer of the field def of the typed type
// obj: leaves and lists of leaves are written from the stored text. Nil
// for other fields and types.
func (t *Types) Writer(obj *graphql.Object, def *graphql.FieldDefinition) execute.Writer {
	if t == nil {
		return nil
	}
	f := t.fields[obj][def.Name]
	if f == nil {
		return nil
	}
	return f.writer()
}

// The scalars of typed values.
var (
	// Long is a 64-bit integer.
	Long = RawScalar("Long", "A 64-bit integer (OpenAPI integer of format int64, or of no format), as the object holds it: "+
		"a JSON number. GraphQL's Int holds 32 bits only.", Literal)
	// IntOrString is Kubernetes' int-or-string.
	IntOrString = RawScalar("IntOrString", "Kubernetes' int-or-string (x-kubernetes-int-or-string): a JSON number or a JSON "+
		`string, as the object holds it: a port 8080 or "http", a percentage "25%".`, Literal)
)

// RawScalar returns a scalar whose values are written as they are: a
// json.RawMessage (stored bytes) is copied, not encoded again. parse reads
// its literals.
func RawScalar(name, desc string, parse func(ast.Value) any) *graphql.Scalar {
	return graphql.NewScalar(graphql.ScalarConfig{Name: name, Description: desc, ParseLiteral: parse,
		Serialize: func(v any) any { return v }, ParseValue: func(v any) any { return v }})
}

// Literal returns the Go value of a GraphQL literal, as JSON decoding
// would produce it.
func Literal(v ast.Value) any {
	switch v := v.(type) {
	case *ast.StringValue:
		return v.Value
	case *ast.EnumValue:
		return v.Value
	case *ast.BooleanValue:
		return v.Value
	case *ast.IntValue:
		n, err := strconv.ParseFloat(v.Value, 64)
		if err != nil {
			return nil
		}
		return n
	case *ast.FloatValue:
		n, err := strconv.ParseFloat(v.Value, 64)
		if err != nil {
			return nil
		}
		return n
	case *ast.ListValue:
		out := make([]any, 0, len(v.Values))
		for _, e := range v.Values {
			out = append(out, Literal(e))
		}
		return out
	case *ast.ObjectValue:
		out := make(map[string]any, len(v.Fields))
		for _, f := range v.Fields {
			out[f.Name.Value] = Literal(f.Value)
		}
		return out
	}
	return nil
}

// Build returns the types of the kinds snap holds. The names follow
// docs/graphql.md ("Typed kinds"): a kind's type is its kind, its root
// field its plural in lower camel case, each qualified by its group where
// another group of the fleet has the same kind (the same plural), the
// core group keeping the plain name, or where the engine has the name.
func Build(snap *openapi.Snapshot, opts Options) *Types {
	b := &builder{opts: opts, taken: map[string]bool{}, fields: map[*graphql.Object]map[string]*field{}, shared: map[string]*graphql.Object{}}
	for n := range opts.TypeNames {
		b.taken[n] = true
	}
	types := &Types{of: map[[2]string]*graphql.Object{}, fields: b.fields}
	typeNames := qualify(snap.Kinds, func(k openapi.Kind) string { return gqlName(k.Kind, true) }, opts.TypeNames, true)
	fieldNames := qualify(snap.Kinds, func(k openapi.Kind) string { return gqlName(plural(k.Resource), false) }, opts.FieldNames, false)
	for _, n := range typeNames {
		b.taken[n] = true
		b.taken[n+"Connection"], b.taken[n+"Edge"] = true, true
	}
	for i, k := range snap.Kinds {
		if len(k.Versions) == 0 {
			continue
		}
		var vs []version
		var names []string
		same := map[string]int{}
		for _, v := range k.Versions {
			same[v.Version]++
		}
		n := map[string]int{}
		for _, v := range k.Versions {
			sch := v.Doc.Schemas[v.Schema]
			if sch == nil {
				continue
			}
			// Which clusters serve a version is not in the schema: it
			// changes with every cluster, the schema with the versions.
			name := v.Version
			if same[v.Version] > 1 {
				n[v.Version]++
				name = fmt.Sprintf("%s (schema %d of %d)", v.Version, n[v.Version], same[v.Version])
			}
			vs = append(vs, version{name: name, s: shapeOf(v.Doc, sch, 0)})
			names = append(names, name)
		}
		if len(vs) == 0 {
			continue
		}
		s := merge(vs)
		desc := s.desc
		if desc != "" {
			desc += "\n\n"
		}
		group := k.Group
		if group == "" {
			group = "core"
		}
		desc += fmt.Sprintf("Kind %s of group %s, served at %s.", k.Kind, group, strings.Join(names, "; "))
		obj := b.kindType(typeNames[i], desc, s)
		types.of[[2]string{k.Group, k.Kind}] = obj
		types.Kinds = append(types.Kinds, Kind{Group: k.Group, Kind: k.Kind, Resource: k.Resource, Type: obj,
			Field: fieldNames[i], Versions: strings.Join(names, "; ")})
	}
	return types
}

// plural is the plural of a resource name: "widgets" of "widgets.example.com".
func plural(resource string) string {
	p, _, _ := strings.Cut(resource, ".")
	return p
}

// qualify names each kind by name(k), qualified by its group where
// another kind has the same name (the core group's keeps it) or reserved
// holds it.
func qualify(kinds []openapi.Kind, name func(openapi.Kind) string, reserved map[string]bool, upper bool) []string {
	count := map[string]int{}
	core := map[string]bool{}
	for _, k := range kinds {
		count[name(k)]++
		if k.Group == "" {
			core[name(k)] = true
		}
	}
	out := make([]string, len(kinds))
	for i, k := range kinds {
		n := name(k)
		if reserved[n] || (count[n] > 1 && (k.Group != "" || !core[n])) {
			g := gqlName(strings.NewReplacer(".", " ", "-", " ").Replace(k.Group), true)
			if upper {
				n = g + n
			} else {
				n += g
			}
		}
		out[i] = n
	}
	return out
}

// gqlName turns s into a GraphQL name: its words (split at characters a
// name may not hold) joined in camel case, the first upper case when
// upper; "_" in front of a leading digit.
func gqlName(s string, upper bool) string {
	var b strings.Builder
	next := upper
	for _, r := range s {
		if r > unicode.MaxASCII || !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_') {
			next = true
			continue
		}
		if next && b.Len() > 0 || next && upper {
			r = unicode.ToUpper(r)
		}
		next = false
		b.WriteRune(r)
	}
	n := b.String()
	if n == "" || unicode.IsDigit(rune(n[0])) {
		n = "_" + n
	}
	if strings.HasPrefix(n, "__") {
		n = "x" + n
	}
	return n
}

// builder builds the object types of kinds.
type builder struct {
	opts  Options
	taken map[string]bool
	// fields of every nested type, shared with Types.
	fields map[*graphql.Object]map[string]*field
	// shared are the types of list items made from an OpenAPI component,
	// by component and shape (shape.key): every kind whose lists hold
	// Containers shares one type Container.
	shared map[string]*graphql.Object
}

// name returns a type name not taken yet: want, or want with a number.
func (b *builder) name(want string) string {
	n := want
	for i := 2; b.taken[n]; i++ {
		n = fmt.Sprintf("%s%d", want, i)
	}
	b.taken[n] = true
	return n
}

// kindType returns the object type of a kind named name: Resource's
// fields, then its schema's top-level properties but apiVersion, kind and
// those whose names Resource has.
func (b *builder) kindType(name, desc string, s *shape) *graphql.Object {
	fields := b.opts.Fields()
	reserved := map[string]bool{"apiVersion": true, "kind": true}
	for n := range fields {
		reserved[n] = true
	}
	obj := graphql.NewObject(graphql.ObjectConfig{Name: name, Description: desc,
		Interfaces: []*graphql.Interface{b.opts.Resource}, Fields: fields})
	if s.object() {
		b.addProps(obj, name, "", s, reserved)
	}
	return obj
}

// addProps adds the properties of s to obj, whose type name is name,
// skipping those reserved. path is where obj's values are in the kind's
// objects ("spec." for PodSpec); "-" where a list lies on the way.
func (b *builder) addProps(obj *graphql.Object, name, path string, s *shape, reserved map[string]bool) int {
	n := 0
	used := map[string]bool{}
	for _, p := range s.props {
		fname := gqlName(p.name, false)
		if reserved[p.name] || reserved[fname] || used[fname] {
			continue // reachable through object and field(path:)
		}
		used[fname] = true
		f := &field{key: p.name, gkey: gjson.Escape(p.name), s: p.s}
		sub := "-"
		if path != "-" {
			sub = pathOf(path, p.name)
			if fp, err := fieldpath.Parse(sub); err == nil && !fp.IsCluster() {
				f.path, f.projected = fp, true
			}
		}
		t := b.output(name+gqlName(p.name, true), sub, p.s)
		if b.fields[obj] == nil {
			b.fields[obj] = map[string]*field{}
		}
		b.fields[obj][fname] = f
		obj.AddFieldConfig(fname, &graphql.Field{Type: t, Description: describe(p.s), Resolve: f.resolve})
		n++
	}
	return n
}

// describe returns the description of a value of shape s.
func describe(s *shape) string {
	d := s.desc
	if s.list && d == "" {
		d = s.item.desc
	}
	if len(s.enum) > 0 {
		if d != "" {
			d += "\n\n"
		}
		d += "One of: " + strings.Join(s.enum, ", ") + "."
	}
	return d
}

// pathOf returns the path of the member key of the value at path
// (fieldpath's syntax; "" for the kind's object).
func pathOf(path, key string) string {
	plain := key != ""
	for _, c := range key {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			plain = false
		}
	}
	switch {
	case !plain:
		return path + "[" + strconv.Quote(key) + "]"
	case path == "":
		return key
	}
	return path + "." + key
}

// output returns the GraphQL type of values of shape s, at path in the
// kind's objects ("-" under a list); nested objects get types named name.
func (b *builder) output(name, path string, s *shape) graphql.Output {
	switch {
	case s.list:
		item := b.output(name, "-", s.item)
		return graphql.NewList(graphql.NewNonNull(item))
	case s.object():
		// Under a list, where no value is kept beside the body (its
		// fields have no path of their own), a component's type is shared
		// by every place that has the same shape of it.
		var key string
		if path == "-" && s.ref != "" {
			key = s.ref + "\x00" + s.key()
			if obj, ok := b.shared[key]; ok {
				if obj == nil {
					s.leaf = leafJSON
					return b.opts.JSON
				}
				return obj
			}
			name = gqlName(s.ref[strings.LastIndex(s.ref, ".")+1:], true)
		}
		obj := graphql.NewObject(graphql.ObjectConfig{Name: b.name(name), Description: s.desc, Fields: graphql.Fields{}})
		if key != "" {
			b.shared[key] = obj // before its fields: a component may hold itself
		}
		if b.addProps(obj, obj.Name(), path, s, nil) == 0 {
			s.leaf = leafJSON // its values are written as JSON
			if key != "" {
				b.shared[key] = nil
			}
			return b.opts.JSON
		}
		return obj
	}
	switch s.leaf {
	case leafString:
		return graphql.String
	case leafInt:
		return graphql.Int
	case leafLong:
		return Long
	case leafFloat:
		return graphql.Float
	case leafBool:
		return graphql.Boolean
	case leafIntOrString:
		return IntOrString
	}
	return b.opts.JSON
}
