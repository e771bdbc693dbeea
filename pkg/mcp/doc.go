// Package mcp serves fleetcache's index to AI assistants over the Model
// Context Protocol: a Server is an MCP server (github.com/modelcontextprotocol/go-sdk)
// whose tools, resources and prompts answer what runs where, what is broken
// and how fresh each cluster is, with each caller's rights.
//
// The Server reads nothing itself. Every tool, resource and prompt runs a
// GraphQL query through the Engine it is given (*graphql.Server, the engine
// behind /graphql) with the caller in the context, so that authorization,
// filters, cursors, cost and time limits, error codes and the answer's
// freshness (staleClusters) are the engine's own: one execution path. The
// tools only shape the engine's answers for a model (tools.go): a summary
// line first, then the objects, cut to Options.ResultBytes per call with a
// cursor to continue.
//
// Tools (tools.go): find_resources, get_resource, count_resources,
// cluster_health and get_table; what_changed (changes.go), over the
// engine's changes query. Resources (resources.go): the cluster list
// (fleetcache://clusters) and each cluster's health
// (fleetcache://clusters/{name}). Prompts (resources.go):
// why_not_running_everywhere and whats_broken.
//
// Server.ServeHTTP serves the Streamable HTTP transport in its stateless
// mode: each POST is a session of its own, so nothing is kept between
// requests and any replica can answer any request. It expects its caller
// already authenticated (pkg/transport's Server.Guard does that for the
// application, as it does for /graphql): the caller that the request's
// context carries (authn.UserFrom) is the caller of every tool call in it.
// Without one the engine's Authorizer, if any, sees an anonymous caller,
// who sees nothing.
package mcp
