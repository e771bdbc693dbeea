package deploy_test

import (
	"testing"

	"github.com/fleetcache/fleetcache/internal/testcluster"
)

// env is one real cluster (c1) with the test users alice, bob and carol.
var env *testcluster.Env

func TestMain(m *testing.M) { testcluster.Main(m, testcluster.Options{Clusters: 1}, &env) }
