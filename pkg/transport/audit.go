package transport

import (
	"context"

	"github.com/fleetcache/fleetcache/pkg/audit"
	"github.com/fleetcache/fleetcache/pkg/graphql"
)

// auditOperation records in ctx's audit event what operation o is (nil
// when it did not prepare).
func auditOperation(ctx context.Context, o *graphql.Operation) {
	if o != nil {
		audit.From(ctx).SetOperation(o.Name(), o.Type())
	}
}

// auditResult records in ctx's audit event the codes of res's errors.
func auditResult(ctx context.Context, res *graphql.Result) {
	ev := audit.From(ctx)
	if ev == nil || res == nil || len(res.Errors) == 0 {
		return
	}
	var codes []string
	for _, e := range res.Errors {
		code, _ := e.Extensions["code"].(string)
		if code == "" {
			code = "UNKNOWN"
		}
		codes = append(codes, code)
	}
	ev.SetErrors(codes)
}
