package redisfleet

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/redis/go-redis/v9"
)

// Sessions is a registry of MCP sessions in Redis, shared by the replicas
// of a fleet. A session is a hash at <prefix>mcp:session:<id> (its owner
// and what the bridge keeps per session), expiring after the idle time
// unless touched; each owner's sessions are a sorted set at
// <prefix>mcp:owner:<sha256(owner)>, scored by last use, which bounds how
// many one owner holds.
type Sessions struct {
	client  redis.UniversalClient
	prefix  string
	timeout time.Duration
}

// NewSessions returns the registry under key prefix (e.g. "toolsvc:"),
// each call bounded by timeout.
func NewSessions(client redis.UniversalClient, prefix string, timeout time.Duration) *Sessions {
	return &Sessions{client: client, prefix: prefix, timeout: timeout}
}

func (s *Sessions) key(id string) string { return s.prefix + "mcp:session:" + id }

func (s *Sessions) ownerKey(owner string) string {
	h := sha256.Sum256([]byte(owner))
	return s.prefix + "mcp:owner:" + hex.EncodeToString(h[:16])
}

// FieldOwner is the hash field of a session's owner.
const FieldOwner = "owner"

// createScript admits a session and evicts its owner's least recently
// used ones beyond the bound in one step, so that no other replica's
// admission or eviction comes between the count and the eviction; the
// session admitted is never among those evicted. KEYS: the session, the
// owner's set. ARGV: now and idle (ms), the bound, the id, the prefix of
// session keys, then the session's field-value pairs.
var createScript = redis.NewScript(`local now, idle, per = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local id, base = ARGV[4], ARGV[5]
redis.call('HSET', KEYS[1], unpack(ARGV, 6))
redis.call('PEXPIRE', KEYS[1], idle)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. (now - idle))
redis.call('ZADD', KEYS[2], now, id)
redis.call('PEXPIRE', KEYS[2], idle)
local over = redis.call('ZCARD', KEYS[2]) - per
local ended = {}
if over > 0 then
	for _, e in ipairs(redis.call('ZRANGE', KEYS[2], 0, over)) do
		if #ended == over then break end
		if e ~= id then
			ended[#ended + 1] = e
			redis.call('DEL', base .. e)
			redis.call('ZREM', KEYS[2], e)
		end
	end
end
return ended`)

// Create records session id of owner with fields, alive for idle unless
// touched. When owner then holds more than perOwner sessions, the least
// recently used ones (never id) are deleted in the same step and returned
// (the caller tells the fleet they ended).
func (s *Sessions) Create(ctx context.Context, id, owner string, fields map[string]string, idle time.Duration, perOwner int) (ended []string, err error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	args := make([]any, 0, 2*len(fields)+7)
	args = append(args, time.Now().UnixMilli(), idle.Milliseconds(), perOwner, id, s.key(""), FieldOwner, owner)
	for k, v := range fields {
		args = append(args, k, v)
	}
	return createScript.Run(ctx, s.client, []string{s.key(id), s.ownerKey(owner)}, args...).StringSlice()
}

// Load returns session id's fields; nil when there is no such session.
func (s *Sessions) Load(ctx context.Context, id string) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	m, err := s.client.HGetAll(ctx, s.key(id)).Result()
	if err != nil || len(m) == 0 {
		return nil, err
	}
	return m, nil
}

// updateScript sets fields of a session that still exists: HSET alone
// would recreate an expired session without its expiry.
var updateScript = redis.NewScript(`if redis.call('EXISTS', KEYS[1]) == 1 then
	redis.call('HSET', KEYS[1], unpack(ARGV))
	return 1
end
return 0`)

// Update sets fields of session id; false when it has ended.
func (s *Sessions) Update(ctx context.Context, id string, fields map[string]string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	args := make([]any, 0, 2*len(fields))
	for k, v := range fields {
		args = append(args, k, v)
	}
	n, err := updateScript.Run(ctx, s.client, []string{s.key(id)}, args...).Int()
	return n == 1, err
}

// Touch keeps session id of owner alive for another idle period, marks it
// used now and returns its fields (one round trip); nil when it has ended
// (deleted, expired or evicted).
func (s *Sessions) Touch(ctx context.Context, id, owner string, idle time.Duration) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	var (
		alive  *redis.BoolCmd
		fields *redis.MapStringStringCmd
	)
	_, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		alive = p.PExpire(ctx, s.key(id), idle)
		fields = p.HGetAll(ctx, s.key(id))
		// XX: an evicted session is not brought back into the set.
		p.ZAddXX(ctx, s.ownerKey(owner), redis.Z{Score: float64(time.Now().UnixMilli()), Member: id})
		p.PExpire(ctx, s.ownerKey(owner), idle)
		return nil
	})
	if err != nil || !alive.Val() || len(fields.Val()) == 0 {
		return nil, err
	}
	return fields.Val(), nil
}

// Delete ends session id of owner.
func (s *Sessions) Delete(ctx context.Context, id, owner string) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	_, err := s.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, s.key(id))
		p.ZRem(ctx, s.ownerKey(owner), id)
		return nil
	})
	return err
}
