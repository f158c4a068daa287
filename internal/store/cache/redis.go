package cache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/toolsvc/toolsvc/internal/store/redisfleet"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// setScript stores a value tagged with the current generation of its domain, atomically with reading that
// generation. KEYS are the generation counter and the entry; ARGV are the generation the caller requires ("" for
// any), the value and the TTL in milliseconds. It returns 1 when it stored the value.
var setScript = redis.NewScript(`
local gen = redis.call('GET', KEYS[1]) or '0'
if ARGV[1] ~= '' and ARGV[1] ~= gen then return 0 end
redis.call('SET', KEYS[2], gen .. ':' .. ARGV[2], 'PX', ARGV[3])
return 1
`)

// Redis is a Cache in Redis, shared by every replica using the same Redis and prefix. A (tenant, domain) has a
// counter key, bumped with INCR by InvalidateDomain, and each entry is stored as "generation:value" with a PX
// expiry. Both live in one hash slot ({domain id} hash tag), so a lookup is one MGET and a store one
// EVALSHA whose keys are all declared, which keeps it correct on Redis Cluster. Every call is bounded by the
// WithTimeout deadline.
//
// Generation counters have no expiry: one small key per (tenant, domain) ever invalidated. Letting one expire
// would restart it at 0 and could revive entries written under an earlier 0.
type Redis struct {
	client  redis.UniversalClient
	prefix  string
	timeout time.Duration
	direct  bool
	stats   counters
}

var _ Generational = (*Redis)(nil)

// NewRedis returns a cache on client. Options: WithPrefix, WithTimeout. Build the client with
// ContextTimeoutEnabled so that a timed-out call is also aborted on the socket; without it each call still
// returns within the timeout but lingers in a goroutine until the client's ReadTimeout.
func NewRedis(client redis.UniversalClient, opts ...Option) *Redis {
	o := newOptions(opts)
	return &Redis{
		client:  client,
		prefix:  o.prefix,
		timeout: o.timeout,
		direct:  redisfleet.HonoursContext(client),
	}
}

// Get implements Cache.
func (r *Redis) Get(ctx context.Context, k Key) ([]byte, bool, error) {
	val, _, ok, err := r.Lookup(ctx, k)
	return val, ok, err
}

// Lookup implements Generational.
func (r *Redis) Lookup(ctx context.Context, k Key) ([]byte, uint64, bool, error) {
	genKey, entryKey := r.keys(k)
	res, err := redisfleet.Bounded(ctx, r.timeout, r.direct, func(ctx context.Context) ([]any, error) {
		return r.client.MGet(ctx, genKey, entryKey).Result()
	})
	if err != nil {
		return nil, 0, false, r.fail(err)
	}
	gen, err := parseGen(res[0])
	if err != nil {
		return nil, 0, false, r.fail(err)
	}
	raw, ok := res[1].(string)
	if !ok { // nil: no entry
		r.stats.lookup(false)
		return nil, gen, false, nil
	}
	head, val, found := bytes.Cut([]byte(raw), []byte{':'})
	if !found {
		return nil, 0, false, r.fail(fmt.Errorf("entry %s is not generation:value", entryKey))
	}
	entryGen, err := strconv.ParseUint(string(head), 10, 64)
	if err != nil {
		return nil, 0, false, r.fail(fmt.Errorf("entry %s: generation: %w", entryKey, err))
	}
	if entryGen != gen { // written before an InvalidateDomain; it will expire
		r.stats.lookup(false)
		return nil, gen, false, nil
	}
	r.stats.lookup(true)
	return val, gen, true, nil
}

// Set implements Cache.
func (r *Redis) Set(ctx context.Context, k Key, val []byte, ttl time.Duration) error {
	_, err := r.set(ctx, k, "", val, ttl)
	return err
}

// SetIfGeneration implements Generational.
func (r *Redis) SetIfGeneration(ctx context.Context, k Key, gen uint64, val []byte, ttl time.Duration) (bool, error) {
	return r.set(ctx, k, strconv.FormatUint(gen, 10), val, ttl)
}

func (r *Redis) set(ctx context.Context, k Key, gen string, val []byte, ttl time.Duration) (bool, error) {
	if err := validateTTL(ttl); err != nil {
		return false, err
	}
	ms := max(ttl.Milliseconds(), 1)
	genKey, entryKey := r.keys(k)
	stored, err := redisfleet.Bounded(ctx, r.timeout, r.direct, func(ctx context.Context) (int64, error) {
		return setScript.Run(ctx, r.client, []string{genKey, entryKey}, gen, val, ms).Int64()
	})
	if err != nil {
		return false, r.fail(err)
	}
	return stored == 1, nil
}

// InvalidateDomain implements Cache.
func (r *Redis) InvalidateDomain(ctx context.Context, tenant, domain string) error {
	genKey := r.genKey(domainID(tenant, domain))
	_, err := redisfleet.Bounded(ctx, r.timeout, r.direct, func(ctx context.Context) (int64, error) {
		return r.client.Incr(ctx, genKey).Result()
	})
	if err != nil {
		return r.fail(err)
	}
	r.stats.invalidations.Add(1)
	return nil
}

// Stats returns a snapshot of the counters.
func (r *Redis) Stats() Stats { return r.stats.snapshot() }

// Close implements Cache. The client belongs to the caller and stays open.
func (r *Redis) Close() error { return nil }

func (r *Redis) fail(err error) error {
	r.stats.errors.Add(1)
	return fmt.Errorf("cache: redis: %w", err)
}

func (r *Redis) keys(k Key) (genKey, entryKey string) {
	id := domainID(k.Tenant, k.Domain)
	return r.genKey(id), r.prefix + "{" + id + "}:" + k.String()
}

func (r *Redis) genKey(id string) string { return r.prefix + "{" + id + "}:gen" }

func parseGen(v any) (uint64, error) {
	switch v := v.(type) {
	case nil:
		return 0, nil
	case string:
		gen, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("generation %q: %w", v, err)
		}
		return gen, nil
	default:
		return 0, errors.New("generation: unexpected reply type")
	}
}
