package graphql

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strconv"

	"github.com/graphql-go/graphql"
	"github.com/graphql-go/graphql/language/ast"

	"github.com/fleetcache/fleetcache/pkg/graphql/document"
	"github.com/fleetcache/fleetcache/pkg/index"
)

// Direct execution. graphql-go builds a map per object and a ResolveInfo
// per field, and the response is then encoded from those maps: about 140 KB
// of garbage for a page of 50 objects, which with a million objects live
// turns into collection pauses at p99. An operation is therefore compiled
// once into a plan (its fields collected as GraphQL's CollectFields does:
// aliases, fragments, @skip and @include) and run by calling the schema's
// own resolvers and writing JSON as it goes. Only the happy path is direct:
// introspection, resolver errors, nulls in non-null fields, panics and
// timeouts go back to graphql-go, which executes the operation again and
// reports them as it always has. Root fields' arguments come from graphql-go
// too, by an execution that records them (see argsRecorder), so that they are coerced exactly
// as graphql-go does.

// plan is an operation's selections, collected for direct execution.
type plan struct {
	typ    *graphql.Object
	fields []*planField
}

// planField is one response key of a selection set and what it selects.
type planField struct {
	key  string
	json []byte // the response key as a JSON string, then ':'
	name string
	// node is the field's first occurrence: its arguments.
	node *ast.Field
	// def is the field's definition; nil for __typename.
	def *graphql.FieldDefinition
	// args are the arguments of a field below the root (Resource.field's
	// path); the root fields' come from rootArgs.
	args map[string]any
	// sub selects the fields of an object-typed field.
	sub *plan
}

// errNotDirect reports that an operation cannot be compiled into a plan.
var errNotDirect = errors.New("not directly executable")

// compiler turns selection sets into plans.
type compiler struct {
	schema    *graphql.Schema
	fragments map[string]*ast.FragmentDefinition
	varDefs   map[string]*ast.VariableDefinition
	vars      map[string]any
	// dynamic records that a @skip or @include depends on a variable: the
	// plan then holds for these variables only.
	dynamic bool
}

// compile returns op's plan for the variables vars, and whether the plan
// holds for any variables. It fails with errNotDirect for operations that
// graphql-go must execute.
func compile(schema *graphql.Schema, doc *ast.Document, op *ast.OperationDefinition, vars map[string]any) (*plan, bool, error) {
	var root *graphql.Object
	switch op.Operation {
	case ast.OperationTypeQuery:
		root = schema.QueryType()
	case ast.OperationTypeSubscription:
		root = schema.SubscriptionType()
	}
	if root == nil {
		return nil, false, errNotDirect
	}
	c := &compiler{schema: schema, fragments: document.Fragments(doc), varDefs: map[string]*ast.VariableDefinition{}, vars: vars}
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
func (c *compiler) plan(t *graphql.Object, sets []*ast.SelectionSet, root bool) (*plan, error) {
	var keys []string
	occurrences := map[string][]*ast.Field{}
	for _, set := range sets {
		if err := c.collect(t, set, map[string]bool{}, &keys, occurrences); err != nil {
			return nil, err
		}
	}
	p := &plan{typ: t, fields: make([]*planField, 0, len(keys))}
	for _, k := range keys {
		fields := occurrences[k]
		name := fields[0].Name.Value
		key, _ := json.Marshal(k)
		f := &planField{key: k, json: append(key, ':'), name: name, node: fields[0]}
		p.fields = append(p.fields, f)
		if name == "__typename" {
			continue
		}
		f.def = t.Fields()[name]
		// Introspection is graphql-go's.
		if f.def == nil || f.def.Resolve == nil {
			return nil, errNotDirect
		}
		if !root && len(f.def.Args) > 0 {
			args, err := c.scalarArgs(f.def.Args, f.node.Arguments)
			if err != nil {
				return nil, err
			}
			f.args = args
		}
		switch named := graphql.GetNamed(f.def.Type).(type) {
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
		default:
			return nil, errNotDirect
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
			return nil, errNotDirect
		}
	}
	for _, n := range nodes {
		if v, ok := n.Value.(*ast.Variable); ok && v.Name != nil {
			c.dynamic = true
			switch c.vars[v.Name.Value].(type) {
			case string, bool:
			default:
				return nil, errNotDirect
			}
		}
	}
	return argumentValues(defs, nodes, c.vars), nil
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
				return errNotDirect
			}
			if matches(f.TypeCondition, t) {
				if err := c.collect(t, f.SelectionSet, visited, keys, occurrences); err != nil {
					return err
				}
			}
		default:
			return errNotDirect
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
					return 0, errNotDirect
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
		return 0, errNotDirect
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

// errResponseTooLarge stops the writing of an answer that passed
// Options.MaxResponseBytes.
var errResponseTooLarge = errors.New("response too large")

// directWriter runs a plan, writing the response's data.
type directWriter struct {
	ctx context.Context
	buf []byte
	// limit is Options.MaxResponseBytes: writing stops with
	// errResponseTooLarge once buf is longer.
	limit int
}

// object writes the fields p selects of src. args are the arguments of
// the root fields, by response key.
func (w *directWriter) object(p *plan, src any, args map[string]map[string]any) error {
	w.buf = append(w.buf, '{')
	for i, f := range p.fields {
		if i > 0 {
			w.buf = append(w.buf, ',')
		}
		w.buf = append(w.buf, f.json...)
		if f.def == nil {
			w.buf = appendJSONString(w.buf, p.typ.Name())
			continue
		}
		fargs := f.args
		if fargs == nil {
			fargs = args[f.key]
		}
		v, err := f.def.Resolve(graphql.ResolveParams{Source: src, Args: fargs, Context: w.ctx,
			Info: graphql.ResolveInfo{FieldName: f.name, ParentType: p.typ}})
		if err != nil {
			return err
		}
		if err := w.value(f.def.Type, v, f); err != nil {
			return err
		}
	}
	w.buf = append(w.buf, '}')
	return nil
}

// value writes v completed as a value of t, as graphql-go's completeValue
// does.
func (w *directWriter) value(t graphql.Type, v any, f *planField) error {
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
		return w.leaf(t.Serialize(v), nonNull)
	case *graphql.Enum:
		return w.leaf(t.Serialize(v), nonNull)
	}
	return errNotDirect
}

// list writes the items of v, a slice.
func (w *directWriter) list(item graphql.Type, v any, f *planField) error {
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
		return errNotDirect
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
		return errResponseTooLarge
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
		w.buf = appendJSONString(w.buf, v)
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

// argumentValues returns the arguments of a field as graphql-go gives them
// to resolvers: each argument's value from its literal or variable (vars
// are the coerced variables), its default when that is null, left out when
// still null.
func argumentValues(defs []*graphql.Argument, nodes []*ast.Argument, vars map[string]any) map[string]any {
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

// directOp is what a document keeps of one of its operations for direct
// execution.
type directOp struct {
	// plan is nil when graphql-go executes the operation.
	plan *plan
}

// planFor returns op's plan for vars, or nil when graphql-go executes op.
// Plans that hold for any variables are kept with the document.
func (s *Server) planFor(d *parsedDocument, op *ast.OperationDefinition, vars map[string]any) *plan {
	if v, ok := d.plans.Load(op); ok {
		return v.(*directOp).plan
	}
	p, static, err := compile(&s.schema, d.ast, op, vars)
	if err != nil {
		p = nil
	}
	if static {
		d.plans.Store(op, &directOp{plan: p})
	}
	return p
}

// rootArgs returns the arguments of the plan's root fields, by response
// key. Variables are coerced by graphql-go, in an execution that records them (argsRecorder); false
// means they do not coerce (or that execution failed otherwise): graphql-go
// reports why.
func (s *Server) rootArgs(ctx context.Context, doc *ast.Document, op *ast.OperationDefinition, vars map[string]any, p *plan) (map[string]map[string]any, bool) {
	var coerced map[string]any
	if len(op.VariableDefinitions) > 0 {
		pr := &argsRecorder{}
		res := s.executeRoot(ctx, doc, op, vars, pr, nil)
		for _, e := range res.Errors {
			if code(e) != codeArgsRecorded {
				return nil, false
			}
		}
		if _, coerced = pr.recorded(); coerced == nil {
			coerced = map[string]any{}
		}
	}
	var args map[string]map[string]any
	for _, f := range p.fields {
		if f.def == nil || len(f.def.Args) == 0 {
			continue
		}
		if args == nil {
			args = make(map[string]map[string]any, len(p.fields))
		}
		args[f.key] = argumentValues(f.def.Args, f.node.Arguments, coerced)
	}
	return args, true
}

// runPlan writes the data of p with root as the root value. It fails with
// errResponseTooLarge for an answer over Options.MaxResponseBytes, and with
// errNotDirect when graphql-go must execute the operation to report what
// went wrong.
func (s *Server) runPlan(ctx context.Context, p *plan, root any, args map[string]map[string]any) (data []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			s.opts.Logger.V(4).Info("Direct execution panicked; graphql-go executes the operation", "panic", r)
			data, err = nil, errNotDirect
		}
	}()
	w := directWriter{ctx: ctx, buf: make([]byte, 0, 1024), limit: int(min(s.opts.MaxResponseBytes, math.MaxInt))}
	err = w.object(p, root, args)
	switch {
	case errors.Is(err, errResponseTooLarge):
		return nil, err
	case err != nil || ctx.Err() != nil:
		return nil, errNotDirect
	}
	return w.buf, nil
}
