package cache

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// Loader computes a result on a cache miss. It reports whether the result may be cached: a tool that is not
// cacheable, or a result that must not outlive the call (a partial answer, say), returns false. Errors are
// never cached.
type Loader func(ctx context.Context) (val []byte, cacheable bool, err error)

// Result is the outcome of Group.DoResult.
type Result struct {
	// Val is the result. When Shared it is the caller's own copy.
	Val []byte
	// Hit reports that Val came from the cache.
	Hit bool
	// Shared reports a miss served by another caller's in-flight load: this caller ran no Loader but waited
	// for one. Shared results are never hits.
	Shared bool
}

// PanicError is the error of a Group call whose Loader panicked. Group recovers the panic because singleflight
// would otherwise re-raise it on a goroutine no recovery interceptor can see, taking down the process.
type PanicError struct {
	// Value is what the Loader panicked with.
	Value any
	// Stack is the Loader's goroutine stack at the panic.
	Stack []byte
}

// Error implements error.
func (e *PanicError) Error() string { return fmt.Sprintf("cache: loader panicked: %v", e.Value) }

// Group runs a Loader through a Cache: a hit is served from the cache, and concurrent identical misses run one
// Loader whose result they all receive (singleflight). It degrades rather than fails: a cache that errors or
// times out is treated as a miss, logged (throttled) and counted in Stats.Errors, and the call proceeds.
type Group struct {
	cache    Cache
	gens     Generational // cache, when it supports generations; else nil
	flight   singleflight.Group
	logger   *slog.Logger
	clock    func() time.Time
	every    time.Duration
	stats    counters
	joinHook func() // tests only: called once a caller is registered with its flight

	mu         sync.Mutex
	lastLog    time.Time
	suppressed int
}

// NewGroup returns a Group over c. Options: WithLogger, WithLogInterval, WithClock.
func NewGroup(c Cache, opts ...Option) *Group {
	o := newOptions(opts)
	g := &Group{cache: c, logger: o.logger, clock: o.clock, every: o.logInterval}
	g.gens, _ = c.(Generational)
	return g
}

// Do returns the cached result for k, or runs load and caches its result for ttl when load says it is
// cacheable. hit reports whether val came from the cache; see DoResult for whether it was shared.
func (g *Group) Do(ctx context.Context, k Key, ttl time.Duration, load Loader) (val []byte, hit bool, err error) {
	r, err := g.DoResult(ctx, k, ttl, load)
	return r.Val, r.Hit, err
}

// DoResult is Do reporting, in Result.Shared, whether the caller was served by another caller's load.
//
// The Loader runs with a context detached from the caller that started it — it keeps that caller's values
// and deadline but not its cancellation — so a caller that gives up does not fail the others waiting on the
// same load; each caller stops waiting when its own ctx is done. A ttl <= 0 is a contract bug and fails with
// ErrInvalidTTL before anything runs. The error is the Loader's (a *PanicError if it panicked) or ctx's.
func (g *Group) DoResult(ctx context.Context, k Key, ttl time.Duration, load Loader) (Result, error) {
	if err := validateTTL(ttl); err != nil {
		return Result{}, err
	}
	val, gen, ok, err := g.lookup(ctx, k)
	switch {
	case err != nil && ctx.Err() != nil:
		return Result{}, ctx.Err()
	case err != nil:
		g.degraded(ctx, "lookup", err)
	case ok:
		g.stats.hits.Add(1)
		return Result{Val: val, Hit: true}, nil
	}
	g.stats.misses.Add(1)

	// Callers that observed different generations must not share a load: one that looked up after an
	// InvalidateDomain would otherwise receive a result computed before it. When the lookup failed there is
	// no generation, and nothing is stored.
	store := err == nil
	flightKey := k.String() + "/?"
	if store {
		flightKey = k.String() + "/" + strconv.FormatUint(gen, 10)
	}
	led := false
	ch := g.flight.DoChan(flightKey, func() (any, error) {
		led = true
		return g.load(ctx, k, gen, store, ttl, load)
	})
	if g.joinHook != nil {
		g.joinHook()
	}

	select {
	case res := <-ch:
		if res.Err != nil {
			return Result{}, res.Err
		}
		val := res.Val.([]byte)
		if res.Shared { // several callers hold val now; each gets its own copy to keep
			val = append([]byte(nil), val...)
		}
		if !led { // written before res was sent, so reading it here is ordered
			g.stats.shared.Add(1)
		}
		return Result{Val: val, Shared: !led}, nil
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
}

// Stats returns a snapshot of the counters as the Group's callers saw them.
func (g *Group) Stats() Stats { return g.stats.snapshot() }

func (g *Group) lookup(ctx context.Context, k Key) ([]byte, uint64, bool, error) {
	if g.gens != nil {
		return g.gens.Lookup(ctx, k)
	}
	val, ok, err := g.cache.Get(ctx, k)
	return val, 0, ok, err
}

// load runs in the singleflight goroutine on behalf of every caller of the flight.
func (g *Group) load(leader context.Context, k Key, gen uint64, store bool, ttl time.Duration, load Loader) (any, error) {
	ctx, cancel := detach(leader)
	defer cancel()
	val, cacheable, err := safeLoad(ctx, load)
	if err != nil {
		return nil, err
	}
	if cacheable && store {
		if g.gens != nil {
			_, err = g.gens.SetIfGeneration(ctx, k, gen, val, ttl)
		} else {
			err = g.cache.Set(ctx, k, val, ttl)
		}
		if err != nil {
			g.degraded(ctx, "store", err)
		}
	}
	return val, nil
}

// detach returns a context with ctx's values and deadline but not its cancellation.
func detach(ctx context.Context) (context.Context, context.CancelFunc) {
	detached := context.WithoutCancel(ctx)
	if deadline, ok := ctx.Deadline(); ok {
		return context.WithDeadline(detached, deadline)
	}
	return context.WithCancel(detached)
}

func safeLoad(ctx context.Context, load Loader) (val []byte, cacheable bool, err error) {
	defer func() {
		if v := recover(); v != nil {
			val, cacheable, err = nil, false, &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return load(ctx)
}

// degraded counts a cache failure and logs it, at most once per interval.
func (g *Group) degraded(ctx context.Context, op string, err error) {
	g.stats.errors.Add(1)
	now := g.clock()
	g.mu.Lock()
	if !g.lastLog.IsZero() && now.Sub(g.lastLog) < g.every {
		g.suppressed++
		g.mu.Unlock()
		return
	}
	suppressed := g.suppressed
	g.lastLog, g.suppressed = now, 0
	g.mu.Unlock()

	g.logger.LogAttrs(ctx, slog.LevelWarn, "result cache failed; calling the tool uncached",
		slog.String("op", op),
		slog.Int("suppressed", suppressed),
		slog.Any("error", err))
}
