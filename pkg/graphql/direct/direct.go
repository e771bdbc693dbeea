package direct

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/graphql-go/graphql"
	"github.com/graphql-go/graphql/language/ast"

	"github.com/fleetcache/fleetcache/pkg/graphql/document"
	"github.com/fleetcache/fleetcache/pkg/index"
)

// Plan is an operation's selections, collected for direct execution.
type Plan struct {
	Type   *graphql.Object
	Fields []*Field
	// size is how many bytes Write wrote for the plan last time, so that
	// the next response's buffer is allocated at once rather than grown
	// by doubling: half the garbage of a page of 50.
	size atomic.Int64
}

// Field is one response key of a selection set and what it selects.
type Field struct {
	Key  string
	json []byte // the response key as a JSON string, then ':'
	Name string
	// Node is the field's first occurrence: its arguments.
	Node *ast.Field
	// Def is the field's definition; nil for __typename.
	Def *graphql.FieldDefinition
	// args are the arguments of a field below the root (Resource.field's
	// path); the root fields' are given to Write.
	args map[string]any
	// sub selects the fields of an object-typed field.
	sub *Plan
	// write writes the field's value in place of its resolver, when the
	// server gave a Writer for it.
	write Writer
}

// A Writer appends the value of a leaf field of src to dst as JSON, in
// place of the field's resolver and the boxing of the value it returns:
// for fields read straight from an object, which a page asks for each of
// its objects. It returns false, and dst as it was, when it cannot; the
// resolver then runs.
type Writer func(dst []byte, src any) ([]byte, bool)

// Writers returns the Writer of the field def of t, below the root, for
// its arguments args (constant in a plan), or nil when it has none.
type Writers func(t *graphql.Object, def *graphql.FieldDefinition, args map[string]any) Writer

// ErrNotDirect reports that an operation cannot be compiled into a plan.
var ErrNotDirect = errors.New("not directly executable")

// compiler turns selection sets into plans.
type compiler struct {
	schema    *graphql.Schema
	writers   Writers
	fragments map[string]*ast.FragmentDefinition
	varDefs   map[string]*ast.VariableDefinition
	vars      map[string]any
	// dynamic records that a @skip or @include depends on a variable: the
	// plan then holds for these variables only.
	dynamic bool
}

// Compile returns op's plan for the variables vars, and whether the plan
// holds for any variables; writers (which may be nil) gives the leaf
// fields written without their resolvers. It fails with ErrNotDirect for
// operations that graphql-go must execute.
func Compile(schema *graphql.Schema, doc *ast.Document, op *ast.OperationDefinition, vars map[string]any, writers Writers) (*Plan, bool, error) {
	var root *graphql.Object
	switch op.Operation {
	case ast.OperationTypeQuery:
		root = schema.QueryType()
	case ast.OperationTypeSubscription:
		root = schema.SubscriptionType()
	}
	if root == nil {
		return nil, false, ErrNotDirect
	}
	c := &compiler{schema: schema, writers: writers, fragments: document.Fragments(doc), varDefs: map[string]*ast.VariableDefinition{}, vars: vars}
	for _, d := range op.VariableDefinitions {
		c.varDefs[d.Variable.Name.Value] = d
	}
	p, err := c.plan(root, []*ast.SelectionSet{op.SelectionSet}, true)
	if err != nil {
		return nil, false, err
	}
	return p, !c.dynamic, nil
}

// plan collects the fields that sets select of t.
func (c *compiler) plan(t *graphql.Object, sets []*ast.SelectionSet, root bool) (*Plan, error) {
	var keys []string
	occurrences := map[string][]*ast.Field{}
	for _, set := range sets {
		if err := c.collect(t, set, map[string]bool{}, &keys, occurrences); err != nil {
			return nil, err
		}
	}
	p := &Plan{Type: t, Fields: make([]*Field, 0, len(keys))}
	for _, k := range keys {
		fields := occurrences[k]
		name := fields[0].Name.Value
		key, _ := json.Marshal(k)
		f := &Field{Key: k, json: append(key, ':'), Name: name, Node: fields[0]}
		p.Fields = append(p.Fields, f)
		if name == "__typename" {
			continue
		}
		f.Def = t.Fields()[name]
		// Introspection is graphql-go's.
		if f.Def == nil || f.Def.Resolve == nil {
			return nil, ErrNotDirect
		}
		if !root && len(f.Def.Args) > 0 {
			args, err := c.scalarArgs(f.Def.Args, f.Node.Arguments)
			if err != nil {
				return nil, err
			}
			f.args = args
		}
		switch named := graphql.GetNamed(f.Def.Type).(type) {
		case *graphql.Object:
			var subs []*ast.SelectionSet
			for _, field := range fields {
				if field.SelectionSet != nil {
					subs = append(subs, field.SelectionSet)
				}
			}
			sub, err := c.plan(named, subs, false)
			if err != nil {
				return nil, err
			}
			f.sub = sub
		case *graphql.Scalar, *graphql.Enum:
			if !root && c.writers != nil {
				f.write = c.writers(t, f.Def, f.args)
			}
		default:
			return nil, ErrNotDirect
		}
	}
	return p, nil
}

// scalarArgs returns the arguments of a field below the root, all of
// them Strings or Booleans (Resource.field's path, Resource.columns' age),
// as graphql-go would coerce them: literals, or variables given as values
// of the argument's type, which make the plan hold for these variables
// only. Anything else is graphql-go's.
func (c *compiler) scalarArgs(defs []*graphql.Argument, nodes []*ast.Argument) (map[string]any, error) {
	for _, d := range defs {
		if t := graphql.GetNullable(d.Type); t != graphql.String && t != graphql.Boolean {
			return nil, ErrNotDirect
		}
	}
	for _, n := range nodes {
		if v, ok := n.Value.(*ast.Variable); ok && v.Name != nil {
			c.dynamic = true
			switch c.vars[v.Name.Value].(type) {
			case string, bool:
			default:
				return nil, ErrNotDirect
			}
		}
	}
	return ArgumentValues(defs, nodes, c.vars), nil
}

// collect appends the response keys set selects of t to keys, in order,
// and each key's fields to occurrences.
func (c *compiler) collect(t *graphql.Object, set *ast.SelectionSet, visited map[string]bool, keys *[]string, occurrences map[string][]*ast.Field) error {
	if set == nil {
		return nil
	}
	for _, sel := range set.Selections {
		switch sel := sel.(type) {
		case *ast.Field:
			ok, err := c.include(sel.Directives)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			k := document.ResponseKey(sel)
			if _, seen := occurrences[k]; !seen {
				*keys = append(*keys, k)
			}
			occurrences[k] = append(occurrences[k], sel)
		case *ast.InlineFragment:
			ok, err := c.include(sel.Directives)
			if err != nil {
				return err
			}
			if ok && matches(sel.TypeCondition, t) {
				if err := c.collect(t, sel.SelectionSet, visited, keys, occurrences); err != nil {
					return err
				}
			}
		case *ast.FragmentSpread:
			name := sel.Name.Value
			if visited[name] {
				continue
			}
			ok, err := c.include(sel.Directives)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			visited[name] = true
			f := c.fragments[name]
			if f == nil {
				return ErrNotDirect
			}
			if matches(f.TypeCondition, t) {
				if err := c.collect(t, f.SelectionSet, visited, keys, occurrences); err != nil {
					return err
				}
			}
		default:
			return ErrNotDirect
		}
	}
	return nil
}

// matches reports whether a fragment's type condition applies to t. Every
// type of the schema a fragment can be spread in is an object type:
// validation leaves only conditions that name it.
func matches(cond *ast.Named, t *graphql.Object) bool {
	return cond == nil || cond.Name == nil || cond.Name.Value == t.Name()
}

// include evaluates @skip and @include as graphql-go does: the last of
// each counts, skip first, and an "if" that is not a boolean does not
// exclude.
func (c *compiler) include(dirs []*ast.Directive) (bool, error) {
	var skip, incl *ast.Directive
	for _, d := range dirs {
		switch d.Name.Value {
		case "skip":
			skip = d
		case "include":
			incl = d
		}
	}
	if skip != nil {
		v, err := c.condition(skip)
		if err != nil || v == 1 {
			return false, err
		}
	}
	if incl != nil {
		v, err := c.condition(incl)
		if err != nil || v == 0 {
			return false, err
		}
	}
	return true, nil
}

// condition returns the "if" of a directive: 1 true, 0 false, -1 neither.
func (c *compiler) condition(d *ast.Directive) (int, error) {
	for _, a := range d.Arguments {
		if a.Name.Value != "if" {
			continue
		}
		value := a.Value
		if v, ok := value.(*ast.Variable); ok {
			c.dynamic = true
			in, given := c.vars[v.Name.Value]
			if given && in != nil {
				b, ok := in.(bool)
				if !ok {
					// graphql-go coerces it, or fails: let it.
					return 0, ErrNotDirect
				}
				return boolCondition(b), nil
			}
			def := c.varDefs[v.Name.Value]
			if def == nil || def.DefaultValue == nil {
				return -1, nil
			}
			value = def.DefaultValue
		}
		if b, ok := value.(*ast.BooleanValue); ok {
			return boolCondition(b.Value), nil
		}
		return 0, ErrNotDirect
	}
	return -1, nil
}

func boolCondition(b bool) int {
	if b {
		return 1
	}
	return 0
}

// errNull reports a null in a non-null position, which graphql-go reports
// as an error.
var errNull = errors.New("null in a non-null field")

// ErrTooLarge stops the writing of an answer that passed its limit.
var ErrTooLarge = errors.New("response too large")

// Write appends the data of p to dst, with root as the root value, calling
// the resolvers with args as the root fields' arguments (by response key,
// see ArgumentValues). It fails with ErrTooLarge once the data pass limit
// bytes, and with ErrNotDirect (or another error) when graphql-go must
// execute the operation to report what went wrong. The response around
// the data goes in dst too, so that it is never copied: Write makes room
// for as much data as the plan wrote last time, and a little more.
func Write(ctx context.Context, dst []byte, p *Plan, root any, args map[string]map[string]any, limit int) ([]byte, error) {
	start := len(dst)
	w := directWriter{ctx: ctx, buf: slices.Grow(dst, int(max(1024, p.size.Load()*9/8))), limit: start + min(limit, math.MaxInt-start)}
	if err := w.object(p, root, args); err != nil {
		return nil, err
	}
	p.size.Store(int64(len(w.buf) - start))
	return w.buf, nil
}

// directWriter runs a plan, writing the response's data.
type directWriter struct {
	ctx context.Context
	buf []byte
	// limit is the length of buf writing stops at, with ErrTooLarge.
	limit int
}

// object writes the fields p selects of src. args are the arguments of
// the root fields, by response key.
func (w *directWriter) object(p *Plan, src any, args map[string]map[string]any) error {
	w.buf = append(w.buf, '{')
	for i, f := range p.Fields {
		if i > 0 {
			w.buf = append(w.buf, ',')
		}
		w.buf = append(w.buf, f.json...)
		if f.Def == nil {
			w.buf = AppendString(w.buf, p.Type.Name())
			continue
		}
		if f.write != nil {
			if buf, ok := f.write(w.buf, src); ok {
				if w.buf = buf; len(w.buf) > w.limit {
					return ErrTooLarge
				}
				continue
			}
		}
		fargs := f.args
		if fargs == nil {
			fargs = args[f.Key]
		}
		v, err := f.Def.Resolve(graphql.ResolveParams{Source: src, Args: fargs, Context: w.ctx,
			Info: graphql.ResolveInfo{FieldName: f.Name, ParentType: p.Type}})
		if err != nil {
			return err
		}
		if err := w.value(f.Def.Type, v, f); err != nil {
			return err
		}
	}
	w.buf = append(w.buf, '}')
	return nil
}

// value writes v completed as a value of t, as graphql-go's completeValue
// does.
func (w *directWriter) value(t graphql.Type, v any, f *Field) error {
	nonNull := false
	if nn, ok := t.(*graphql.NonNull); ok {
		t, nonNull = nn.OfType, true
	}
	if isNullValue(v) {
		if nonNull {
			return errNull
		}
		w.buf = append(w.buf, "null"...)
		return nil
	}
	switch t := t.(type) {
	case *graphql.List:
		return w.list(t.OfType, v, f)
	case *graphql.Object:
		return w.object(f.sub, v, nil)
	case *graphql.Scalar:
		if s, ok := v.(string); ok && (t == graphql.String || t == graphql.ID) {
			// What Serialize returns, without the fmt.Sprintf("%v") by
			// which graphql-go coerces every string: a tenth of a page's
			// time.
			return w.leaf(s, nonNull)
		}
		return w.leaf(t.Serialize(v), nonNull)
	case *graphql.Enum:
		return w.leaf(t.Serialize(v), nonNull)
	}
	return ErrNotDirect
}

// list writes the items of v, a slice.
func (w *directWriter) list(item graphql.Type, v any, f *Field) error {
	w.buf = append(w.buf, '[')
	// The common list, without reflection.
	if objs, ok := v.([]*index.Object); ok {
		for i, o := range objs {
			if i > 0 {
				w.buf = append(w.buf, ',')
			}
			if err := w.value(item, o, f); err != nil {
				return err
			}
		}
		w.buf = append(w.buf, ']')
		return nil
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
		return ErrNotDirect
	}
	for i := range rv.Len() {
		if i > 0 {
			w.buf = append(w.buf, ',')
		}
		if err := w.value(item, rv.Index(i).Interface(), f); err != nil {
			return err
		}
	}
	w.buf = append(w.buf, ']')
	return nil
}

// leaf writes a serialized scalar or enum value as encoding/json would.
// Leaves are where an answer grows (an object's JSON is one), so the size
// limit is checked after each.
func (w *directWriter) leaf(v any, nonNull bool) error {
	if err := w.writeLeaf(v, nonNull); err != nil {
		return err
	}
	if len(w.buf) > w.limit {
		return ErrTooLarge
	}
	return nil
}

func (w *directWriter) writeLeaf(v any, nonNull bool) error {
	if isNullValue(v) {
		if nonNull {
			return errNull
		}
		w.buf = append(w.buf, "null"...)
		return nil
	}
	switch v := v.(type) {
	case string:
		w.buf = AppendString(w.buf, v)
	case int:
		w.buf = strconv.AppendInt(w.buf, int64(v), 10)
	case bool:
		w.buf = strconv.AppendBool(w.buf, v)
	case json.RawMessage:
		// Stored bytes: an object's JSON, or labels written compact.
		w.buf = append(w.buf, v...)
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		w.buf = append(w.buf, b...)
	}
	return nil
}

// isNullValue reports whether v is null to GraphQL: nil, or a nil pointer.
func isNullValue(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}

// ArgumentValues returns the arguments of a field as graphql-go gives them
// to resolvers: each argument's value from its literal or variable (vars
// are the coerced variables), its default when that is null, left out when
// still null.
func ArgumentValues(defs []*graphql.Argument, nodes []*ast.Argument, vars map[string]any) map[string]any {
	out := make(map[string]any, len(defs))
	for _, d := range defs {
		var node ast.Value
		for _, n := range nodes {
			if n.Name != nil && n.Name.Value == d.PrivateName {
				node = n.Value
			}
		}
		v := literalInput(node, d.Type, vars)
		if isNullValue(v) {
			v = d.DefaultValue
		}
		if !isNullValue(v) {
			out[d.PrivateName] = v
		}
	}
	return out
}

// literalInput returns the value of an argument's literal of type t, with
// the variables' values in place of variables. A single value where a list
// is expected is a list of one; input objects get their fields' defaults.
func literalInput(node ast.Value, t graphql.Input, vars map[string]any) any {
	if node == nil {
		return nil
	}
	if v, ok := node.(*ast.Variable); ok {
		if v.Name == nil {
			return nil
		}
		return vars[v.Name.Value]
	}
	switch t := t.(type) {
	case *graphql.NonNull:
		return literalInput(node, t.OfType, vars)
	case *graphql.List:
		list, ok := node.(*ast.ListValue)
		if !ok {
			return []any{literalInput(node, t.OfType, vars)}
		}
		out := make([]any, 0, len(list.Values))
		for _, item := range list.Values {
			out = append(out, literalInput(item, t.OfType, vars))
		}
		return out
	case *graphql.InputObject:
		obj, ok := node.(*ast.ObjectValue)
		if !ok {
			return nil
		}
		out := map[string]any{}
		for name, field := range t.Fields() {
			v := field.DefaultValue
			for _, f := range obj.Fields {
				if f != nil && f.Name != nil && f.Name.Value == name {
					v = literalInput(f.Value, field.Type, vars)
				}
			}
			if !isNullValue(v) {
				out[name] = v
			}
		}
		return out
	case *graphql.Scalar:
		return t.ParseLiteral(node)
	case *graphql.Enum:
		return t.ParseLiteral(node)
	}
	return nil
}

// AppendString appends s as a JSON string. Label keys and values are
// plain ASCII by Kubernetes' validation; anything else goes through
// encoding/json.
func AppendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
