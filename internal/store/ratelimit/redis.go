package ratelimit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"github.com/toolsvc/toolsvc/internal/store/redisfleet"
	"math/rand/v2"
	"time"

	"github.com/redis/go-redis/v9"
)

// allowScript is the sliding-window log of one key as a sorted set of admission times in microseconds. It runs
// atomically, and reads the time from the Redis server, so callers on many hosts with skewed clocks agree.
//
// KEYS[1] is the set; ARGV is max, window (µs) and a random member suffix (two calls in the same microsecond
// must not collapse into one member). It returns {allowed, remaining, retryAfter (µs)}.
var allowScript = redis.NewScript(`
local max = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local n = redis.call('ZCARD', KEYS[1])
if n > max then
  -- The limit was lowered: only the newest max admissions can matter.
  redis.call('ZREMRANGEBYRANK', KEYS[1], 0, n - max - 1)
  n = max
end
if n < max then
  redis.call('ZADD', KEYS[1], now, string.format('%.0f', now) .. '-' .. ARGV[3])
  redis.call('PEXPIRE', KEYS[1], math.ceil(window / 1000))
  return {1, max - n - 1, 0}
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return {0, 0, tonumber(oldest[2]) + window - now}
`)

// Redis is a sliding-window-log Limiter kept in Redis, shared by every replica using the same Redis and
// prefix: N per window admits exactly N across all of them. Each Allow is one EVALSHA (EVAL when the script
// is not yet loaded) bounded by the WithTimeout deadline. Wrap it with WithFallback to decide what a Redis
// failure means.
type Redis struct {
	client  redis.UniversalClient
	prefix  string
	timeout time.Duration
	direct  bool
	stats   counters
}

var _ Limiter = (*Redis)(nil)

// NewRedis returns a limiter on client. Options: WithPrefix, WithTimeout. Build the client with
// ContextTimeoutEnabled so that a timed-out call is also aborted on the socket; without it each Allow still
// returns within the timeout but the call lingers in a goroutine until the client's ReadTimeout. Redis 5 or
// later is required: the script reads TIME before writing, which needs effects replication.
func NewRedis(client redis.UniversalClient, opts ...Option) *Redis {
	o := newOptions(opts)
	return &Redis{
		client:  client,
		prefix:  o.prefix,
		timeout: o.timeout,
		direct:  redisfleet.HonoursContext(client),
	}
}

// Allow implements Limiter.
func (r *Redis) Allow(ctx context.Context, key string, l Limit) (Decision, error) {
	if err := l.Validate(); err != nil {
		return Decision{}, err
	}
	window := max(l.Window.Microseconds(), 1)
	res, err := redisfleet.Bounded(ctx, r.timeout, r.direct, func(ctx context.Context) ([]int64, error) {
		return allowScript.Run(ctx, r.client, []string{r.key(key)}, l.Max, window, rand.Uint64()).Int64Slice()
	})
	if err != nil {
		r.stats.backendErrors.Add(1)
		return Decision{}, fmt.Errorf("ratelimit: redis: %w", err)
	}
	if len(res) != 3 {
		r.stats.backendErrors.Add(1)
		return Decision{}, fmt.Errorf("ratelimit: redis: unexpected reply of %d values", len(res))
	}
	d := Decision{
		Allowed:    res[0] == 1,
		Remaining:  int(res[1]),
		RetryAfter: time.Duration(res[2]) * time.Microsecond,
	}
	r.stats.record(d)
	return d, nil
}

// Stats returns a snapshot of the counters.
func (r *Redis) Stats() Stats { return r.stats.snapshot() }

// Close implements Limiter. The client belongs to the caller and stays open.
func (r *Redis) Close() error { return nil }

// key maps a caller's key to a Redis key. Hashing keeps user input (tenant names, tool names, principals) out
// of the Redis key space and gives every key the same short length.
func (r *Redis) key(key string) string {
	sum := sha256.Sum256([]byte(key))
	return r.prefix + hex.EncodeToString(sum[:])
}
