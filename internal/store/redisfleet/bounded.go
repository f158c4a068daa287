// Package redisfleet holds what the replicas of a fleet share through
// Redis, beside the rate limiter and the cache: the bus that tells every
// replica what changed (Bus), the MCP sessions every replica can serve
// (Sessions), and the bound every Redis call keeps (Bounded: a deadline,
// even with clients that do not abort socket I/O when a context expires).
package redisfleet

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// HonoursContext reports whether client aborts socket I/O when the context's deadline passes. go-redis only
// does so with ContextTimeoutEnabled; otherwise a stalled server holds a call for the client's ReadTimeout
// (seconds), whatever deadline the context carries.
func HonoursContext(client redis.UniversalClient) bool {
	switch c := client.(type) {
	case interface{ Options() *redis.Options }:
		return c.Options().ContextTimeoutEnabled
	case interface{ Options() *redis.ClusterOptions }:
		return c.Options().ContextTimeoutEnabled
	default:
		return false
	}
}

// Bounded runs call with a context that expires after timeout and returns within timeout even if call does
// not. When direct is false, call runs in its own goroutine that is abandoned, not killed, on timeout: it
// finishes at the client's own timeout, and its result is dropped.
func Bounded[T any](ctx context.Context, timeout time.Duration, direct bool, call func(context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if direct {
		return call(ctx)
	}
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1) // buffered: an abandoned call must still be able to finish
	go func() {
		v, err := call(ctx)
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}
