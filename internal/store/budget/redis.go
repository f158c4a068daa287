package budget

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// spendScript checks and charges every counter in one atomic step. The
// window's start comes from the Redis server's clock (TIME), so replicas
// with skewed clocks agree on the window; Redis 5 or later is required
// (effects replication), as for the rate limiter.
//
// KEYS are the counters' names without the window; ARGV holds, per key,
// cost, limit and window (ms). It returns {0, used..., reset (ms)...}
// when every charge fitted (and were added), else {i, used of key i,
// reset (ms) of key i} for the first that did not.
var spendScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local names, resets = {}, {}
for i = 1, #KEYS do
  local cost = tonumber(ARGV[3*i-2])
  local limit = tonumber(ARGV[3*i-1])
  local window = tonumber(ARGV[3*i])
  local start = now - (now % window)
  names[i] = KEYS[i] .. ':' .. start
  resets[i] = start + window
  local used = tonumber(redis.call('GET', names[i]) or '0')
  if cost > 0 and used + cost > limit then
    return {i, used, resets[i]}
  end
end
local out = {0}
for i = 1, #KEYS do
  out[i+1] = redis.call('INCRBY', names[i], ARGV[3*i-2])
  redis.call('PEXPIREAT', names[i], resets[i] + 1000)
end
for i = 1, #KEYS do
  out[#KEYS+1+i] = resets[i]
end
return out
`)

// usedScript reads the counter of the current window.
var usedScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = tonumber(ARGV[1])
local start = now - (now % window)
return {tonumber(redis.call('GET', KEYS[1] .. ':' .. start) or '0'), start + window}
`)

// Redis is a Store shared by every replica using the same Redis and key
// prefix: a budget of N units per window admits exactly N across all of
// them. Each Spend is one EVALSHA bounded by the timeout.
type Redis struct {
	client  redis.UniversalClient
	prefix  string
	timeout time.Duration
}

var _ Store = (*Redis)(nil)

// NewRedis returns a Store on client whose keys start with prefix (the
// deployment's --redis-key-prefix) and then "budget:"; each Redis call is
// bounded by timeout (non-positive: 500 ms).
func NewRedis(client redis.UniversalClient, prefix string, timeout time.Duration) *Redis {
	if timeout <= 0 {
		timeout = 500 * time.Millisecond
	}
	return &Redis{client: client, prefix: prefix + "budget:", timeout: timeout}
}

// Spend implements Store.
func (r *Redis) Spend(ctx context.Context, charges []Charge) (Outcome, error) {
	out := Outcome{Refused: -1, Used: make([]int64, len(charges)), Resets: make([]time.Time, len(charges))}
	if len(charges) == 0 {
		out.Allowed = true
		return out, nil
	}
	keys := make([]string, len(charges))
	args := make([]any, 0, 3*len(charges))
	for i, c := range charges {
		keys[i] = r.prefix + c.Key
		args = append(args, c.Cost, c.Limit, max(c.Window.Milliseconds(), 1))
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	res, err := spendScript.Run(ctx, r.client, keys, args...).Int64Slice()
	if err != nil {
		return out, fmt.Errorf("budget: redis: %w", err)
	}
	if len(res) == 0 {
		return out, fmt.Errorf("budget: redis: empty answer")
	}
	if res[0] != 0 {
		i := int(res[0]) - 1
		if len(res) != 3 || i < 0 || i >= len(charges) {
			return out, fmt.Errorf("budget: redis: unexpected answer %v", res)
		}
		out.Refused, out.Used[i], out.Resets[i] = i, res[1], time.UnixMilli(res[2])
		return out, nil
	}
	if len(res) != 1+2*len(charges) {
		return out, fmt.Errorf("budget: redis: unexpected answer %v", res)
	}
	for i := range charges {
		out.Used[i], out.Resets[i] = res[1+i], time.UnixMilli(res[1+len(charges)+i])
	}
	out.Allowed = true
	return out, nil
}

// Used implements Store.
func (r *Redis) Used(ctx context.Context, key string, window time.Duration) (int64, time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	res, err := usedScript.Run(ctx, r.client, []string{r.prefix + key}, strconv.FormatInt(max(window.Milliseconds(), 1), 10)).Int64Slice()
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("budget: redis: %w", err)
	}
	if len(res) != 2 {
		return 0, time.Time{}, fmt.Errorf("budget: redis: unexpected answer %v", res)
	}
	return res[0], time.UnixMilli(res[1]), nil
}
