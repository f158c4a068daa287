package interceptors

import (
	"context"
	"runtime"
	"time"

	"google.golang.org/grpc"

	"github.com/toolsvc/toolsvc/internal/toolerr"
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

// shedRetryAfter is the wait an overloaded caller is told to observe.
const shedRetryAfter = time.Second

// shed admits at most max calls at once (DefaultMaxInFlight when max is 0;
// a negative max disables it). A call beyond the limit is refused at once
// with RATE_LIMITED (gRPC RESOURCE_EXHAUSTED, HTTP 429 with Retry-After),
// reason "overloaded", rather than queued: under overload the service keeps
// answering the calls it admits at normal latency and recovers as soon as
// the load drops. It sits after observe, so shed calls are logged and
// counted, and before auth and audit, so refusing costs almost nothing.
func shed(max int) grpc.UnaryServerInterceptor {
	if max < 0 {
		return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
			return next(ctx, req)
		}
	}
	if max == 0 {
		max = DefaultMaxInFlight
	}
	slots := make(chan struct{}, max)
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
		select {
		case slots <- struct{}{}:
			defer func() { <-slots }()
			return next(ctx, req)
		default:
			e := toolerr.New(toolerr.RateLimited, "the service is overloaded (%d calls in flight): retry after %s", max, shedRetryAfter).
				WithDetails(map[string]any{"reason": "overloaded", "maxInFlight": max})
			e.RetryAfter = shedRetryAfter
			if c := CallFrom(ctx); c != nil {
				c.Decision, c.Reason = "deny", "overloaded"
			}
			return nil, e
		}
	}
}
