// Package wsconn is the socket layer of fleetcache's WebSocket transport:
// the server side of RFC 6455 on github.com/gobwas/ws, a frame-level
// library that writes nothing by itself. It knows frames, not the message
// protocol spoken over them (graphql-transport-ws, in pkg/transport).
//
// Upgrade completes the handshake and returns a Conn; New wraps a socket
// already upgraded. A Conn has one owner per direction:
//
//   - The reader, whoever calls Conn.ReadMessage: it assembles fragments,
//     checks frames and UTF-8 and the size limit, and acts on the peer's
//     control frames (a ping's pong and a close frame's echo go to the
//     writer). It never writes.
//   - The writer, Conn.Start: the only goroutine that writes to the
//     socket. It takes everything that waits in the connection's bounded
//     outbox (Conn.Send, a message split into parts so that a payload
//     encoded once is shared by many connections; pongs ahead of
//     messages) and writes it in one write from a pooled buffer; it sends
//     Options.Heartbeat on a ticker once Conn.StartHeartbeat is called;
//     each write runs under Options.WriteTimeout.
//
// Conn.Close(code, reason) starts the close handshake: the writer sends
// the close frame ahead of what waits, writes nothing after it, and shuts
// the socket once the peer's close frame is read or Options.CloseTimeout
// has passed. A peer's close frame is echoed the same way. Frames that
// break RFC 6455 close with 1002, messages over Options.MaxMessageSize
// with 1009. Conn.Shutdown ends the connection at once; Conn.Context ends
// when a close is requested or the connection ends, for the work that
// feeds it.
package wsconn
