// Package playground serves fleetcache's interactive GraphQL playground: a
// page for browsers with a query editor, a variables editor, the result of
// the last run, query history and a documentation explorer built from an
// introspection query.
//
// Handler returns the http.Handler that serves the page and its assets. The
// page is plain HTML, CSS and JavaScript embedded in the binary, so it works
// without internet access: it loads nothing from another origin and posts
// queries only to the endpoint it was given. The handler is mounted on a
// single path (the GraphQL endpoint itself, for requests that accept
// text/html); the page's assets are served by the same handler at that path
// with an "asset" query parameter, which IsAssetRequest recognizes so that
// the GraphQL server can route those requests here whatever their Accept
// header.
//
// A Token field in the toolbar holds a bearer token for servers that
// authenticate callers: it is kept in sessionStorage (never localStorage,
// so it ends with the tab) and sent as Authorization: Bearer on every
// request, the introspection of the documentation explorer included. An
// empty field sends no header, for servers without authentication. A 401
// (UNAUTHENTICATED) answer is shown with a message pointing at the field.
//
// The page's logic that needs no browser (reading operation names,
// validating variables, history, prettifying) lives in assets/logic.js and is
// tested with Node's test runner from playground_test.go.
package playground
