// Package nodetest runs Node.js scripts from Go tests, for checks with real
// third-party JavaScript clients (graphql-http's conformance audits, the
// graphql-ws client).
//
// Install installs pinned npm packages once per machine into a cache
// directory under the module root, <module root>/.cache/node/<hash>, which
// git ignores, and returns that directory; Run runs a script with node,
// resolving require() calls from the installed node_modules. Both fail the
// test, never skip it, when node or npm are missing.
package nodetest
