package interceptors

import (
	"context"
	"errors"

	middleware "github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors"
	grpcauth "github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/auth"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/recovery"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/selector"
	"google.golang.org/grpc"

	"github.com/toolsvc/toolsvc/internal/rpc/inproc"
)

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
//
// Chain fills cfg's zero settings with their defaults (Config.SetDefaults)
// and refuses a Config whose settings Validate refuses or that lacks a
// required collaborator.
func Chain(cfg Config) (grpc.UnaryServerInterceptor, error) {
	cfg.SetDefaults()
	if err := errors.Join(cfg.Validate(), cfg.checkWiring()); err != nil {
		return nil, err
	}
	return assemble(cfg, steps(cfg)), nil
}

// step is one named step of the chain; the names let the benchmarks
// measure a step by its absence.
type step struct {
	name string
	step grpc.UnaryServerInterceptor
}

// steps are the chain's steps below the boundary, in order, for a cfg
// with its defaults set.
func steps(cfg Config) []step {
	return []step{
		{"resolve", resolve(cfg.Registry)},
		{"observe", observe(cfg.Logger, cfg.Metrics, cfg.Tracer)},
		{"shed", shed(cfg.MaxInFlight, cfg.ShedWait)},
		{"audit", audit(cfg.Auditor, cfg.Metrics, cfg.Logger)},
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
}

// assemble wraps named in the outer steps every call passes: the gRPC
// listener's metrics, the boundary, recovery, and the selector that lets
// health checks skip named.
func assemble(cfg Config, named []step) grpc.UnaryServerInterceptor {
	steps := make([]grpc.UnaryServerInterceptor, len(named))
	for i, n := range named {
		steps[i] = n.step
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
		if c := callFrom(ctx); c != nil {
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
