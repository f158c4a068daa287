package interceptors

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"buf.build/go/protovalidate"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"

	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/cache"
	"github.com/toolsvc/toolsvc/internal/ratelimit"
	"github.com/toolsvc/toolsvc/internal/registry"
)

// Config is what the chain needs. Registry, Auth, Limiter, Cache, Group,
// Auditor, Validator, Metrics and Logger are required.
type Config struct {
	Registry  *registry.Registry
	Auth      *auth.Authenticator
	Limiter   ratelimit.Limiter
	Ceiling   ratelimit.Limit // per-principal limit over all tools; zero Max disables it
	Cache     cache.Cache
	Group     *cache.Group
	Auditor   *Auditor
	Validator protovalidate.Validator
	Metrics   *Metrics
	Tracer    trace.Tracer // nil disables spans
	Logger    *slog.Logger
	Deadlines Deadlines
	// ServiceVersion is reported in every result's metadata.
	ServiceVersion string
	// Now is the clock for deprecation; default time.Now.
	Now func() time.Time
	// MaxInFlight bounds concurrent tool calls; beyond it calls are shed
	// with RATE_LIMITED. 0 means DefaultMaxInFlight, negative disables.
	MaxInFlight int
	// ShedWait is how long a call beyond MaxInFlight waits for a slot
	// before it is shed. 0 means DefaultShedWait, negative sheds at once.
	ShedWait time.Duration
	// MaxJSONDepth bounds the nesting of free-form JSON arguments; 0 means
	// DefaultMaxJSONDepth.
	MaxJSONDepth int
}

// Chain returns the one unary interceptor every call passes, built from the
// steps below in this order, each for a reason:
//
//  1. boundary — outermost, so a panic anywhere is caught and every error,
//     whatever step raised it, is mapped to a status with a ToolError once.
//  2. resolve — finds the tool and typed request (CallTool's JSON decoded)
//     and the ToolContext, which everything after needs.
//  3. observe — logs, metrics and the span, outside auth so that denials
//     are observed too; then shed, which refuses calls beyond MaxInFlight
//     that find no slot within ShedWait (RATE_LIMITED, reason overloaded)
//     before any costly step.
//  4. audit — sees the final decision and code of every tool call.
//  5. auth — identity from credentials only.
//  6. policy — tenant, permissions (invisible tools are NOT_FOUND),
//     read-only principals, removed tools; then resolve's pending errors.
//  7. rate limit — after policy, so denied callers do not spend budget and
//     budgets are per authenticated principal.
//  8. deadline — bounds the work that follows by the tool's class.
//  9. validate — protovalidate on the input, only for callers let through.
//  10. result — post-execution contract check and metadata, around the
//     cache so cached results get fresh metadata (cached: true).
//  11. cache — innermost, so it stores exactly what the handler produced.
//
// Health checks skip every step but the boundary.
func Chain(cfg Config) grpc.UnaryServerInterceptor {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxJSONDepth <= 0 {
		cfg.MaxJSONDepth = DefaultMaxJSONDepth
	}
	if cfg.Deadlines == (Deadlines{}) {
		cfg.Deadlines = DefaultDeadlines
	}
	steps := []grpc.UnaryServerInterceptor{
		resolve(cfg.Registry),
		observe(cfg.Logger, cfg.Metrics, cfg.Tracer),
		shed(cfg.MaxInFlight, cfg.ShedWait),
		audit(cfg.Auditor),
		authenticate(cfg.Auth),
		policy(cfg.Now),
		rateLimit(cfg.Limiter, cfg.Ceiling, cfg.Metrics),
		deadline(cfg.Deadlines),
		validateInput(cfg.Validator, cfg.MaxJSONDepth),
		result(cfg.Validator, cfg.ServiceVersion, cfg.Logger),
		cacheResults(cfg.Cache, cfg.Group, cfg.Metrics, cfg.Logger),
	}
	inner := chain(steps)
	outer := boundary(cfg.Logger, cfg.Metrics)
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if strings.HasPrefix(info.FullMethod, "/grpc.health.v1.Health/") {
			return outer(ctx, req, info, handler)
		}
		return outer(ctx, req, info, func(ctx context.Context, req any) (any, error) {
			return inner(ctx, req, info, handler)
		})
	}
}

// chain composes interceptors so that steps[0] runs first.
func chain(steps []grpc.UnaryServerInterceptor) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		var call func(i int, ctx context.Context, req any) (any, error)
		call = func(i int, ctx context.Context, req any) (any, error) {
			if i == len(steps) {
				return handler(ctx, req)
			}
			return steps[i](ctx, req, info, func(ctx context.Context, req any) (any, error) { return call(i+1, ctx, req) })
		}
		return call(0, ctx, req)
	}
}
