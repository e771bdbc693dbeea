package graphql

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no goroutine outlives the tests: servers,
// subscriptions and hubs must stop with their contexts. The tests of this
// package need no API server; the GraphQL API's tests on real clusters are
// in internal/e2e/api.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
