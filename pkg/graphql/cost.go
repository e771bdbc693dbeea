package graphql

import (
	"fmt"
	"strconv"

	"github.com/graphql-go/graphql/language/ast"

	"github.com/fleetcache/fleetcache/pkg/graphql/cost"
)

// costed is the cost of an operation that holds for any variables but
// those of its filters (cost.Cost.Of reads them), kept with its document.
type costed struct {
	cost cost.Cost
	err  error
}

// costOf returns the cost of op (package cost; of one event's payload for
// a subscription) with the variables vars, or cost.ErrTooManyFields. Costs
// that hold for any variables are kept with the document.
func (s *Server) costOf(d *parsedDocument, op *ast.OperationDefinition, vars map[string]any) (int, error) {
	if c, ok := d.costs.Load(op); ok {
		return c.(costed).cost.Of(vars), c.(costed).err
	}
	c, err := cost.Of(&d.gen.schema, d.ast, op, vars,
		cost.Options{DefaultPageSize: s.opts.DefaultPageSize, MaxPageSize: s.opts.MaxPageSize})
	if c.Static() {
		d.costs.Store(op, costed{c, err})
	}
	return c.Of(vars), err
}

// checkCost returns the error result of an operation over
// Options.MaxCost, or that selects too many fields (cost.ErrTooManyFields),
// or nil.
func (s *Server) checkCost(doc *parsedDocument, op *ast.OperationDefinition, vars map[string]any) *Result {
	n, err := s.costOf(doc, op, vars)
	if err != nil {
		return errorResult(CodeQueryTooComplex, fmt.Errorf("query too complex: %w", err))
	}
	if n <= s.opts.MaxCost {
		return nil
	}
	what := "its answer could hold"
	if op.Operation == ast.OperationTypeSubscription {
		what = "each event could hold"
	}
	return errorResult(CodeQueryTooComplex, fmt.Errorf(
		"query too complex: %s %s objects, over the limit of %s: ask for fewer (first) or split the query; see \"Query cost\" in docs/graphql.md",
		what, formatCount(n), formatCount(s.opts.MaxCost)))
}

// formatCount writes n with thousands separators: 100,000.
func formatCount(n int) string {
	s := strconv.Itoa(n)
	out := make([]byte, 0, len(s)+len(s)/3)
	for i, c := range []byte(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, c)
	}
	return string(out)
}
