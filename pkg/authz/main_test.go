package authz

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that nothing outlives the tests: Scope asks its
// decisions in goroutines of its own.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
