// Package authn authenticates the callers of fleetcache's API.
//
// A caller sends a bearer token; a TokenReview Authenticator asks the cluster
// fleetcache runs in whether the token is valid and who it belongs to, and
// caches the answer briefly (rejections for less time). The resulting User
// travels in the request's context (WithUser, UserFrom) to authorization.
//
// Nothing authenticates by default in the Go API: a program that builds the
// GraphQL server gets no authentication unless it passes it an
// Authenticator such as NewTokenReview's. The aggregator command, by
// contrast, authenticates with a TokenReview unless told not to
// (docs/configuration.md).
package authn
