package demo

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that nothing outlives the tests. The tests start their own
// clusters through Run (the demo's env is its own), so testcluster.Main,
// which shares one env among a package's tests, does not fit here.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
