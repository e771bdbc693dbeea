package playground

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that nothing outlives the tests: they run node through
// os/exec, whose goroutines must end with each command.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
