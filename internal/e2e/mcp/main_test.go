package mcp_test

import (
	"testing"

	"github.com/fleetcache/fleetcache/internal/testcluster"
)

// testbed is two real clusters (c1, c2) shared by the tests of this
// package, started for the first test that asks for it (testbed.Env).
// testcluster.Main also checks, after the tests, that no goroutine
// leaked.
var testbed = testcluster.NewShared(testcluster.Options{Clusters: 2})

func TestMain(m *testing.M) { testcluster.Main(m, testbed) }
