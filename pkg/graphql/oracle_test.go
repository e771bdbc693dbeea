package graphql

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/graphql-go/graphql"
	"github.com/graphql-go/graphql/gqlerrors"
	"github.com/graphql-go/graphql/language/ast"

	"github.com/fleetcache/fleetcache/pkg/graphql/document"
)

// The oracle of the executor's tests: graphql-go's own executor over the
// same schema and resolvers, which the server does not use. Its answer is
// encoded with the fields in selection order, its errors given codes as
// the server gives them, so that the two answers compare token for token.

// executeWithGraphQLGo runs a query with graphql-go's executor alone.
func executeWithGraphQLGo(t testing.TB, s *Server, query string, vars map[string]any, opName string) *Result {
	t.Helper()
	doc, errs := s.prepare(query)
	if errs != nil {
		return &Result{Errors: errs}
	}
	op, err := selectOperation(doc.ast, opName)
	if err != nil {
		return errorResult(codeOf(err), err)
	}
	if res := s.checkCost(doc, op, vars); res != nil {
		return res
	}
	r := graphql.Execute(graphql.ExecuteParams{Schema: doc.gen.schema, AST: doc.ast, OperationName: opName, Args: vars, Context: t.Context()})
	res := &Result{Executed: true}
	for _, e := range r.Errors {
		switch {
		case code(e) != "":
		case r.Data == nil && len(e.Path) == 0:
			// The variables' coercion errors.
			e = withCode(e, CodeBadUserInput)
			res.Executed = false
		default:
			e = withCode(e, CodeInternal)
		}
		res.Errors = append(res.Errors, e)
	}
	if !res.Executed || r.Data == nil {
		return res
	}
	var buf bytes.Buffer
	if err := writeOrdered(&buf, document.Fragments(doc.ast), r.Data, []*ast.SelectionSet{op.SelectionSet}); err != nil {
		t.Fatalf("encode graphql-go's data: %v", err)
	}
	if int64(buf.Len()) > s.opts.MaxResponseBytes {
		return s.responseTooLarge()
	}
	res.data = buf.Bytes()
	res.Data = json.RawMessage(res.data)
	return res
}

// writeOrdered encodes v, as graphql-go's executor returns it, with the
// fields of each object in the order sets select them.
func writeOrdered(buf *bytes.Buffer, fragments map[string]*ast.FragmentDefinition, v any, sets []*ast.SelectionSet) error {
	switch v := v.(type) {
	case map[string]any:
		if len(sets) == 0 {
			break
		}
		keys, fields := document.CollectFields(sets, fragments, document.Selector{})
		for k := range v {
			if !slices.Contains(keys, k) {
				return fmt.Errorf("graphql-go answered %q, which is not selected", k)
			}
		}
		buf.WriteByte('{')
		n := 0
		for _, k := range keys {
			fv, ok := v[k]
			if !ok {
				continue // skipped by a directive or a type condition
			}
			if n++; n > 1 {
				buf.WriteByte(',')
			}
			kb, _ := json.Marshal(k)
			buf.Write(kb)
			buf.WriteByte(':')
			var sub []*ast.SelectionSet
			for _, f := range fields[k] {
				if f.SelectionSet != nil {
					sub = append(sub, f.SelectionSet)
				}
			}
			if err := writeOrdered(buf, fragments, fv, sub); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
		return nil
	case []any:
		if len(sets) == 0 {
			break
		}
		buf.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeOrdered(buf, fragments, e, sets); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	buf.Write(b)
	return nil
}

// comparable returns a result's response with its errors in a fixed
// order: graphql-go's executor resolves the fields of an object in map
// order, so errors of sibling fields come in any order.
func comparable(t testing.TB, r *Result) []byte {
	t.Helper()
	c := *r
	c.Errors = slices.Clone(r.Errors)
	slices.SortStableFunc(c.Errors, func(a, b gqlerrors.FormattedError) int {
		return bytes.Compare(mustJSON(t, a), mustJSON(t, b))
	})
	c.response, c.encoded = nil, nil
	return mustJSON(t, &c)
}
