package deploy_test

import (
	"testing"

	"github.com/fleetcache/fleetcache/internal/testcluster"
)

// testbed is one real cluster (c1) with the test users alice, bob and carol,
// started for the first test that asks for it (testbed.Env).
var testbed = testcluster.NewShared(testcluster.Options{Clusters: 1})

func TestMain(m *testing.M) { testcluster.Main(m, testbed) }
