package mcp_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no goroutine outlives the tests: the MCP server
// starts none of its own, and each request's session ends with it. The
// tests of this package need no API server; the MCP server's tests on real
// clusters, with the MCP Inspector and the conformance suite, are in
// internal/e2e/mcp.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
