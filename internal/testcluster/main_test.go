package testcluster

import "testing"

// env is shared by the tests of this package: two clusters, c1 and c2.
var env *Env

func TestMain(m *testing.M) { Main(m, Options{Clusters: 2}, &env) }
