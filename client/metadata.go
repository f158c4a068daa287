package client

import (
	"context"

	"google.golang.org/grpc/metadata"
)

// The request headers toolsvc reads (gRPC metadata keys; the REST gateway
// and the MCP bridge forward HTTP headers of the same names). They are the
// server's (internal/interceptors); a test keeps the two equal.
const (
	// HeaderAuthorization carries "Bearer <API key or JWT>"; the client
	// sets it from [WithAPIKey], [WithJWT] or [WithTokenSource].
	HeaderAuthorization = "authorization"
	// HeaderAgentID names the calling agent or service ([WithAgent]).
	HeaderAgentID = "x-agent-id"
	// HeaderAgentVersion is the calling agent's version ([WithAgent]).
	HeaderAgentVersion = "x-agent-version"
	// HeaderCorrelationID ties the call to the caller's own request
	// ([WithCorrelationID]); the server makes one when it is missing.
	HeaderCorrelationID = "x-correlation-id"
	// HeaderSessionID names the caller's session ([WithSessionID]).
	HeaderSessionID = "x-session-id"
	// HeaderUserID names the user a call acts for, within what the
	// credential allows; the tenant always comes from the credential.
	HeaderUserID = "x-user-id"
	// HeaderOrgID names the organization scope of a call's memories.
	HeaderOrgID = "x-org-id"
	// HeaderTeamID names the team scope of a call's memories.
	HeaderTeamID = "x-team-id"
	// HeaderProjectID names the project scope of a call's memories.
	HeaderProjectID = "x-project-id"
	// HeaderIdempotencyKey makes a call with side effects run once: a
	// repeat with the same key and arguments gets the first call's result.
	// The client sets it ([WithIdempotencyKey] chooses it).
	HeaderIdempotencyKey = "idempotency-key"
)

// callKey is the context key of a call's options.
type callKey struct{}

// callOptions are what a caller set for the calls made with one context.
type callOptions struct {
	md             metadata.MD
	idempotencyKey string
	maxAttempts    int
}

func callOptionsFrom(ctx context.Context) *callOptions {
	o, _ := ctx.Value(callKey{}).(*callOptions)
	return o
}

// withCallOptions returns ctx with a copy of its call options changed by f.
func withCallOptions(ctx context.Context, f func(*callOptions)) context.Context {
	o := &callOptions{}
	if prev := callOptionsFrom(ctx); prev != nil {
		*o = *prev
		o.md = prev.md.Copy()
	}
	f(o)
	return context.WithValue(ctx, callKey{}, o)
}

// WithHeader returns a context whose calls carry the header key (a gRPC
// metadata key, lower case) with value, besides the client's own headers
// ([WithHeaders]). Use it for per-call facts such as [HeaderUserID]; the
// tenant always comes from the credential, never from a header.
func WithHeader(ctx context.Context, key, value string) context.Context {
	return withCallOptions(ctx, func(o *callOptions) {
		if o.md == nil {
			o.md = metadata.MD{}
		}
		o.md.Set(key, value)
	})
}

// WithCorrelationID returns a context whose calls carry the correlation id
// id, which the server writes into the result's metadata and its logs.
func WithCorrelationID(ctx context.Context, id string) context.Context {
	return WithHeader(ctx, HeaderCorrelationID, id)
}

// WithSessionID returns a context whose calls carry the session id id.
func WithSessionID(ctx context.Context, id string) context.Context {
	return WithHeader(ctx, HeaderSessionID, id)
}

// WithIdempotencyKey returns a context whose call uses key as its
// idempotency key instead of a fresh one: to make a write run once across
// restarts of the caller, pass the same key again. A key is 1-255
// printable ASCII characters; use one key per logical write, since the
// same key with other arguments is refused (CONFLICT, not retryable).
func WithIdempotencyKey(ctx context.Context, key string) context.Context {
	return withCallOptions(ctx, func(o *callOptions) { o.idempotencyKey = key })
}

// WithMaxAttempts returns a context whose calls are sent at most n times
// (1: never retried), instead of the client's bound ([WithRetryPolicy]).
func WithMaxAttempts(ctx context.Context, n int) context.Context {
	return withCallOptions(ctx, func(o *callOptions) { o.maxAttempts = max(n, 1) })
}
