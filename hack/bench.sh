#!/usr/bin/env bash
# Runs the benchmarks behind every figure of docs/benchmarks.md, each with the
# command the doc shows beside it (make bench). Several start real test
# servers; together they take about two hours on the project's 2
# cores. Each go test has its own -timeout, fitted to its slowest benchmark:
# go test's default of 10 minutes is too short for several.
set -euo pipefail
cd "$(dirname "$0")/.."
# The memory figures are at the collector's default settings unless a
# command says otherwise.
unset GOGC GOMEMLIMIT

run() {
  echo "+ $*"
  "$@"
}

# Heap per cached object, and initial sync (pkg/informers).
run go test -run '^$' -bench 'HeapPerPod' -benchtime 1x -count 3 -timeout 30m ./pkg/informers/
run env GOMEMLIMIT=64MiB go test -run '^$' -bench 'HeapPerPod/pods=10000' -benchtime 1x -count 1 -timeout 30m ./pkg/informers/
run go test -run '^$' -bench 'InitialSync' -benchtime 5x -count 2 -timeout 30m ./pkg/informers/
# Fleet sync against the careful client-go baseline (issue 16), and decoding alone.
run go test -run '^$' -bench 'FleetSync/clusters=12/' -benchtime 3x -count 1 -timeout 30m ./pkg/informers/
run go test -run '^$' -bench 'FleetSync/clusters=30/' -benchtime 2x -count 1 -timeout 60m ./pkg/informers/
run go test -run '^$' -bench 'DecodePodList' -benchmem -count 3 -cpu 1 ./pkg/wire/
# A fleet of 1,000 aliased clusters starting at once (issue 19): each sub-benchmark in a process of its
# own, since the process's RSS does not shrink back after the first.
run go test -run '^$' -bench 'BenchmarkFleetStart/clusters=1000/configmaps=300' -benchtime 1x -timeout 30m ./pkg/informers/
run go test -run '^$' -bench 'BenchmarkFleetStart/clusters=1000/objects=0' -benchtime 1x -timeout 30m ./pkg/informers/
# Recovery after a partition and an API server restart: p50/p99/max of 20
# rounds each (about 3 minutes); -v prints every round.
run go test -run '^$' -bench 'BenchmarkRecovery' -benchtime 20x -v -timeout 30m ./pkg/informers/

# Index.
run go test -run '^$' -bench . -benchtime 2000x -timeout 30m ./pkg/index/
run go test -run '^$' -bench Apply -benchtime 300000x -timeout 30m ./pkg/index/

# Subscriptions: the core, and over WebSocket.
run go test -run '^$' -bench 'FanoutLatency$|IdleSubscriptionMemory$|SustainedRate$' -benchtime 1x -count 3 -timeout 30m ./pkg/graphql/
run go test -run '^$' -bench 'IdleSubscriptionMemoryWebSocket' -benchtime 1x -count 3 -timeout 30m ./pkg/transport/
run go test -run '^$' -bench 'FanoutLatencyWebSocket' -benchtime 1x -count 4 -timeout 30m ./pkg/transport/
run go test -run '^$' -bench 'EventVisibility' -benchmem -count 3 -timeout 10m ./pkg/graphql/

# Resource.columns: a page of 50 Pods with and without, and one object of a
# few kinds.
run go test -run '^$' -bench 'BenchmarkColumns' -benchmem -timeout 10m ./pkg/graphql/
run go test -run '^$' -bench 'BenchmarkFor' -benchmem -count 3 -timeout 10m ./pkg/columns/

# GraphQL queries end to end, and against the API servers.
run go test -run '^$' -bench 'BenchmarkGraphQL' -benchtime 3000x -count 2 -timeout 30m ./internal/app/
run go test -run '^$' -bench 'BenchmarkPageVersusAPIServers' -benchtime 2000x -timeout 40m ./internal/app/

# MCP (issue 36): a find_resources call over 1,000,000 Pods beside the same
# GraphQL query, the two alternating.
run go test -run '^$' -bench 'BenchmarkMCPFind' -benchtime 3000x -timeout 40m ./internal/app/

# Authorization: each mode in a process of its own, three rounds, the order
# of the modes rotating.
modes=(none cluster-wide-warm cluster-wide-cold namespaces-warm)
for round in 0 1 2; do
  for k in 0 1 2 3; do
    mode=${modes[$(((round + k) % 4))]}
    run go test -run '^$' -bench "BenchmarkAuthorization/mode=$mode/" -benchtime 1000x -timeout 15m ./internal/app/
  done
done

# The Kubernetes API (issue 34): a client-go informer's sync of 100,000 Pods
# through fleetcache and directly (about 30 minutes, 12 of them seeding),
# and a Table row's allocations.
run env FLEETCACHE_BENCH_PODS=100000 go test -run '^$' -bench 'BenchmarkInformerThroughFleetcache' -benchtime 2x -timeout 60m -v ./pkg/kubeapi/
run go test -run '^$' -bench 'BenchmarkTableRows' -benchtime 2s -count 3 -timeout 10m ./pkg/kubeapi/
