package api_test

import (
	"testing"

	"github.com/fleetcache/fleetcache/internal/testcluster"
)

// env is three real clusters (c1, c2, c3) shared by the tests of this
// package. testcluster.Main also checks, after the tests, that no goroutine
// leaked.
var env *testcluster.Env

func TestMain(m *testing.M) { testcluster.Main(m, testcluster.Options{Clusters: 3}, &env) }
