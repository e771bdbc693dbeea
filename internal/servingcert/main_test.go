package servingcert

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that nothing outlives the tests: a Reloader runs until
// its context ends.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
