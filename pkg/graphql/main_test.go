package graphql_test

import (
	"testing"

	"github.com/fleetcache/fleetcache/internal/testcluster"
)

// env is three real clusters (c1, c2, c3) shared by the real-server tests.
// testcluster.Main also checks, after the tests, that no goroutine leaked;
// the package's unit tests run under it too.
var env *testcluster.Env

func TestMain(m *testing.M) { testcluster.Main(m, testcluster.Options{Clusters: 3}, &env) }
