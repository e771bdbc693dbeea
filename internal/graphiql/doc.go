// Package graphiql serves GraphiQL, the GraphQL IDE of the GraphQL
// Foundation, from the aggregator's binary without internet access: the
// query editor with autocompletion and linting from the schema, the
// documentation explorer, the Explorer plugin that builds queries by
// ticking fields, history, tabs with example operations for the demo fleet,
// and subscriptions run over WebSocket with the graphql-ws client.
//
// The page's script and style sheet are a bundle that the Makefile builds
// (make ui) from the npm packages pinned in ui/package-lock.json, with
// esbuild, into dist/, the way Prometheus builds and embeds its web UI: the
// bundle is not committed, and go:embed takes whatever dist/ holds when the
// binary is built. Built reports whether it held the bundle. A binary built
// with a plain go build, without make ui, has no bundle: Handler then serves
// a page that says how to build it, as Prometheus does without its UI.
//
// Handler returns the http.Handler of the page and its assets: mounted on
// the GraphQL endpoint for browsers, the assets at the same path with an
// "asset" query parameter (IsAssetRequest).
//
// The page adds a Token field above GraphiQL for servers that authenticate
// callers: the token is kept in sessionStorage (it ends with the tab), sent
// as Authorization: Bearer on HTTP requests and as {"authorization":
// "Bearer …"} in the WebSocket's connection_init, and an HTTP 401 says so
// next to the field. GraphiQL's own headers editor works too; headers are
// not persisted.
package graphiql
