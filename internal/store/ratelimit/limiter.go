package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// Limit is a rate limit: at most Max calls in any trailing Window.
type Limit struct {
	// Max is the number of calls admitted per Window; it must be at least 1.
	Max int
	// Window is the length of the sliding window; it must be positive.
	Window time.Duration
}

// Validate reports whether l can be enforced. The error wraps ErrInvalidLimit.
func (l Limit) Validate() error {
	if l.Max < 1 {
		return fmt.Errorf("%w: max %d < 1", ErrInvalidLimit, l.Max)
	}
	if l.Window <= 0 {
		return fmt.Errorf("%w: window %s <= 0", ErrInvalidLimit, l.Window)
	}
	return nil
}

// Decision is the outcome of one Allow call.
type Decision struct {
	// Degraded is true when the backend could not decide and a Fallback
	// policy (fail open or closed) did.
	Degraded bool
	// Allowed reports whether the call was admitted (and counted).
	Allowed bool
	// Remaining is how many more calls the window admits right now, after this one.
	Remaining int
	// RetryAfter is set when the call is not allowed: the time until a call would be admitted.
	RetryAfter time.Duration
}

// Limiter admits or rejects calls per key.
type Limiter interface {
	// Allow records a call for key under l when it is admitted. A denied call is not counted, so a client
	// that retries after RetryAfter is admitted. Errors are backend failures (see WithFallback) or, wrapping
	// ErrInvalidLimit, an unusable Limit.
	Allow(ctx context.Context, key string, l Limit) (Decision, error)
	// Close releases resources owned by the limiter. It does not close a Redis client passed in.
	Close() error
}

// ErrInvalidLimit is wrapped by errors for a Limit that cannot be enforced (Max < 1 or Window <= 0). It is a
// configuration error of the caller, never a backend failure, so WithFallback passes it through.
var ErrInvalidLimit = errors.New("ratelimit: invalid limit")

// Stats is a snapshot of a limiter's counters, for export as metrics.
type Stats struct {
	// Allowed counts admitted calls.
	Allowed uint64
	// Limited counts rejected calls.
	Limited uint64
	// BackendErrors counts failed backend calls (Redis down, timeout). For a Fallback these are the calls
	// decided by its FailurePolicy.
	BackendErrors uint64
	// Evictions counts keys that Memory dropped while they still held admissions, because of its key cap.
	// Each such eviction forgets that key's history. Idle keys are dropped without being counted.
	Evictions uint64
}

// counters are the live, concurrently updated form of Stats.
type counters struct {
	allowed, limited, backendErrors, evictions atomic.Uint64
}

func (c *counters) record(d Decision) {
	if d.Allowed {
		c.allowed.Add(1)
	} else {
		c.limited.Add(1)
	}
}

func (c *counters) snapshot() Stats {
	return Stats{
		Allowed:       c.allowed.Load(),
		Limited:       c.limited.Load(),
		BackendErrors: c.backendErrors.Load(),
		Evictions:     c.evictions.Load(),
	}
}
