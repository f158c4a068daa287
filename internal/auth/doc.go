// Package auth turns the credentials of a request into a [Principal]: who is
// calling, for which tenant, with which permissions.
//
// Credentials arrive as "authorization: Bearer <token>". A token made of three
// dot-separated base64url parts is verified as a JWT against a JWKS (asymmetric
// algorithms only); anything else is looked up as an API key by its SHA-256.
// Both are configured in an auth file read by [LoadFile]. Without an auth file,
// [NewDevelopment] makes every request the anonymous development principal.
//
// Failures are reported as *[Error] values whose Reason callers branch on with
// errors.As; their text never contains the presented token.
//
// The package is a library: the gRPC interceptors that call
// [Authenticator.Authenticate] and [Principal.Allows] live elsewhere, and
// carry the principal on in the call's facts (internal/contract/callctx,
// Facts.Principal). [New] starts no goroutine: [Authenticator.Run]
// refreshes a jwks_url.
package auth
