// Package authn authenticates the callers of fleetcache's API.
//
// A caller sends a bearer token; a TokenReview Authenticator asks the cluster
// fleetcache runs in whether the token is valid and who it belongs to, and
// caches the answer briefly (rejections for less time). The resulting User
// travels in the request's context (WithUser, UserFrom) to authorization.
package authn
