package app

import (
	"net/http"

	"github.com/fleetcache/fleetcache/internal/graphiql"
	"github.com/fleetcache/fleetcache/internal/playground"
)

// The pages a browser can get at /graphql (Options.Playground).
const (
	// PlaygroundGraphiQL is GraphiQL, bundled at build time (internal/graphiql).
	PlaygroundGraphiQL = "graphiql"
	// PlaygroundBasic is the basic playground written for fleetcache
	// (internal/playground): no build step, a stricter Content-Security-Policy.
	PlaygroundBasic = "basic"
)

// defaultPlayground is GraphiQL when the binary holds its bundle, else the
// basic playground: a plain go build still serves a working page.
func defaultPlayground() string {
	if graphiql.Built() {
		return PlaygroundGraphiQL
	}
	return PlaygroundBasic
}

// browserPage returns the page of /graphql named by name ("" for the
// default) and the test for its asset requests.
func browserPage(name string) (http.Handler, func(*http.Request) bool) {
	if name == "" {
		name = defaultPlayground()
	}
	if name == PlaygroundGraphiQL {
		return graphiql.Handler("/graphql"), graphiql.IsAssetRequest
	}
	return playground.Handler("/graphql"), playground.IsAssetRequest
}
