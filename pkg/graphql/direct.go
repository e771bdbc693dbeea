package graphql

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"sync"

	"github.com/graphql-go/graphql"
	"github.com/graphql-go/graphql/language/ast"

	"github.com/fleetcache/fleetcache/pkg/graphql/direct"
)

// directOp is what a document keeps of one of its operations for direct
// execution.
type directOp struct {
	// plan is nil when graphql-go executes the operation.
	plan *direct.Plan
}

// planFor returns op's plan for vars, or nil when graphql-go executes op.
// Plans that hold for any variables are kept with the document.
func (s *Server) planFor(d *parsedDocument, op *ast.OperationDefinition, vars map[string]any) *direct.Plan {
	if v, ok := d.plans.Load(op); ok {
		return v.(*directOp).plan
	}
	p, static, err := direct.Compile(&s.schema, d.ast, op, vars, writer)
	if err != nil {
		p = nil
	}
	if static {
		d.plans.Store(op, &directOp{plan: p})
	}
	return p
}

// rootArgs returns the arguments of the plan's root fields, by response
// key, with op's variables as graphql-go coerces them (coerceVariables);
// false means they do not coerce (or that execution failed otherwise):
// graphql-go reports why.
func (s *Server) rootArgs(ctx context.Context, op *ast.OperationDefinition, vars map[string]any, p *direct.Plan) (map[string]map[string]any, bool) {
	var coerced map[string]any
	if len(op.VariableDefinitions) > 0 {
		var ok bool
		if coerced, ok = s.coerceVariables(ctx, op, vars); !ok {
			return nil, false
		}
	}
	var args map[string]map[string]any
	for _, f := range p.Fields {
		if f.Def == nil || len(f.Def.Args) == 0 {
			continue
		}
		if args == nil {
			args = make(map[string]map[string]any, len(p.Fields))
		}
		args[f.Key] = direct.ArgumentValues(f.Def.Args, f.Node.Arguments, coerced)
	}
	return args, true
}

// coerceVariables returns op's variables as graphql-go coerces them; false
// when they do not coerce.
func (s *Server) coerceVariables(ctx context.Context, op *ast.OperationDefinition, vars map[string]any) (map[string]any, bool) {
	if coerced, ok := plainVariables(op, vars); ok {
		return coerced, true
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

// probeVariables returns op's variables as graphql-go coerces them; false
// when they do not coerce. graphql-go coerces variables only to execute an
// operation, so it executes one with op's variable definitions that
// selects resources (none of its arguments is required) and nothing of
// it, whose resolver keeps them (variablesProbe). It succeeds: a root
// field that failed instead would have graphql-go locate its error in the
// query's text, a quarter of a page's time.
func (s *Server) probeVariables(ctx context.Context, op *ast.OperationDefinition, vars map[string]any) (map[string]any, bool) {
	probe := ast.NewOperationDefinition(&ast.OperationDefinition{
		Operation:           ast.OperationTypeQuery,
		VariableDefinitions: op.VariableDefinitions,
		SelectionSet: ast.NewSelectionSet(&ast.SelectionSet{Selections: []ast.Selection{
			ast.NewField(&ast.Field{Name: ast.NewName(&ast.Name{Value: "resources"})}),
		}}),
	})
	vp := &variablesProbe{}
	res := s.executeRoot(ctx, ast.NewDocument(&ast.Document{Definitions: []ast.Node{probe}}), probe, vars, vp, nil)
	if len(res.Errors) > 0 {
		return nil, false
	}
	return vp.get()
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

// runPlan writes the data of p with root as the root value, into a result
// that holds its response encoded. It fails with direct.ErrTooLarge for an
// answer over Options.MaxResponseBytes, and with direct.ErrNotDirect when
// graphql-go must execute the operation to report what went wrong.
func (s *Server) runPlan(ctx context.Context, p *direct.Plan, root any, args map[string]map[string]any) (res *Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			s.opts.Logger.V(4).Info("Direct execution panicked; graphql-go executes the operation", "panic", r)
			res, err = nil, direct.ErrNotDirect
		}
	}()
	const prefix = `{"data":`
	enc, err := direct.Write(ctx, []byte(prefix), p, root, args, int(min(s.opts.MaxResponseBytes, math.MaxInt)))
	switch {
	case errors.Is(err, direct.ErrTooLarge):
		return nil, err
	case err != nil || ctx.Err() != nil:
		return nil, direct.ErrNotDirect
	}
	data := enc[len(prefix):]
	return &Result{Data: json.RawMessage(data), Executed: true, data: data, response: append(enc, '}')}, nil
}
