package typed

import (
	"time"

	"github.com/graphql-go/graphql"
	"github.com/graphql-go/graphql/language/ast"
)

// JSON is any JSON value. Its serialized values are written to the
// response as they are: a json.RawMessage (an object's stored bytes) is
// copied, not re-encoded.
var JSON = RawScalar("JSON", "Any JSON value.", Literal)

// Time is a time in RFC 3339; the zero time is null.
var Time = graphql.NewScalar(graphql.ScalarConfig{
	Name:        "Time",
	Description: "A time in RFC 3339 format, e.g. 2024-05-01T12:00:00Z.",
	Serialize: func(v any) any {
		switch t := v.(type) {
		case time.Time:
			if t.IsZero() {
				return nil
			}
			return t.UTC().Format(time.RFC3339)
		case *time.Time:
			if t == nil || t.IsZero() {
				return nil
			}
			return t.UTC().Format(time.RFC3339)
		}
		return nil
	},
	ParseValue: func(v any) any {
		if s, ok := v.(string); ok {
			if t, err := time.Parse(time.RFC3339, s); err == nil {
				return t
			}
		}
		return nil
	},
	ParseLiteral: func(v ast.Value) any {
		if s, ok := v.(*ast.StringValue); ok {
			if t, err := time.Parse(time.RFC3339, s.Value); err == nil {
				return t
			}
		}
		return nil
	},
})
