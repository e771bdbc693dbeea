package graphql

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"runtime/debug"
	"sync"

	"github.com/graphql-go/graphql"
	"github.com/graphql-go/graphql/gqlerrors"
	"github.com/graphql-go/graphql/language/ast"

	"github.com/fleetcache/fleetcache/pkg/graphql/execute"
)

// planFor returns the plan of op, an operation of d, for its coerced
// variables vars. Plans that hold for any variables are kept with the
// document.
func (s *Server) planFor(d *parsedDocument, op *ast.OperationDefinition, vars map[string]any) (*execute.Plan, error) {
	if v, ok := d.plans.Load(op); ok {
		return v.(*execute.Plan), nil
	}
	p, static, err := execute.Compile(&d.gen.schema, d.ast, op, vars, d.gen.writer)
	if err != nil {
		return nil, err
	}
	if static {
		d.plans.Store(op, p)
	}
	return p, nil
}

// rootArgs returns the arguments of the plan's root fields for op's
// coerced variables, by response key: a plan kept for any variables was
// compiled with another request's.
func rootArgs(op *ast.OperationDefinition, p *execute.Plan, vars map[string]any) map[string]map[string]any {
	if len(op.VariableDefinitions) == 0 {
		return nil
	}
	args := make(map[string]map[string]any, len(p.Fields))
	for _, f := range p.Fields {
		if f.Def != nil && len(f.Def.Args) > 0 {
			args[f.Key] = execute.ArgumentValues(f.Def.Args, f.Nodes[0].Arguments, vars)
		}
	}
	return args
}

// coerceVariables returns op's variables as graphql-go coerces them, or
// the result that reports why they do not coerce (BAD_USER_INPUT, not
// executed) or why coercion did not end (the context's error). It is the
// one way to the coerced variables, for queries and subscriptions.
func (s *Server) coerceVariables(ctx context.Context, op *ast.OperationDefinition, vars map[string]any) (map[string]any, *Result) {
	if len(op.VariableDefinitions) == 0 {
		return nil, nil
	}
	if coerced, ok := plainVariables(op, vars); ok {
		return coerced, nil
	}
	return s.probeVariables(ctx, op, vars)
}

// plainVariables returns op's variables when graphql-go would coerce each
// to itself: every one a String or a Boolean (or non-null), given as
// a string or a boolean, as a portal's namespace or cursor is. Else false:
// probeVariables has graphql-go coerce them, defaults, nulls and errors
// included. The probe is a quarter of a page's time in the handler.
func plainVariables(op *ast.OperationDefinition, vars map[string]any) (map[string]any, bool) {
	out := make(map[string]any, len(op.VariableDefinitions))
	for _, d := range op.VariableDefinitions {
		t := d.Type
		if nn, ok := t.(*ast.NonNull); ok {
			t = nn.Type
		}
		named, ok := t.(*ast.Named)
		if !ok || named.Name == nil || d.Variable == nil || d.Variable.Name == nil {
			return nil, false
		}
		v := vars[d.Variable.Name.Value]
		switch named.Name.Value {
		case "String":
			_, ok = v.(string)
		case "Boolean":
			_, ok = v.(bool)
		default:
			ok = false
		}
		if !ok {
			return nil, false
		}
		out[d.Variable.Name.Value] = v
	}
	return out, true
}

// probeVariables returns op's variables as graphql-go coerces them; see
// coerceVariables. graphql-go coerces variables only to execute an
// operation, so it executes one with op's variable definitions that
// selects resources (none of its arguments is required) and nothing of
// it, whose resolver keeps them (variablesProbe) and reads nothing. It
// succeeds: a root field that failed instead would have graphql-go locate
// its error in the query's text, a quarter of a page's time.
func (s *Server) probeVariables(ctx context.Context, op *ast.OperationDefinition, vars map[string]any) (map[string]any, *Result) {
	probe := ast.NewOperationDefinition(&ast.OperationDefinition{
		Operation:           ast.OperationTypeQuery,
		VariableDefinitions: op.VariableDefinitions,
		SelectionSet: ast.NewSelectionSet(&ast.SelectionSet{Selections: []ast.Selection{
			ast.NewField(&ast.Field{Name: ast.NewName(&ast.Name{Value: "resources"})}),
		}}),
	})
	vp := &variablesProbe{}
	// graphql.Execute runs in a goroutine of its own and returns early
	// when ctx ends; the probe's resolver returns at once, so that
	// goroutine ends soon after.
	r := graphql.Execute(graphql.ExecuteParams{Schema: s.gen.Load().schema, Root: vp, AST: ast.NewDocument(&ast.Document{Definitions: []ast.Node{probe}}), Args: vars, Context: ctx})
	if err := contextError(ctx, s.opts.Timeout); err != nil {
		return nil, &Result{Executed: true, Errors: []gqlerrors.FormattedError{formatted(codeOf(err), err)}}
	}
	if len(r.Errors) > 0 {
		errs := make([]gqlerrors.FormattedError, len(r.Errors))
		for i, e := range r.Errors {
			errs[i] = withCode(e, CodeBadUserInput)
		}
		return nil, &Result{Errors: errs}
	}
	coerced, ok := vp.get()
	if !ok {
		err := errors.New("the variables' coercion did not run")
		return nil, &Result{Executed: true, Errors: []gqlerrors.FormattedError{formatted(CodeInternal, err)}}
	}
	return coerced, nil
}

// variablesProbe is the root value of probeVariables' execution. The
// execution may outlive a timeout: mu guards vars.
type variablesProbe struct {
	mu   sync.Mutex
	vars map[string]any
	set  bool
}

func (vp *variablesProbe) keep(vars map[string]any) {
	vp.mu.Lock()
	vp.vars, vp.set = vars, true
	vp.mu.Unlock()
}

// get returns the variables kept; false when the resolver did not run.
func (vp *variablesProbe) get() (map[string]any, bool) {
	vp.mu.Lock()
	defer vp.mu.Unlock()
	if vp.vars == nil {
		return map[string]any{}, vp.set
	}
	return vp.vars, vp.set
}

// probingVariables lets a variablesProbe keep the coerced variables
// instead of resolving the root field.
func probingVariables(fn graphql.FieldResolveFn) graphql.FieldResolveFn {
	return func(p graphql.ResolveParams) (any, error) {
		if vp, ok := p.Source.(*variablesProbe); ok {
			vp.keep(p.Info.VariableValues)
			return vp, nil // an object of which nothing is selected
		}
		return fn(p)
	}
}

// run executes the plan of op with root as the root value and the root
// fields' arguments args (nil: those compiled into p), into a result that
// holds its response encoded. Field errors keep their codes; others are
// internal errors, logged at error level with the operation's name, as
// is a panic of the executor itself. An answer over
// Options.MaxResponseBytes is abandoned for a RESPONSE_TOO_LARGE error.
func (s *Server) run(ctx context.Context, op *ast.OperationDefinition, p *execute.Plan, root any, args map[string]map[string]any) (res *Result) {
	defer func() {
		if r := recover(); r != nil {
			res = s.internal(op, &execute.PanicError{Value: r, Stack: debug.Stack()})
		}
	}()
	const prefix = `{"data":`
	enc, errs, err := execute.Write(ctx, []byte(prefix), p, root, args, int(min(s.opts.MaxResponseBytes, math.MaxInt)))
	if err != nil {
		return s.responseTooLarge()
	}
	data := enc[len(prefix):]
	res = &Result{Data: json.RawMessage(data), Executed: true, data: data}
	if len(errs) == 0 {
		res.response = append(enc, '}')
		return res
	}
	res.Errors = make([]gqlerrors.FormattedError, len(errs))
	for i, e := range errs {
		res.Errors[i] = s.classify(op, e)
	}
	return res
}

// classify gives a field error without a code the code INTERNAL, and logs
// it at error level: the resolvers give a code to every error the caller
// can do something about.
func (s *Server) classify(op *ast.OperationDefinition, e gqlerrors.FormattedError) gqlerrors.FormattedError {
	if code(e) != "" {
		return e
	}
	kv := []any{"operation", operationName(op), "path", e.Path, "message", e.Message}
	var pe *execute.PanicError
	if errors.As(execute.Cause(e), &pe) {
		kv = append(kv, "panic", pe.Value, "stack", string(pe.Stack))
	}
	s.opts.Logger.Error(execute.Cause(e), "GraphQL execution failed", kv...)
	return withCode(e, CodeInternal)
}

// internal is the result of an execution that failed as a whole: the
// executor panicked (a *execute.PanicError) or could not plan a validated
// operation. It is logged at error level with the operation's name.
func (s *Server) internal(op *ast.OperationDefinition, err error) *Result {
	kv := []any{"operation", operationName(op)}
	var pe *execute.PanicError
	if errors.As(err, &pe) {
		kv = append(kv, "panic", pe.Value, "stack", string(pe.Stack))
	}
	s.opts.Logger.Error(err, "GraphQL execution failed as a whole", kv...)
	return &Result{Executed: true, Errors: []gqlerrors.FormattedError{formatted(CodeInternal, errors.New("internal error"))}}
}

// operationName returns op's name, or "" for an anonymous operation.
func operationName(op *ast.OperationDefinition) string {
	if op.Name != nil {
		return op.Name.Value
	}
	return ""
}
