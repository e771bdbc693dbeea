// Package aggregator moved to internal/app: the application's wiring is not
// a Go API. What is left here are aliases for the test files of pkg/graphql
// only, until the split of pkg/graphql (issue 14) imports internal/app and
// deletes this package.
//
// Deprecated: the application's wiring is not a Go API; build on the other
// packages of pkg/.
package aggregator

import "github.com/fleetcache/fleetcache/internal/app"

// Options is app.Options.
type Options = app.Options

// Aggregator is app.Aggregator.
type Aggregator = app.Aggregator

// New is app.New.
func New(opts Options) (*Aggregator, error) { return app.New(opts) }
