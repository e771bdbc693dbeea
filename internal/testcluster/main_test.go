package testcluster

import "testing"

// testbed is shared by the tests of this package: two clusters, c1 and c2.
var testbed = NewShared(Options{Clusters: 2})

func TestMain(m *testing.M) { Main(m, testbed) }
