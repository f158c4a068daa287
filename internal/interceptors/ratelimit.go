package interceptors

import (
	"context"
	"time"

	"google.golang.org/grpc"

	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/store/ratelimit"
)

// rateLimit admits a call when both the tool's own rate_limit (per
// principal and tool) and the per-principal ceiling (over all tools) have
// room. A refused call is RATE_LIMITED with the time to wait, which gRPC
// carries as RetryInfo and REST as Retry-After.
func rateLimit(l ratelimit.Limiter, ceiling ratelimit.Limit, m *Metrics) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
		c := callFrom(ctx)
		if c.Tool == nil || c.Principal == nil {
			return next(ctx, req)
		}
		who := c.Principal.Tenant + "\x00" + c.Principal.Subject
		if rl := c.Tool.Spec.GetRateLimit(); rl != nil {
			lim := ratelimit.Limit{Max: int(rl.GetMaxCalls()), Window: time.Duration(rl.GetWindowMs()) * time.Millisecond}
			if err := admit(ctx, l, who+"\x00"+c.Tool.Name, lim, c, m); err != nil {
				return nil, err
			}
		}
		if ceiling.Max > 0 {
			if err := admit(ctx, l, who+"\x00*", ceiling, c, m); err != nil {
				return nil, err
			}
		}
		return next(ctx, req)
	}
}

func admit(ctx context.Context, l ratelimit.Limiter, key string, lim ratelimit.Limit, c *call, m *Metrics) error {
	d, err := l.Allow(ctx, key, lim)
	if err != nil {
		// The limiter (with its fallback policy) decided; an error here
		// means fail-closed refused the call.
		d.Allowed = false
		if d.RetryAfter <= 0 {
			d.RetryAfter = time.Second
		}
	}
	if d.Allowed {
		return nil
	}
	if d.Degraded {
		c.Decision, c.Reason = "deny", "rate limiter unavailable (fail closed)"
		e := toolerr.New(toolerr.ProviderError, "the rate limiter is unavailable and this service refuses calls it cannot count; retry shortly")
		e.RetryAfter = d.RetryAfter
		return e
	}
	m.limited.WithLabelValues(c.Tool.Name).Inc()
	c.Decision, c.Reason = "deny", "rate limited"
	e := toolerr.New(toolerr.RateLimited, "rate limit of %d calls per %s exceeded for %s; retry in %.1fs",
		lim.Max, lim.Window, c.Tool.Name, d.RetryAfter.Seconds())
	e.RetryAfter = d.RetryAfter
	return e.WithDetails(map[string]any{"maxCalls": lim.Max, "windowMs": lim.Window.Milliseconds()})
}
