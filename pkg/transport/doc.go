// Package transport serves the GraphQL engine (pkg/graphql) to clients, on
// one path (/graphql):
//
//   - GraphQL over HTTP (http.go): POST with application/json, GET for
//     queries, application/json or application/graphql-response+json
//     answers by the Accept header (parsed by goautoneg); a browser's GET
//     gets Options.BrowserPage (the application's GraphiQL).
//   - graphql-transport-ws over WebSocket (ws.go), in two layers. The
//     socket layer, internal/wsconn on gobwas/ws, owns RFC 6455: frames,
//     the one writer that writes to the socket (messages batched from a
//     bounded outbox, pongs, a heartbeat), the close handshake and the
//     deadlines. On it, wsConn is the graphql-transport-ws state machine:
//     connection_init and its timeout, ack, ping and pong messages,
//     subscribe, next, error, complete and the 44xx close codes. It reads
//     in the handler's goroutine and runs one goroutine per operation,
//     which queue their messages on the socket.
//   - GraphQL over Server-Sent Events, the graphql-sse protocol's distinct
//     connections mode (sse.go).
//
// Each transport prepares a request with the engine (Engine.Prepare), to
// learn what it is, then runs it: ExecuteOperation for queries and
// mutations, SubscribeOperation on the streaming transports. What the
// transports share lives here too: bearer-token authentication
// (Options.Authenticator; the caller goes into the context for the engine's
// authorization), per-caller rate limits (ratelimit.go), per-address
// connection accounting and the drain on shutdown (connections.go), the
// WebSocket Origin check (origin.go), and the transports' own error codes
// and metrics (open subscriptions by transport, rate-limited operations).
//
// Server.Start runs until its context ends, then closes every WebSocket
// (1001) and event stream and waits for them, dropping those that outlive
// Options.ShutdownGrace.
package transport
