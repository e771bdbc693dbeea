// Package nodetest runs Node.js scripts from Go tests, for checks with real
// third-party JavaScript clients (graphql-http's conformance audits, the
// graphql-ws client, graphql-js, GraphQL Code Generator and tsc).
//
// Install installs pinned npm packages once per machine into a cache
// directory under the module root, <module root>/.cache/node/<hash>, which
// git ignores, and returns that directory; InstallLocked does the same with
// npm ci from a committed package.json and package-lock.json, for tools
// whose many dependencies must not drift. Run runs a script with node,
// resolving require() calls from the installed node_modules, and fails the
// test when it fails; Output returns how it ended instead. All fail the
// test, never skip it, when node or npm are missing (and skip it under
// -short, the unit layer).
package nodetest
