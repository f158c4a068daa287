package upstream

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
)

// Bulkheads keep one upstream's trouble its own (docs/RELIABILITY.md,
// "Upstream bulkheads"): each upstream has a bound on its calls in flight,
// beyond which a call fails at once with RATE_LIMITED (never a wait that
// would hold a server goroutine and a slot of the global bound), and a
// circuit breaker that opens after consecutive failures or timeouts,
// answers at once with a retryable PROVIDER_ERROR naming the upstream
// while open, and lets one call through to probe once OpenFor has passed.

// DefaultMaxInFlight bounds the calls in flight to an upstream that sets
// no max_in_flight.
const DefaultMaxInFlight = 64

// Defaults of the circuit breaker.
const (
	DefaultCircuitFailures = 5
	DefaultCircuitOpenFor  = 10 * time.Second
)

// bulkheadRetryAfter is what a caller refused by a full bound is told to
// wait: a call in flight to the upstream finishes within its timeout, most
// much sooner.
const bulkheadRetryAfter = time.Second

// Circuit configures an upstream's circuit breaker.
type Circuit struct {
	// Failures is how many consecutive failed calls (timeouts, the upstream
	// unreachable or answering malformed) open the circuit. Default 5; -1
	// disables the breaker.
	Failures int `yaml:"failures"`
	// OpenFor is how long the circuit stays open before one call probes
	// the upstream. Default 10s.
	OpenFor time.Duration `yaml:"open_for"`
}

func (s *Serving) completeBulkhead() []error {
	var errs []error
	switch {
	case s.MaxInFlight < 0:
		errs = append(errs, errors.New("max_in_flight must be positive"))
	case s.MaxInFlight == 0:
		s.MaxInFlight = DefaultMaxInFlight
	}
	switch {
	case s.Circuit.Failures < -1:
		errs = append(errs, errors.New("circuit.failures: want a count of consecutive failures, or -1 to disable the breaker"))
	case s.Circuit.Failures == 0:
		s.Circuit.Failures = DefaultCircuitFailures
	}
	switch {
	case s.Circuit.OpenFor < 0:
		errs = append(errs, errors.New("circuit.open_for must be positive"))
	case s.Circuit.OpenFor == 0:
		s.Circuit.OpenFor = DefaultCircuitOpenFor
	}
	return errs
}

// Circuit states.
const (
	CircuitClosed   = "closed"
	CircuitOpen     = "open"
	CircuitHalfOpen = "half_open"
)

// bulkhead is one upstream's bound and breaker.
type bulkhead struct {
	upstream string
	max      int64
	cfg      Circuit
	now      func() time.Time

	inFlight atomic.Int64
	// rejected counts calls refused by the bound, shortCircuited calls
	// answered by the open circuit, opened the times the circuit opened.
	rejected, shortCircuited, opened atomic.Uint64

	mu       sync.Mutex
	state    string
	failures int       // consecutive, while closed
	openedAt time.Time // while open or half-open
	probing  bool      // a half-open probe is in flight
}

func newBulkhead(cfg Config) *bulkhead {
	max := int64(cfg.MaxInFlight)
	if max <= 0 {
		max = DefaultMaxInFlight
	}
	c := cfg.Circuit
	if c.Failures == 0 {
		c.Failures = DefaultCircuitFailures
	}
	if c.OpenFor <= 0 {
		c.OpenFor = DefaultCircuitOpenFor
	}
	return &bulkhead{upstream: cfg.Name, max: max, cfg: c, now: time.Now, state: CircuitClosed}
}

// enter admits a call or refuses it at once. The admitted call reports
// its outcome with done.
func (b *bulkhead) enter() (done func(ctx context.Context, err error), _ error) {
	probe, err := b.admit()
	if err != nil {
		return nil, err
	}
	if b.inFlight.Add(1) > b.max {
		b.inFlight.Add(-1)
		b.rejected.Add(1)
		if probe {
			b.mu.Lock()
			b.probing = false
			b.mu.Unlock()
		}
		e := toolerr.New(toolerr.RateLimited, "upstream %s already has %d calls in flight, its bound: retry shortly", b.upstream, b.max).
			WithDetails(map[string]any{"upstream": b.upstream, "bulkhead": "max_in_flight"})
		e.RetryAfter = bulkheadRetryAfter
		return nil, e
	}
	return func(ctx context.Context, err error) {
		b.inFlight.Add(-1)
		if ctx.Err() != nil {
			// The caller's own deadline or cancellation: nothing learnt of
			// the upstream, the probe (if it was one) is owed again.
			b.mu.Lock()
			if probe {
				b.probing = false
			}
			b.mu.Unlock()
			return
		}
		b.record(probe, failed(err))
	}, nil
}

// admit asks the breaker: an open circuit refuses, a half-open one lets
// one probe through.
func (b *bulkhead) admit() (probe bool, _ error) {
	if b.cfg.Failures < 0 {
		return false, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == CircuitOpen && b.now().Sub(b.openedAt) >= b.cfg.OpenFor {
		b.state = CircuitHalfOpen
	}
	switch {
	case b.state == CircuitClosed:
		return false, nil
	case b.state == CircuitHalfOpen && !b.probing:
		b.probing = true
		return true, nil
	}
	b.shortCircuited.Add(1)
	wait := b.cfg.OpenFor - b.now().Sub(b.openedAt)
	if wait < time.Second {
		wait = time.Second
	}
	e := toolerr.New(toolerr.ProviderError, "upstream %s is failing: its circuit is open after %d consecutive failures; retry in %.0fs",
		b.upstream, b.cfg.Failures, math.Ceil(wait.Seconds())).
		WithDetails(map[string]any{"upstream": b.upstream, "circuit": b.state}).NoEffect()
	e.RetryAfter = wait.Round(time.Second)
	return false, e
}

// record moves the breaker on a call's outcome.
func (b *bulkhead) record(probe, failure bool) {
	if b.cfg.Failures < 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if probe {
		b.probing = false
	}
	switch {
	case !failure:
		if probe || b.state == CircuitClosed {
			b.state, b.failures = CircuitClosed, 0
		}
	case probe:
		b.state, b.openedAt = CircuitOpen, b.now()
		b.opened.Add(1)
	case b.state == CircuitClosed:
		b.failures++
		if b.failures >= b.cfg.Failures {
			b.state, b.openedAt, b.failures = CircuitOpen, b.now(), 0
			b.opened.Add(1)
		}
	}
}

// failed reports whether a call's error says the upstream is failing: a
// timeout of the upstream's own deadline, or PROVIDER_ERROR that is not
// final (unreachable, failed, malformed). Input the upstream rejected and
// a failure the tool reported are answers: the upstream is up.
func failed(err error) bool {
	if err == nil {
		return false
	}
	var te *toolerr.Error
	if !errors.As(err, &te) {
		return true
	}
	return te.Code == toolerr.Timeout || (te.Code == toolerr.ProviderError && !te.Final)
}

// guard runs one call to the upstream inside its bulkhead.
func (u *Upstream) guard(ctx context.Context, call func() (proto.Message, error)) (proto.Message, error) {
	if u.bulk == nil {
		return call()
	}
	done, err := u.bulk.enter()
	if err != nil {
		return nil, err
	}
	out, err := call()
	done(ctx, err)
	return out, err
}

// BulkheadState is an upstream's bulkhead on the operator view and in
// metrics.
type BulkheadState struct {
	MaxInFlight int64  `json:"max_in_flight"`
	InFlight    int64  `json:"in_flight"`
	Circuit     string `json:"circuit"`
	// Rejected counts calls refused by the bound, ShortCircuited calls
	// answered by the open circuit, Opened the times it opened.
	Rejected       uint64 `json:"rejected"`
	ShortCircuited uint64 `json:"short_circuited"`
	Opened         uint64 `json:"opened"`
}

func (b *bulkhead) snapshot() BulkheadState {
	b.mu.Lock()
	state := b.state
	if state == CircuitOpen && b.now().Sub(b.openedAt) >= b.cfg.OpenFor {
		state = CircuitHalfOpen
	}
	b.mu.Unlock()
	if b.cfg.Failures < 0 {
		state = "disabled"
	}
	return BulkheadState{MaxInFlight: b.max, InFlight: b.inFlight.Load(), Circuit: state,
		Rejected: b.rejected.Load(), ShortCircuited: b.shortCircuited.Load(), Opened: b.opened.Load()}
}

// Bulkheads returns every upstream's bulkhead by name, for metrics.
func (s *Set) Bulkheads() map[string]BulkheadState {
	out := make(map[string]BulkheadState, len(s.ups))
	for _, u := range s.ups {
		if u.bulk != nil {
			out[u.cfg.Name] = u.bulk.snapshot()
		}
	}
	return out
}

func (b BulkheadState) String() string {
	return fmt.Sprintf("%d/%d in flight, circuit %s", b.InFlight, b.MaxInFlight, b.Circuit)
}
