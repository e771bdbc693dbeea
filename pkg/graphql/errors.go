package graphql

import (
	"context"
	"errors"
	"fmt"

	"github.com/graphql-go/graphql/gqlerrors"
)

// The values of extensions.code that the errors of a Result carry.
const (
	// CodeParseFailed: the query is not a syntactically valid GraphQL document.
	CodeParseFailed = "GRAPHQL_PARSE_FAILED"
	// CodeValidationFailed: the document does not fit the schema (unknown
	// fields, wrong argument types, …), nests deeper than Options.MaxDepth,
	// or holds more than 2,000 selections (graphql-go's validation takes
	// time quadratic in their number).
	CodeValidationFailed = "GRAPHQL_VALIDATION_FAILED"
	// CodeBadUserInput: an argument or variable value is invalid: a label
	// selector that does not parse, a malformed cursor or one of the other
	// kind, first out of range, variables that do not coerce.
	CodeBadUserInput = "BAD_USER_INPUT"
	// CodeCursorExpired: a subscription's since cursor is older than the
	// changes the index retains, or comes from another index epoch (before
	// a restart, another replica). The client lists again and follows from
	// the new ResourceConnection.revision.
	CodeCursorExpired = "CURSOR_EXPIRED"
	// CodeTimeout: the request ran past Options.Timeout.
	CodeTimeout = "TIMEOUT"
	// CodeBadRequest: the request is malformed (over HTTP: not JSON, no
	// query, wrong method or content type), names an operation the
	// document does not have, or was canceled by the client.
	CodeBadRequest = "BAD_REQUEST"
	// CodeQueryTooComplex: the operation's cost (the most objects its
	// answer, or a subscription event's, can hold; see package cost) is over
	// Options.MaxCost, or it selects more than 20,000 fields with its
	// fragments expanded. It is refused before it runs; the message gives
	// the cost and the limit.
	CodeQueryTooComplex = "QUERY_TOO_COMPLEX"
	// CodeResponseTooLarge: the answer's encoding (a query's, or a
	// subscription event's) passed Options.MaxResponseBytes; it was
	// abandoned and "data" is null.
	CodeResponseTooLarge = "RESPONSE_TOO_LARGE"
	// CodeInternal: a bug; the server logs the details.
	CodeInternal = "INTERNAL_SERVER_ERROR"
)

// codedError is an error with an extensions.code. graphql-go copies the
// extensions of a resolver's error that implements gqlerrors.ExtendedError
// into the formatted error.
type codedError struct {
	code string
	err  error
}

func (e *codedError) Error() string { return e.err.Error() }

func (e *codedError) Unwrap() error { return e.err }

// Extensions implements gqlerrors.ExtendedError.
func (e *codedError) Extensions() map[string]any { return map[string]any{"code": e.code} }

func newCodedError(code string, err error) *codedError { return &codedError{code: code, err: err} }

// badInput returns a BAD_USER_INPUT error.
func badInput(format string, args ...any) error {
	return newCodedError(CodeBadUserInput, fmt.Errorf(format, args...))
}

// formatted returns a located-nowhere error with a code, as the request
// level errors (parse, HTTP) are reported.
func formatted(code string, err error) gqlerrors.FormattedError {
	fe := gqlerrors.FormatError(newCodedError(code, err))
	fe.Extensions = map[string]any{"code": code}
	return fe
}

// withCode returns fe with extensions.code set to code.
func withCode(fe gqlerrors.FormattedError, code string) gqlerrors.FormattedError {
	ext := make(map[string]any, len(fe.Extensions)+1)
	for k, v := range fe.Extensions {
		ext[k] = v
	}
	ext["code"] = code
	fe.Extensions = ext
	return fe
}

// code returns the extensions.code of fe, or "".
func code(fe gqlerrors.FormattedError) string {
	c, _ := fe.Extensions["code"].(string)
	return c
}

// errCanceled is the cause of a request whose client went away.
var errCanceled = errors.New("request canceled by the client")

// contextError turns the error of a done request context into a coded error:
// TIMEOUT for a deadline, BAD_REQUEST for a cancellation.
func contextError(ctx context.Context, timeout fmt.Stringer) error {
	err := ctx.Err()
	if err == nil {
		return nil
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return newCodedError(CodeTimeout, fmt.Errorf("request timed out after %s: %w", timeout, err))
	}
	return newCodedError(CodeBadRequest, fmt.Errorf("%w: %w", errCanceled, err))
}

// checkContext returns the coded error of ctx if it is done; resolvers call
// it before they read the index.
func (s *Server) checkContext(ctx context.Context) error {
	if ctx == nil {
		return nil
	}
	return contextError(ctx, s.opts.Timeout)
}
