package graphql

import (
	"context"
	"encoding/json"
	"errors"
	"math"

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
// key. Variables are coerced by graphql-go, in an execution that records them (argsRecorder); false
// means they do not coerce (or that execution failed otherwise): graphql-go
// reports why.
func (s *Server) rootArgs(ctx context.Context, doc *ast.Document, op *ast.OperationDefinition, vars map[string]any, p *direct.Plan) (map[string]map[string]any, bool) {
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
