// Package testcluster starts real Kubernetes API servers for integration tests.
//
// An [Env] is one etcd process and N kube-apiserver processes, all on free
// 127.0.0.1 ports, each API server with its own --etcd-prefix: N independent
// clusters that share one etcd. [Start] creates an Env and returns once every
// server is ready; [Env.Stop] stops every process it started and removes its
// temporary directory.
//
// A [Cluster] is one of those API servers ("c1", "c2", …). It hands out
// rest.Configs for the built-in user "admin" (group system:masters) and for
// the extra users of [Options.Users], who have no rights until [Cluster.Grant]
// gives them some. [Cluster.Stop] and [Cluster.Restart] simulate an outage of
// the API server (its data stays in etcd); [Cluster.StartSecondary] starts a
// [Secondary], a second API server on the same etcd prefix, through which the
// cluster can change while its main endpoint is down. [Env.Compact] compacts
// etcd so that watches from old resource versions get 410 Gone.
//
// The binaries come from <module root>/bin (run "make testbin"), or from the
// directory named by the FLEETCACHE_TESTBIN environment variable. Tests never
// skip when they are missing: Start fails and says how to build them. Only
// under -short (make test-unit, the unit layer) do the tests that need servers
// skip, saying that make test runs them ([SkipShort]).
//
// A test package shares one Env among its tests with a [Shared], started by
// the first test that asks for it, so that tests needing no cluster never
// wait for one; Main stops it after the tests and then checks for leaked
// goroutines (the Env starts none that outlive it):
//
//	var testbed = testcluster.NewShared(testcluster.Options{Clusters: 2})
//
//	func TestMain(m *testing.M) { testcluster.Main(m, testbed) }
//
//	func TestX(t *testing.T) {
//		env := testbed.Env(t) // skips under -short
//		…
//	}
//
// Tests then use env.Cluster("c1").AdminConfig() and friends. A test that stops
// a cluster must restart it before it returns, so that the next test finds it
// up. Every API server takes about 4 s to start and about 260 MB of memory.
package testcluster
