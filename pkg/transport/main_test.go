package transport

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no goroutine outlives the tests: every connection's
// reader, writer and operations, and every stream, end with it. (A process
// of idle WebSocket clients for BenchmarkIdleSubscriptionMemoryWebSocket
// never gets here: see wsClientsEnv.)
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
