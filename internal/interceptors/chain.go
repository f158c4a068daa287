package interceptors

import (
	"context"
	"log/slog"
	"slices"
	"time"

	"buf.build/go/protovalidate"
	middleware "github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors"
	grpcauth "github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/auth"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/recovery"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/selector"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"

	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/contract/wire"
	"github.com/toolsvc/toolsvc/internal/door/inproc"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/cache"
	"github.com/toolsvc/toolsvc/internal/store/ratelimit"
)

// Config is what the chain needs. Registry, Auth, Limiter, Cache, Group,
// Auditor, Validator, Metrics and Logger are required.
type Config struct {
	// Registry gives the registry each call resolves its tool in: a fixed
	// *registry.Registry or a *registry.Live that changes at run time.
	Registry  registry.Snapshots
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
	// MetadataHeaders are the request headers copied into every call's
	// ToolContext.metadata (the zero value: none).
	MetadataHeaders wire.MetadataHeaders
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
	// AuthFailures counts and logs failed authentications; nil: a
	// counter of its own, not registered, logging to Logger.
	AuthFailures *AuthFailures
	// Idempotency keeps the results of calls made with an idempotency key;
	// nil: keys are read (and reported in metadata) but not enforced.
	Idempotency store.IdempotencyStore
	// IdempotencyTTL is how long a keyed result is kept; 0 means
	// DefaultIdempotencyTTL.
	IdempotencyTTL time.Duration
	// IdempotencyLease is how long a keyed call's claim outlives its
	// owner's last renewal; 0 means DefaultIdempotencyLease.
	IdempotencyLease time.Duration

	// Budgets charges each call's declared cost to the budgets of the auth
	// file in force; nil: no budgets (docs/OPERATIONS.md "Budgets").
	Budgets *Budgets
	// MaxResultBytes bounds every result in bytes of its protobuf
	// encoding; 0: no global cap (per-tool caps still apply).
	MaxResultBytes int
	// ResultCaps gives a tool's own cap (per tool, per upstream); nil: none.
	ResultCaps ResultCapFunc

	// without names steps left out of the chain, for the benchmark that
	// measures what each step costs by its absence (BenchmarkChainSteps).
	without []string
}

// Chain returns the one unary interceptor every call passes, built from the
// steps below in this order, each for a reason:
//
//  0. grpc_server_* metrics — go-grpc-middleware's Prometheus provider,
//     outermost, so it counts every call of the gRPC listener (health
//     checks included) by the final gRPC code the boundary mapped, as
//     operators' dashboards expect. Calls of the in-process channel (REST
//     and MCP) are not gRPC server calls: the selector leaves them to the
//     toolsvc_* series, which carry the transport, and spares them the
//     provider's label lookups (about a tenth of an in-process call's CPU,
//     BenchmarkChain's profile in docs/BENCHMARKS.md).
//  1. boundary — starts the call and maps every error, whatever step raised
//     it, to a status with a ToolError once; inside it go-grpc-middleware's
//     recovery turns a panic anywhere below into INTERNAL (logged with its
//     stack, counted, never shown to the caller).
//  2. selector — go-grpc-middleware's selector: health checks skip every
//     step below.
//  3. resolve — finds the tool and typed request (CallTool's JSON decoded)
//     and the ToolContext, which everything after needs.
//  4. observe — logs, toolsvc_* metrics and the span, outside auth so that
//     denials are observed too; then shed, which refuses calls beyond
//     MaxInFlight that find no slot within ShedWait (RATE_LIMITED, reason
//     overloaded) before any costly step.
//  5. audit — sees the final decision and code of every tool call.
//  6. auth — go-grpc-middleware's auth interceptor with toolsvc's AuthFunc:
//     identity from credentials only.
//  7. policy — tenant, permissions (invisible tools are NOT_FOUND),
//     read-only principals, removed tools; then resolve's pending errors.
//     Then the audit gate, which refuses (retryable) a call that could not
//     be audited — the audit store failing under --audit-failure=closed,
//     or its queue full — before it can have any effect.
//  8. rate limit — after policy, so denied callers do not spend budget and
//     budgets are per authenticated principal; then the cost budgets of
//     the auth file, after the rate limit so that a call refused by it
//     spends no units.
//  9. deadline — bounds the work that follows by the tool's class.
//  10. validate — protovalidate on the input, only for callers let through.
//  11. result — post-execution contract check and metadata, around the
//     cache so cached results get fresh metadata (cached: true).
//     Just outside it, resultCap refuses a result over its size cap
//     (docs/OPERATIONS.md "Result caps"), metadata included.
//  12. idempotent — a repeat of a keyed call with side effects gets the
//     first call's result; inside result, so a replay gets fresh metadata
//     (replayed: true) and outside the handler, so the tool runs once.
//  13. cache — so it stores exactly what the handler produced.
//  14. ran — innermost: marks that the tool's handler was entered, so a
//     failure after it may have had an effect (retryable and the hints
//     of a non-idempotent tool depend on it).
//
// Where a step is toolsvc's own rather than go-grpc-middleware's, the
// library's version cannot keep the contract:
//   - logging (observe): the library's logging interceptor logs by gRPC
//     method and code; toolsvc's line is per tool (name, version,
//     transport, principal, tenant, trace and correlation ids, cached) with
//     its level from the ToolError code, facts that only exist once resolve
//     and the boundary's call have run, and it shares one time.Since and
//     one span with the metrics above it.
//   - rate limit: the library's ratelimit interceptor replaces the limiter's
//     error with a plain RESOURCE_EXHAUSTED status, losing the ToolError
//     (RATE_LIMITED, retryAfter, which limit) that agents act on and the
//     audit record's reason, and its Limiter sees no principal or tool.
//   - validate: the library's protovalidate interceptor validates the gRPC
//     request, but CallTool's request is JSON decoded into the tool's typed
//     request by resolve, and violations must become INVALID_INPUT with
//     field paths in a ToolError, on one validator built at start-up.
//   - policy, audit, deadline by tool class, result contract and cache are
//     toolsvc's contract (docs/CONTRACTS.md and the error model of docs/ARCHITECTURE.md);
//     the library has no such steps.
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
	if cfg.IdempotencyTTL <= 0 {
		cfg.IdempotencyTTL = DefaultIdempotencyTTL
	}
	if cfg.IdempotencyLease <= 0 {
		cfg.IdempotencyLease = DefaultIdempotencyLease
	}
	if cfg.AuthFailures == nil {
		cfg.AuthFailures = NewAuthFailures(nil, cfg.Logger)
	}
	named := []struct {
		name string
		step grpc.UnaryServerInterceptor
	}{
		{"resolve", resolve(cfg.Registry)},
		{"observe", observe(cfg.Logger, cfg.Metrics, cfg.Tracer)},
		{"shed", shed(cfg.MaxInFlight, cfg.ShedWait)},
		{"audit", audit(cfg.Auditor)},
		{"auth", grpcauth.UnaryServerInterceptor(authenticate(cfg.Auth, cfg.AuthFailures))},
		{"policy", policy(cfg.Now)},
		{"auditGate", auditGate(cfg.Auditor)},
		{"rateLimit", rateLimit(cfg.Limiter, cfg.Ceiling, cfg.Metrics)},
		{"budget", budgets(cfg.Budgets)},
		{"deadline", deadline(cfg.Deadlines)},
		{"validate", validateInput(cfg.Validator, cfg.MaxJSONDepth)},
		{"resultCap", resultCap(cfg.MaxResultBytes, cfg.ResultCaps)},
		{"result", result(cfg.Validator, cfg.ServiceVersion, cfg.Logger)},
		{"idempotent", idempotent(cfg.Idempotency, cfg.IdempotencyTTL, cfg.IdempotencyLease, cfg.Deadlines, cfg.Logger)},
		{"cache", cacheResults(cfg.Cache, cfg.Group, cfg.Metrics, cfg.Logger)},
		{"ran", ran()},
	}
	steps := make([]grpc.UnaryServerInterceptor, 0, len(named))
	for _, n := range named {
		if !slices.Contains(cfg.without, n.name) {
			steps = append(steps, n.step)
		}
	}
	return chain([]grpc.UnaryServerInterceptor{
		selector.UnaryServerInterceptor(cfg.Metrics.grpc.UnaryServerInterceptor(), selector.MatchFunc(onTheWire)),
		boundary(cfg.ServiceVersion, cfg.MetadataHeaders),
		recovery.UnaryServerInterceptor(recovery.WithRecoveryHandlerContext(recoverPanic(cfg.Logger, cfg.Metrics))),
		selector.UnaryServerInterceptor(chain(steps), selector.MatchFunc(notHealthCheck)),
	})
}

// ran marks the Call as having entered the tool's handler.
func ran() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
		if c := CallFrom(ctx); c != nil {
			c.ran.Store(true)
		}
		return next(ctx, req)
	}
}

// onTheWire selects the calls of the gRPC listener, not those of the
// in-process channel.
func onTheWire(ctx context.Context, _ middleware.CallMeta) bool { return !inproc.IsInproc(ctx) }

// notHealthCheck selects every call but those of the gRPC health service.
func notHealthCheck(_ context.Context, c middleware.CallMeta) bool {
	return c.Service != healthService
}

// healthService is grpc.health.v1's service name.
const healthService = "grpc.health.v1.Health"

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
