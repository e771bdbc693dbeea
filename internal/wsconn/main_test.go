package wsconn

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no goroutine outlives the tests: every
// connection's writer ends with it.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
