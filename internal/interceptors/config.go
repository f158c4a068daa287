package interceptors

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"buf.build/go/protovalidate"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/contract/wire"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/auditlog"
	"github.com/toolsvc/toolsvc/internal/store/cache"
	"github.com/toolsvc/toolsvc/internal/store/ratelimit"
)

// Config is what the chain needs. Registry, Auth, Limiter, Cache, Group,
// Auditor, Validator, Metrics and Logger are required (Chain refuses a
// Config without them); every setting has a default that SetDefaults
// fills in, each stated on the field, and a range Validate checks.
type Config struct {
	// Registry gives the registry each call resolves its tool in: a fixed
	// *registry.Registry or a *registry.Live that changes at run time.
	Registry  registry.Snapshots
	Auth      *auth.Authenticator
	Limiter   ratelimit.Limiter
	Ceiling   ratelimit.Limit // per-principal limit over all tools; zero Max (the default) disables it
	Cache     cache.Cache
	Group     *cache.Group
	Auditor   *auditlog.Writer
	Validator protovalidate.Validator
	Metrics   *Metrics
	Tracer    trace.Tracer // nil disables spans
	Logger    *slog.Logger
	// Deadlines bound each call by its tool's class; the zero value means
	// DefaultDeadlines.
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
	// MaxJSONDepth bounds the nesting of free-form JSON arguments; 0
	// means DefaultMaxJSONDepth.
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
}

// SetDefaults fills the zero settings of c with their defaults; the
// chain's defaults are set here and nowhere else. It touches no wiring
// (the stores, the authenticator, the logger), so the server calls it on
// the settings it read before it wires anything.
func (c *Config) SetDefaults() {
	if c.Deadlines == (Deadlines{}) {
		c.Deadlines = DefaultDeadlines
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = DefaultMaxInFlight
	}
	if c.ShedWait == 0 {
		c.ShedWait = DefaultShedWait
	}
	if c.MaxJSONDepth == 0 {
		c.MaxJSONDepth = DefaultMaxJSONDepth
	}
	if c.IdempotencyTTL == 0 {
		c.IdempotencyTTL = DefaultIdempotencyTTL
	}
	if c.IdempotencyLease == 0 {
		c.IdempotencyLease = DefaultIdempotencyLease
	}
}

// Validate reports the settings of c that are out of range, each by its
// field and what is expected. The wiring is checked by Chain.
func (c *Config) Validate() error {
	var errs []error
	if c.MaxJSONDepth < 0 {
		errs = append(errs, fmt.Errorf("max JSON depth %d: want 0 (the default, %d) or more", c.MaxJSONDepth, DefaultMaxJSONDepth))
	}
	if c.IdempotencyTTL < 0 {
		errs = append(errs, fmt.Errorf("idempotency TTL %s: want 0 (the default, %s) or more", c.IdempotencyTTL, DefaultIdempotencyTTL))
	}
	if c.IdempotencyLease < 0 {
		errs = append(errs, fmt.Errorf("idempotency lease %s: want 0 (the default, %s) or more", c.IdempotencyLease, DefaultIdempotencyLease))
	}
	if c.MaxResultBytes < 0 {
		errs = append(errs, fmt.Errorf("max result bytes %d: want 0 (no global cap) or more", c.MaxResultBytes))
	}
	return errors.Join(errs...)
}

// checkWiring reports the first collaborator c lacks, by its name, and
// gives the optional ones their defaults: AuthFailures a counter of its
// own (not registered, logging to Logger), Now time.Now.
func (c *Config) checkWiring() error {
	required := []struct {
		name    string
		missing bool
	}{
		{"Registry", c.Registry == nil}, {"Auth", c.Auth == nil}, {"Limiter", c.Limiter == nil},
		{"Cache", c.Cache == nil}, {"Group", c.Group == nil}, {"Auditor", c.Auditor == nil},
		{"Validator", c.Validator == nil}, {"Metrics", c.Metrics == nil}, {"Logger", c.Logger == nil},
	}
	for _, r := range required {
		if r.missing {
			return fmt.Errorf("interceptors.Config.%s is required", r.name)
		}
	}
	if c.AuthFailures == nil {
		c.AuthFailures = NewAuthFailures(nil, c.Logger)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return nil
}
