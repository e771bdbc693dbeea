package app

import (
	"net/http"

	"github.com/fleetcache/fleetcache/internal/graphiql"
)

// browserPage returns the page of /graphql for browsers, GraphiQL (a page
// that says how to build it in a binary built without its bundle), and the
// test for its asset requests.
func browserPage() (http.Handler, func(*http.Request) bool) {
	return graphiql.Handler("/graphql"), graphiql.IsAssetRequest
}
