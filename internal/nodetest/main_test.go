package nodetest

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that nothing outlives the tests: npm and node run
// through os/exec, whose goroutines end with each command.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
