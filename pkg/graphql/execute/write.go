package execute

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"runtime/debug"
	"slices"
	"strconv"

	"github.com/graphql-go/graphql"
	"github.com/graphql-go/graphql/gqlerrors"
	"github.com/graphql-go/graphql/language/ast"

	"github.com/fleetcache/fleetcache/pkg/index/object"
)

// ErrTooLarge stops the writing of an answer that passed its limit.
var ErrTooLarge = errors.New("response too large")

// PanicError is the error of a field whose resolver (or the writing of
// its value) panicked: the field is null, as for any other error, and the
// server reports it as an internal error with its stack.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return "internal error" }

// Cause returns the error a field's resolver returned (or the
// *PanicError), out of the located error that carries it.
func Cause(fe gqlerrors.FormattedError) error {
	err := fe.OriginalError()
	if ge, ok := err.(*gqlerrors.Error); ok && ge.OriginalError != nil {
		return ge.OriginalError
	}
	return err
}

// Write appends the data of p to dst, with root as the root value. args,
// when not nil, are the root fields' arguments by response key, in place
// of those compiled into p. The response around the data goes in dst too,
// so that it is never copied: Write makes room for as much data as the
// plan wrote last time, and a little more.
//
// Errors are GraphQL's: a field whose resolver fails (or panics: a
// *PanicError) is null, and so is its closest nullable enclosing value, up
// to the data itself; each error is located as graphql-go locates it (the
// response path and the field's places in the document) and returned in
// the order the fields were written. Write fails only with ErrTooLarge,
// once the data pass limit bytes.
func Write(ctx context.Context, dst []byte, p *Plan, root any, args map[string]map[string]any, limit int) ([]byte, []gqlerrors.FormattedError, error) {
	start := len(dst)
	w := writer{ctx: ctx, buf: slices.Grow(dst, int(max(1024, p.size.Load()*9/8))), limit: start + min(limit, math.MaxInt-start)}
	switch err := w.object(p, root, args); {
	case errors.Is(err, ErrTooLarge) || len(w.buf) > w.limit:
		return nil, nil, ErrTooLarge
	case err != nil:
		// A non-null root field failed: the data are null.
		w.buf = append(w.buf[:start], "null"...)
		w.errs = append(w.errs, err.(*located))
	}
	p.size.Store(int64(len(w.buf) - start))
	var errs []gqlerrors.FormattedError
	for _, le := range w.errs {
		errs = append(errs, le.FormattedError)
	}
	return w.buf, errs, nil
}

// writer runs a plan, writing the response's data.
type writer struct {
	ctx context.Context
	buf []byte
	// limit is the length of buf writing stops at, with ErrTooLarge.
	limit int
	// errs are the errors recorded where their values were made null.
	errs []*located
}

// located is an error located in the document: it makes every value null
// up to the closest nullable one, where it is recorded. Its response path
// is built as the writer's calls return, each putting its step (a
// response key, a list index) in front: the writer keeps no path of its
// own while nothing fails (kept in a slice, the path cost a write barrier
// per field while the collector marked).
type located struct {
	gqlerrors.FormattedError
	// fixed: the error came located (a *gqlerrors.Error); its path is
	// kept, as graphql-go keeps it.
	fixed bool
}

// under puts step in front of the path of the errors recorded since the
// writer held n errors and of err, the error going up, if any.
func (w *writer) under(step any, n int, err error) {
	for _, le := range w.errs[n:] {
		le.prepend(step)
	}
	if le, ok := err.(*located); ok {
		le.prepend(step)
	}
}

func (le *located) prepend(step any) {
	if !le.fixed {
		le.Path = append([]any{step}, le.Path...)
	}
}

// object writes the fields p selects of src. args, when not nil, are the
// root fields' arguments. An error it returns is a *located that makes
// the object null, or ErrTooLarge.
func (w *writer) object(p *Plan, src any, args map[string]map[string]any) error {
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
		fargs := f.Args
		if a, ok := args[f.Key]; ok {
			fargs = a
		}
		n := len(w.errs)
		err := w.field(p.Type, f, src, fargs)
		if len(w.errs) > n || err != nil {
			w.under(f.Key, n, err)
		}
		if err != nil {
			return err
		}
	}
	w.buf = append(w.buf, '}')
	return nil
}

// field resolves f of src and writes its value.
func (w *writer) field(parent *graphql.Object, f *Field, src any, args map[string]any) error {
	mark := len(w.buf)
	v, err := w.resolve(parent, f, src, args)
	if err == nil {
		_, err = w.complete(f.Def.Type, v, parent, f)
	}
	return w.catch(f.Def.Type, err, f, mark)
}

// resolve calls the resolver of f; a panic of the resolver is its error.
// (A panic of the writing itself fails the whole request: Write's caller
// recovers it.)
func (w *writer) resolve(parent *graphql.Object, f *Field, src any, args map[string]any) (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, &PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	fn := f.Def.Resolve
	if fn == nil {
		fn = graphql.DefaultResolveFn
	}
	// Built in place: ResolveInfo is large, and a page resolves a few
	// fields per object.
	p := graphql.ResolveParams{Source: src, Args: args, Context: w.ctx}
	// fleetcache's resolvers read the field's name and nodes (what it
	// selects: a page and its count are read together).
	p.Info.FieldName, p.Info.ParentType, p.Info.FieldASTs = f.Name, parent, f.Nodes
	if f.schema != nil {
		// Introspection's resolvers read the schema and the type.
		p.Info.Schema, p.Info.ReturnType = *f.schema, f.Def.Type
	}
	return fn(p)
}

// info is what IsTypeOf and ResolveType learn of where they run.
func (w *writer) info(parent *graphql.Object, f *Field) graphql.ResolveInfo {
	info := graphql.ResolveInfo{FieldName: f.Name, ParentType: parent, ReturnType: f.Def.Type}
	if f.schema != nil {
		info.Schema, info.FieldASTs = *f.schema, f.Nodes
	}
	return info
}

// catch handles what writing a value of type t at mark ended with: a
// value that failed is located here unless it already was; it is null
// here when t is nullable (the error recorded), else the error goes up.
func (w *writer) catch(t graphql.Type, err error, f *Field, mark int) error {
	if err == nil || err == ErrTooLarge {
		return err
	}
	le, ok := err.(*located)
	if !ok {
		le = locate(err, f)
	}
	if _, ok := t.(*graphql.NonNull); ok {
		return le
	}
	w.errs = append(w.errs, le)
	w.buf = append(w.buf[:mark], "null"...)
	return nil
}

// locate locates err in f's places in the document, its path to be built
// as it goes up. An error that is located already (a *gqlerrors.Error)
// keeps its place, as in graphql-go.
func locate(err error, f *Field) *located {
	nodes := make([]ast.Node, len(f.Nodes))
	for i, n := range f.Nodes {
		nodes[i] = n
	}
	_, fixed := err.(*gqlerrors.Error)
	return &located{FormattedError: gqlerrors.FormatError(graphql.NewLocatedErrorWithPath(err, nodes, nil)), fixed: fixed}
}

// complete writes v as a value of t, as graphql-go's completeValue
// completes it; null reports that it wrote null. One call per value,
// non-null or not: a page completes a few values per object.
func (w *writer) complete(t graphql.Type, v any, parent *graphql.Object, f *Field) (null bool, err error) {
	nonNull := false
	if nn, ok := t.(*graphql.NonNull); ok {
		t, nonNull = nn.OfType, true
	}
	if isNull(v) {
		return w.null(nonNull, parent, f)
	}
	switch t := t.(type) {
	case *graphql.List:
		return false, w.list(t.OfType, v, parent, f)
	case *graphql.Object:
		return false, w.objectValue(t, f.sub, v, parent, f)
	case *graphql.Interface, *graphql.Union:
		rt, err := w.runtimeType(t.(graphql.Abstract), v, parent, f)
		if err != nil {
			return false, err
		}
		return false, w.objectValue(rt, f.abstract.of(rt), v, parent, f)
	case *graphql.Scalar:
		if s, ok := v.(string); ok && (t == graphql.String || t == graphql.ID) {
			// What Serialize returns, without the fmt.Sprintf("%v") by
			// which graphql-go coerces every string: a tenth of a page's
			// time.
			return false, w.leaf(s)
		}
		v = t.Serialize(v)
	case *graphql.Enum:
		v = t.Serialize(v)
	default:
		return false, fmt.Errorf("cannot complete a value of type %v", t)
	}
	if isNull(v) {
		return w.null(nonNull, parent, f)
	}
	return false, w.leaf(v)
}

// null writes null, or fails in a non-null position.
func (w *writer) null(nonNull bool, parent *graphql.Object, f *Field) (bool, error) {
	if nonNull {
		//lint:ignore ST1005 graphql-go's message, word for word: answers keep it
		return false, fmt.Errorf("Cannot return null for non-nullable field %v.%v.", parent, f.Name)
	}
	w.buf = append(w.buf, "null"...)
	return true, nil
}

// objectValue writes v, a value of t, with the fields p selects.
func (w *writer) objectValue(t *graphql.Object, p *Plan, v any, parent *graphql.Object, f *Field) error {
	if t.IsTypeOf != nil && !t.IsTypeOf(graphql.IsTypeOfParams{Value: v, Info: w.info(parent, f), Context: w.ctx}) {
		//lint:ignore ST1005 graphql-go's message, word for word: answers keep it
		return fmt.Errorf(`Expected value of type "%v" but got: %T.`, t, v)
	}
	return w.object(p, v, nil)
}

// runtimeType returns the object type of v, a value of the abstract type
// t, as graphql-go finds it: t's ResolveType, else the first possible type
// whose IsTypeOf accepts v.
func (w *writer) runtimeType(t graphql.Abstract, v any, parent *graphql.Object, f *Field) (*graphql.Object, error) {
	schema := f.abstract.c.schema
	params := graphql.ResolveTypeParams{Value: v, Info: w.info(parent, f), Context: w.ctx}
	var rt *graphql.Object
	switch t := t.(type) {
	case *graphql.Union:
		if t.ResolveType != nil {
			rt = t.ResolveType(params)
		}
	case *graphql.Interface:
		if t.ResolveType != nil {
			rt = t.ResolveType(params)
		}
	}
	if rt == nil {
		for _, pt := range schema.PossibleTypes(t) {
			if pt.IsTypeOf != nil && pt.IsTypeOf(graphql.IsTypeOfParams{Value: v, Info: params.Info, Context: w.ctx}) {
				rt = pt
				break
			}
		}
	}
	if rt == nil {
		//lint:ignore ST1005 graphql-go's message, word for word: answers keep it
		return nil, fmt.Errorf(`Abstract type %v must resolve to an Object type at runtime for field %v.%v with value "%v", received "%v".`, t, parent, f.Name, v, rt)
	}
	if !f.abstract.possible(t, rt) {
		//lint:ignore ST1005 graphql-go's message, word for word: answers keep it
		return nil, fmt.Errorf(`Runtime Object type "%v" is not a possible type for "%v".`, rt, t)
	}
	return rt, nil
}

// list writes the items of v, a slice (or a pointer to one).
func (w *writer) list(item graphql.Type, v any, parent *graphql.Object, f *Field) error {
	w.buf = append(w.buf, '[')
	// The common list, without reflection.
	if objs, ok := v.([]*object.Object); ok {
		for i, o := range objs {
			if err := w.item(i, item, o, parent, f); err != nil {
				return err
			}
		}
		w.buf = append(w.buf, ']')
		return nil
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer {
		rv = rv.Elem()
	}
	if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
		//lint:ignore ST1005 graphql-go's message, word for word: answers keep it
		return fmt.Errorf("User Error: expected iterable, but did not find one for field %v.%v.", parent, f.Name)
	}
	for i := range rv.Len() {
		if err := w.item(i, item, rv.Index(i).Interface(), parent, f); err != nil {
			return err
		}
	}
	w.buf = append(w.buf, ']')
	return nil
}

// item writes the item i of a list: null when it fails and its type is
// nullable, else the list's field fails.
func (w *writer) item(i int, t graphql.Type, v any, parent *graphql.Object, f *Field) error {
	if i > 0 {
		w.buf = append(w.buf, ',')
	}
	mark, n := len(w.buf), len(w.errs)
	_, err := w.complete(t, v, parent, f)
	err = w.catch(t, err, f, mark)
	if len(w.errs) > n || err != nil {
		w.under(i, n, err)
	}
	return err
}

// leaf writes a serialized scalar or enum value as encoding/json would.
// Leaves are where an answer grows (an object's JSON is one), so the size
// limit is checked after each.
func (w *writer) leaf(v any) error {
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
	case float64:
		// Floats are common (a cluster's changeRate is 30 of them), and
		// json.Marshal allocates for each.
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return fmt.Errorf("json: unsupported value: %v", v)
		}
		w.buf = AppendFloat(w.buf, v)
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		w.buf = append(w.buf, b...)
	}
	if len(w.buf) > w.limit {
		return ErrTooLarge
	}
	return nil
}

// isNull reports whether v is null to GraphQL, as graphql-go's isNullish
// decides: nil, a nil pointer, or a NaN.
func isNull(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case string, bool, int, json.RawMessage:
		return false
	case *object.Object:
		return v == nil
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return true
		}
		rv = rv.Elem()
	}
	switch rv.Kind() {
	case reflect.Float32, reflect.Float64:
		return math.IsNaN(rv.Float())
	}
	return false
}

// AppendFloat appends a finite v as encoding/json writes a float64: the
// shortest form that reads back as v, in exponent notation below 1e-6 and
// from 1e21 up ("1e-7", "1e+21").
func AppendFloat(b []byte, v float64) []byte {
	format := byte('f')
	if abs := math.Abs(v); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, v, format, -1, 64)
	if format == 'e' {
		// strconv writes "1e-07"; encoding/json, like JavaScript, "1e-7".
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
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
