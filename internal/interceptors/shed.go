package interceptors

import (
	"context"
	"runtime"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"

	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
)

// DefaultMaxInFlight bounds concurrent tool calls when Config.MaxInFlight
// is zero: 32 per CPU, at least 64. Calls are mostly CPU-bound (the chain,
// the embedded store), so beyond a few dozen per core more concurrency
// adds queueing, not throughput. The soak test (docs/RELIABILITY.md) with
// 256 saw admitted calls wait out their 2 s deadline on a 2-core replica
// (TIMEOUT); with 48 the same overload was shed at once and the admitted
// calls stayed well inside it. Raise it with --max-in-flight for a store
// that waits on the network (PostgreSQL, embeddings).
var DefaultMaxInFlight = max(64, 32*runtime.GOMAXPROCS(0))

// DefaultShedWait is how long a call beyond the in-flight limit waits for
// a slot when Config.ShedWait is zero. A burst shorter than that is
// absorbed instead of refused; a sustained overload still sheds, after at
// most this long.
const DefaultShedWait = 200 * time.Millisecond

// shedRetryAfter is the wait an overloaded caller is told to observe.
const shedRetryAfter = time.Second

// admission is the in-flight limit with a short, bounded waiting line.
type admission struct {
	slots chan struct{}
	// waiting counts calls waiting for a slot, at most cap(slots).
	waiting atomic.Int64
	wait    time.Duration
}

// acquire takes a slot: at once if one is free, otherwise by waiting up to
// a.wait (and at most half of what is left of the caller's deadline) in a
// line no longer than the limit itself. It reports false when the call is
// to be shed.
func (a *admission) acquire(ctx context.Context) bool {
	select {
	case a.slots <- struct{}{}:
		return true
	default:
	}
	wait := a.wait
	if dl, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(dl)/2)
	}
	if wait <= 0 {
		return false
	}
	if a.waiting.Add(1) > int64(cap(a.slots)) {
		a.waiting.Add(-1)
		return false
	}
	defer a.waiting.Add(-1)
	t := time.NewTimer(wait)
	defer t.Stop()
	// Blocked senders on a channel are served in arrival order, so the
	// line is first come, first served.
	select {
	case a.slots <- struct{}{}:
		return true
	case <-t.C:
		return false
	case <-ctx.Done():
		return false
	}
}

// shed admits at most max calls at once (Config.MaxInFlight, after
// SetDefaults; a negative max disables it). A call beyond the limit waits
// for a slot up to wait (never when negative) in a line of at
// most max calls; a call that finds the line full or waits in vain is
// refused with RATE_LIMITED (gRPC RESOURCE_EXHAUSTED, HTTP 429 with
// Retry-After), reason "overloaded". A short burst therefore costs its
// calls a little latency rather than errors, while under a sustained
// overload the service keeps answering the calls it admits at normal
// latency, sheds the rest within wait, and recovers as soon as the load
// drops. It sits after observe, so shed calls are logged and counted, and
// before auth and audit, so refusing costs almost nothing.
func shed(max int, wait time.Duration) grpc.UnaryServerInterceptor {
	if max < 0 {
		return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
			return next(ctx, req)
		}
	}
	a := &admission{slots: make(chan struct{}, max), wait: wait}
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
		if a.acquire(ctx) {
			defer func() { <-a.slots }()
			return next(ctx, req)
		}
		e := toolerr.New(toolerr.RateLimited, "the service is overloaded (%d calls in flight): retry after %s", max, shedRetryAfter).
			WithDetails(map[string]any{"reason": "overloaded", "maxInFlight": max})
		e.RetryAfter = shedRetryAfter
		if c := callFrom(ctx); c != nil {
			c.Decision, c.Reason = "deny", "overloaded"
		}
		return nil, e
	}
}
