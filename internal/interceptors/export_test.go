package interceptors

import (
	"context"
	"log/slog"
	"slices"
	"time"

	"buf.build/go/protovalidate"
	grpcauth "github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/auth"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/contract/wire"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/auditlog"
	"github.com/toolsvc/toolsvc/internal/store/cache"
	"github.com/toolsvc/toolsvc/internal/store/ratelimit"
)

// ChainWithout is Chain without the named steps (the names of Chain's
// steps: observe, shed, audit, auth, policy, auditGate, rateLimit,
// deadline, validate, result, idempotent, cache, ran), for the benchmark
// that measures what each step costs by its absence.
func ChainWithout(cfg Config, names ...string) grpc.UnaryServerInterceptor {
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	var kept []step
	for _, s := range steps(cfg) {
		if !slices.Contains(names, s.name) {
			kept = append(kept, s)
		}
	}
	return assemble(cfg, kept)
}

// The steps of Chain, for tests that call one step alone with a fake
// handler.

func PolicyStep(now func() time.Time) grpc.UnaryServerInterceptor { return policy(now) }
func DeadlineStep(d Deadlines) grpc.UnaryServerInterceptor        { return deadline(d) }
func RateLimitStep(l ratelimit.Limiter, ceiling ratelimit.Limit, m *Metrics) grpc.UnaryServerInterceptor {
	return rateLimit(l, ceiling, m)
}
func ValidateStep(v protovalidate.Validator, maxDepth int) grpc.UnaryServerInterceptor {
	return validateInput(v, maxDepth)
}
func ResultStep(v protovalidate.Validator, version string, logger *slog.Logger) grpc.UnaryServerInterceptor {
	return result(v, version, logger)
}
func CacheStep(c cache.Cache, g *cache.Group, m *Metrics, logger *slog.Logger) grpc.UnaryServerInterceptor {
	return cacheResults(c, g, m, logger)
}
func ResolveStep(s registry.Snapshots) grpc.UnaryServerInterceptor { return resolve(s) }
func BoundaryStep(version string) grpc.UnaryServerInterceptor {
	return boundary(version, wire.MetadataHeaders{})
}
func RanStep() grpc.UnaryServerInterceptor { return ran() }

// RecoverPanic is recovery's handler of Chain.
var RecoverPanic = recoverPanic

// Call is the chain's state of one call, for tests that call one step
// alone.
type Call = call

// CallFrom returns the call of ctx.
func CallFrom(ctx context.Context) *Call { return callFrom(ctx) }

// WithCall puts c in ctx as the boundary does.
func WithCall(ctx context.Context, c *Call) context.Context { return withCall(ctx, c) }

// Pending is the error resolve left for policy.
func Pending(c *Call) error { return c.pending }

// SetPending sets the error policy returns once the caller is known.
func SetPending(c *Call, err error) { c.pending = err }

func ObserveStep(logger *slog.Logger, m *Metrics) grpc.UnaryServerInterceptor {
	return observe(logger, m, nil)
}

func AuditStep(a *auditlog.Writer, m *Metrics) grpc.UnaryServerInterceptor {
	return audit(a, m, slog.New(slog.DiscardHandler))
}

func IdempotentStep(st store.IdempotencyStore, ttl time.Duration) grpc.UnaryServerInterceptor {
	return idempotent(st, ttl, DefaultIdempotencyLease, DefaultDeadlines, slog.New(slog.DiscardHandler))
}

// SetMetadata gives c the incoming metadata the boundary copies.
func SetMetadata(c *Call, md metadata.MD) { c.md = md }

// AuthStep is the chain's AuthFunc as an interceptor, as go-grpc-middleware
// auth runs it.
func AuthStep(a *auth.Authenticator, reg prometheus.Registerer) grpc.UnaryServerInterceptor {
	return grpcauth.UnaryServerInterceptor(authenticate(a, NewAuthFailures(reg, slog.New(slog.DiscardHandler))))
}
