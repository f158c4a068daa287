// Package client is the Go client of toolsvc for internal services: the
// generated gRPC stubs of gen/go with the protocol's rules built in, so
// that a caller does not have to work them out.
//
// A [Client] is one gRPC connection to toolsvc (TLS by default, mutual TLS
// with a client certificate, or plaintext on loopback when asked for) that
// presents an API key or a JWT, static or from a [TokenSource] that
// refreshes. Every call made through it, typed or by name:
//
//   - fails with an [*Error] (read it with errors.As, or with the helpers
//     [IsNotFound], [IsRateLimited], ...), carrying the server's ToolError:
//     code, message, field violations, whether it is retryable, how long to
//     wait, and the agent hints;
//   - is retried with backoff and jitter when the server says the failure is
//     retryable, waiting at least the server's retryAfter, up to a bound the
//     caller can change ([WithRetryPolicy], [WithMaxAttempts]); a non-retryable failure is
//     returned at once;
//   - carries an idempotency key when the tool has side effects (a fresh key
//     per logical call, the same on each of its retries), so that a write the
//     server ran is never run twice; a mutation without a key is never
//     retried;
//   - gets a deadline from the tool's declared response-time class when the
//     caller's context has none;
//   - is traced and measured by OpenTelemetry's otelgrpc stats handler, which
//     records nothing unless the process has set a tracer or meter provider.
//
// The built-in tools have typed services ([Client.Memory],
// [Client.Knowledge], [Client.Sync], [Client.Audit]); any tool the caller may
// see, upstream ones included, can be called by name with
// [Client.CallTool] and listed with [Client.ListTools].
//
// docs/CLIENT.md is the guide.
package client
