// Package api holds the GraphQL API's end-to-end tests on real API servers;
// it has no code of its own.
//
// Its TestMain starts the test bed of internal/testcluster, three
// kube-apiservers (c1, c2, c3) on one etcd, from the binaries in bin/ (make
// testbin). Each test runs the application (internal/app) over them and
// checks, through its HTTP handler and the Go API of pkg/graphql:
//
//   - real_test.go: queries, their filters and paging, during churn and with
//     a cluster down (stale answers);
//   - real_subscribe_test.go: resourceEvents subscriptions, across an outage
//     and an etcd compaction, list-then-follow, expired cursors and slow
//     consumers;
//   - transport_real_test.go and ratelimit_real_test.go: the WebSocket and
//     SSE transports with the real graphql-ws and graphql-sse npm clients
//     (testdata/ws_client.js, testdata/sse_client.js; internal/nodetest
//     installs them), and subscription rate limits as those clients see them;
//   - typed_real_test.go, typed_kinds_real_test.go and
//     crd_version_real_test.go: typed kinds equal to the servers' objects
//     field by field, relations, CRDs added, changed, removed and moved to
//     another served version while queries and subscriptions run;
//   - clients_real_test.go: the typed schema as graphql-js, GraphQL Code
//     Generator and tsc see it (testdata/typedclient, installed from its
//     package-lock.json by internal/nodetest);
//   - replicas_real_test.go: two replicas behind a TCP proxy that plays their
//     Service, and the retrying graphql-ws client moving from one to the
//     other when its replica stops.
//
// The unit tests of pkg/graphql need no server and stay there.
package api
