package transport

// The values of extensions.code that the transports' own errors carry,
// besides the engine's (graphql.CodeBadRequest, …).
const (
	// CodePayloadTooLarge: the request body is over Options.MaxBodyBytes
	// (HTTP 413).
	CodePayloadTooLarge = "PAYLOAD_TOO_LARGE"
	// CodeTooManySubscriptions: a WebSocket connection already runs
	// Options.MaxSubscriptionsPerConnection operations; the subscribe
	// message gets an error message, and the connection stays open.
	CodeTooManySubscriptions = "TOO_MANY_SUBSCRIPTIONS"
	// CodeTooManyConnections: the client's address already holds
	// Options.MaxConnectionsPerAddress WebSocket and SSE connections
	// (HTTP 429, before the upgrade or the stream).
	CodeTooManyConnections = "TOO_MANY_CONNECTIONS"
	// CodeSlowConsumer: an SSE subscription ended because the client did
	// not read its events as fast as they came (its buffer of
	// graphql.Options.Fanout.Buffer events overflowed). Resubscribe with since
	// set to the last cursor received. Over WebSocket, the socket is closed
	// with 1013 instead.
	CodeSlowConsumer = "SLOW_CONSUMER"
	// CodeShuttingDown: the server is stopping and takes no new
	// connections (HTTP 503).
	CodeShuttingDown = "SHUTTING_DOWN"
)
