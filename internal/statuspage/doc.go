// Package statuspage serves fleetcache's status page, the dashboard an
// on-call person keeps open: a summary of the fleet (clusters by status,
// objects cached, changes per second, the stalest cluster), then one row per
// cluster, the one not current for longest first, with its status,
// freshness, objects, a sparkline of its change rate, its status over 24
// hours and its last error, a filter, the fleet by resource type, and a
// detail of each cluster (server, version, labels, source, status timeline,
// links to its objects, its resource types); a What changed view over the
// changes query; fleetcache's own health beside them; updated live without
// a reload (docs/status-page.md). It also serves /favicon.ico.
//
// Handler returns the http.Handler of the page (at "/") and its script and
// style sheet (under AssetPrefix). Everything is embedded in the binary and
// nothing is loaded from another origin. The script follows the
// aggregator's own GraphQL API on the same origin:
//
//   - the clusterHealth subscription over Server-Sent Events (a POST to
//     /graphql with Accept: text/event-stream, the graphql-sse protocol's
//     distinct connections mode), read with fetch and a stream reader, so
//     a status change shows at once; when the stream ends or fails the
//     script subscribes again, backing off from 1 s to 30 s;
//   - the clusters query (with Query.fleetcache) every 10 seconds, because clusterHealth
//     reports status changes only: object counts, change rates and
//     durations move without one, and a cluster removed while the stream
//     was down must leave the list.
//
// When the server authenticates callers, the page and its assets are
// served without a token but both requests need one: on HTTP 401 the
// script shows a token form, keeps the token in sessionStorage (it must
// not outlive the tab), sends it as Authorization: Bearer (never in a URL)
// and retries both at once; a refused token keeps the form up with the
// server's reason.
//
// The script builds the page with DOM calls and textContent only, so no
// cluster name or error message is ever parsed as HTML; it is hand-written
// rather than built with a UI library, and draws its charts as SVG, so
// that the page needs no build step and its Content-Security-Policy allows
// no inline style.
package statuspage
