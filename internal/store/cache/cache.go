package cache

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// Cache stores tool results. Implementations are safe for concurrent use.
type Cache interface {
	// Get returns the value stored for k, and whether there was one. An entry written before the last
	// InvalidateDomain of k's tenant and domain is not returned.
	Get(ctx context.Context, k Key) ([]byte, bool, error)
	// Set stores val for k for ttl, which must be positive (else the error wraps ErrInvalidTTL).
	Set(ctx context.Context, k Key, val []byte, ttl time.Duration) error
	// InvalidateDomain makes every entry of tenant and domain unreachable, in O(1).
	InvalidateDomain(ctx context.Context, tenant, domain string) error
	// Close releases resources owned by the cache. It does not close a Redis client passed in.
	Close() error
}

// Generational is a Cache whose invalidation works by generations, as Memory and Redis do. Group uses it to
// close a race a plain Cache leaves open: a load that started before an InvalidateDomain would otherwise store
// its now-stale result after it, and serve it for a whole TTL.
type Generational interface {
	Cache
	// Lookup is Get that also returns the generation of k's tenant and domain it observed, for
	// SetIfGeneration. It returns the generation on a miss too.
	Lookup(ctx context.Context, k Key) (val []byte, gen uint64, ok bool, err error)
	// SetIfGeneration is Set that stores val only if the generation of k's tenant and domain is still gen,
	// and reports whether it did.
	SetIfGeneration(ctx context.Context, k Key, gen uint64, val []byte, ttl time.Duration) (stored bool, err error)
}

// ErrInvalidTTL is wrapped by the error of a Set with a TTL that is not positive: a cacheable tool must have a
// cacheTTL > 0 (docs/CONTRACTS.md), so this is a contract bug, not a cache failure.
var ErrInvalidTTL = errors.New("cache: ttl must be positive")

func validateTTL(ttl time.Duration) error {
	if ttl <= 0 {
		return fmt.Errorf("%w: got %s", ErrInvalidTTL, ttl)
	}
	return nil
}

// Stats is a snapshot of counters, for export as metrics. Caches fill Hits, Misses, Errors and Invalidations
// (Memory also Evictions); a Group fills Hits, Misses, Shared and Errors as its callers saw them.
type Stats struct {
	// Hits counts lookups served from the cache.
	Hits uint64
	// Misses counts lookups that found nothing (including a stale generation or an expired entry).
	Misses uint64
	// Shared counts Group calls that missed and were served by another caller's in-flight load.
	Shared uint64
	// Errors counts failed backend calls. Group counts each one it degraded to a load.
	Errors uint64
	// Invalidations counts InvalidateDomain calls.
	Invalidations uint64
	// Evictions counts entries Memory dropped to stay within its byte budget (not expiries).
	Evictions uint64
}

type counters struct {
	hits, misses, shared, errors, invalidations, evictions atomic.Uint64
}

func (c *counters) lookup(ok bool) {
	if ok {
		c.hits.Add(1)
	} else {
		c.misses.Add(1)
	}
}

func (c *counters) snapshot() Stats {
	return Stats{
		Hits:          c.hits.Load(),
		Misses:        c.misses.Load(),
		Shared:        c.shared.Load(),
		Errors:        c.errors.Load(),
		Invalidations: c.invalidations.Load(),
		Evictions:     c.evictions.Load(),
	}
}
