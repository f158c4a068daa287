package ratelimit

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"time"
)

// FailurePolicy says what a Fallback decides when its limiter cannot.
type FailurePolicy int

const (
	// FailOpen admits the call: availability over enforcement. Use it where limits protect capacity and a
	// short burst over the limit is cheaper than refusing every call while Redis is down.
	FailOpen FailurePolicy = iota
	// FailClosed denies the call with a RetryAfter of one second: enforcement over availability. Use it where
	// a limit guards cost or abuse.
	FailClosed
)

// String returns "fail-open" or "fail-closed".
func (p FailurePolicy) String() string {
	switch p {
	case FailOpen:
		return "fail-open"
	case FailClosed:
		return "fail-closed"
	default:
		return "FailurePolicy(" + strconv.Itoa(int(p)) + ")"
	}
}

// failClosedRetry is the RetryAfter of a call denied by FailClosed: long enough not to hammer a struggling
// backend, short enough that agents recover quickly once it is back.
const failClosedRetry = time.Second

// Fallback is a Limiter that turns backend failures of another Limiter into decisions, so a rate-limit check
// never fails a tool call. See WithFallback.
type Fallback struct {
	inner   Limiter
	policy  FailurePolicy
	logger  *slog.Logger
	clock   func() time.Time
	every   time.Duration
	onError func(error)
	stats   counters

	mu         sync.Mutex
	lastLog    time.Time
	suppressed int
}

var _ Limiter = (*Fallback)(nil)

// WithFallback wraps l so that its errors are decided by policy: FailOpen admits the call, FailClosed denies
// it with RetryAfter 1 s. A Decision made by the policy has Remaining 0, because the real count is unknown.
// Two errors pass through unchanged: ErrInvalidLimit (a caller bug, not an outage) and the caller's own
// context error (the call is over anyway).
//
// Each absorbed failure is counted in Stats.BackendErrors and passed to the WithErrorHook function; the logger
// (nil discards) gets at most one warning per WithLogInterval, so an outage does not flood the log. WithClock
// sets the clock of that throttle. The returned *Fallback is a Limiter; its Stats covers every decision it
// returns.
//
// WithFallback adds no deadline of its own: the wrapped limiter must bound its calls, as Redis does with
// WithTimeout (50 ms by default), so a call never hangs.
func WithFallback(l Limiter, policy FailurePolicy, logger *slog.Logger, opts ...Option) *Fallback {
	o := newOptions(opts)
	return &Fallback{
		inner:   l,
		policy:  policy,
		logger:  discardLogger(logger),
		clock:   o.clock,
		every:   o.logInterval,
		onError: o.onError,
	}
}

// Allow implements Limiter.
func (f *Fallback) Allow(ctx context.Context, key string, l Limit) (Decision, error) {
	d, err := f.inner.Allow(ctx, key, l)
	switch {
	case err == nil:
	case errors.Is(err, ErrInvalidLimit):
		return Decision{}, err
	case ctx.Err() != nil:
		return Decision{}, ctx.Err()
	default:
		f.absorb(ctx, err)
		d = Decision{Allowed: f.policy == FailOpen, Degraded: true}
		if !d.Allowed {
			d.RetryAfter = failClosedRetry
		}
	}
	f.stats.record(d)
	return d, nil
}

// Stats returns a snapshot of the counters.
func (f *Fallback) Stats() Stats { return f.stats.snapshot() }

// Close closes the wrapped limiter.
func (f *Fallback) Close() error { return f.inner.Close() }

func (f *Fallback) absorb(ctx context.Context, err error) {
	f.stats.backendErrors.Add(1)
	if f.onError != nil {
		f.onError(err)
	}

	now := f.clock()
	f.mu.Lock()
	if !f.lastLog.IsZero() && now.Sub(f.lastLog) < f.every {
		f.suppressed++
		f.mu.Unlock()
		return
	}
	suppressed := f.suppressed
	f.lastLog, f.suppressed = now, 0
	f.mu.Unlock()

	f.logger.LogAttrs(ctx, slog.LevelWarn, "rate limiter backend failed; applying failure policy",
		slog.String("policy", f.policy.String()),
		slog.Int("suppressed", suppressed),
		slog.Any("error", err))
}
