// Package audit writes fleetcache's audit log: one JSON line per request on
// every API endpoint (/graphql, /mcp, /clusters/…, /fleet/…), in the shape of
// kube-apiserver's audit events (audit.k8s.io/v1 Event, level Metadata), so
// that the tools that read a Kubernetes audit log read fleetcache's.
//
// A Log (New) writes events to a file or stdout at a Level: None writes
// nothing, Metadata writes who asked what and what was decided, never a
// request's or a response's body nor its headers (so never a bearer token).
// Log.Handler is the HTTP middleware that opens an Event per request and
// puts it in the request's context; the layers below add what they learn to
// it through the package's functions (SetUser, SetImpersonated, SetResource,
// SetOperation, Touch, Decide, …), which do nothing when the context holds
// no Event, and the middleware writes it when the response is complete. A
// long request (a watch, a subscription over Server-Sent Events) also writes
// a line when its response starts (ResponseStarted). An operation on a
// WebSocket is an event of its own (Sub), written when it starts and when it
// ends.
package audit
