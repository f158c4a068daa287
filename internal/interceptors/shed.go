package interceptors

import (
	"context"
	"time"

	"google.golang.org/grpc"

	"github.com/toolsvc/toolsvc/internal/toolerr"
)

// DefaultMaxInFlight bounds concurrent tool calls when Config.MaxInFlight
// is zero. The soak run (docs/RELIABILITY.md) showed a 2-core replica
// finishing about 570 calls within the 2 s fast deadline, so 256 in flight
// keeps admitted calls inside their deadline while an overload is shed at
// once instead of timing out; raise it with --max-in-flight on larger
// machines.
const DefaultMaxInFlight = 256

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
