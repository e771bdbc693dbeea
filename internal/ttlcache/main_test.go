package ttlcache

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that the cache starts no goroutine: golang-lru's
// expirable cache would start one that cannot be stopped.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
