// Package mcp holds the MCP server's end-to-end tests on real API servers;
// it has no code of its own.
//
// Its TestMain starts the test bed of internal/testcluster, two
// kube-apiservers (c1, c2) on one etcd, from the binaries in bin/ (make
// testbin). The tests run the application (internal/app) over them with
// internal/apptest, with callers' bearer tokens reviewed by c1 and their
// rights decided by each member cluster's RBAC, and drive /mcp with real
// third-party clients that internal/nodetest installs from npm:
//
//   - inspector_real_test.go: the MCP Inspector's CLI
//     (@modelcontextprotocol/inspector-cli) lists the tools, resources and
//     prompts and calls each tool, as an administrator and as a user who
//     may list one namespace, the answers checked against the API servers'
//     own lists and Tables; with a cluster down, cluster_health says why
//     it is not current and the answers name it as stale; bad arguments
//     come back as tool errors.
//   - changes_real_test.go: what_changed, after the test creates, updates
//     and deletes ConfigMaps and a Deployment in both clusters: the
//     answers (oldest and newest first, in pages, by cluster and kind,
//     with a field's values, as alice) checked against what the test
//     did, and bad arguments as tool errors.
//   - conformance_real_test.go: the server scenarios of the MCP
//     conformance suite (@modelcontextprotocol/conformance) that apply to
//     a server other than the suite's own test server.
//
// The unit tests of pkg/mcp need no server and stay there.
package mcp
