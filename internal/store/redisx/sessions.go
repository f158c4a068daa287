package redisx

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
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

// Create records session id of owner with fields, alive for idle unless
// touched. When owner then holds more than perOwner sessions, the least
// recently used ones are deleted and returned (the caller tells the
// fleet they ended).
func (s *Sessions) Create(ctx context.Context, id, owner string, fields map[string]string, idle time.Duration, perOwner int) (ended []string, err error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	now := time.Now()
	values := make([]any, 0, 2*len(fields)+2)
	values = append(values, FieldOwner, owner)
	for k, v := range fields {
		values = append(values, k, v)
	}
	ok := s.ownerKey(owner)
	var card *redis.IntCmd
	_, err = s.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, s.key(id), values...)
		p.PExpire(ctx, s.key(id), idle)
		p.ZAdd(ctx, ok, redis.Z{Score: float64(now.UnixMilli()), Member: id})
		// Sessions idle past their time have expired: they no longer count.
		p.ZRemRangeByScore(ctx, ok, "-inf", "("+strconv.FormatInt(now.Add(-idle).UnixMilli(), 10))
		p.PExpire(ctx, ok, idle)
		card = p.ZCard(ctx, ok)
		return nil
	})
	if err != nil {
		return nil, err
	}
	over := card.Val() - int64(perOwner)
	if over <= 0 {
		return nil, nil
	}
	ended, err = s.client.ZRange(ctx, ok, 0, over-1).Result()
	if err != nil {
		return nil, err
	}
	_, err = s.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for _, e := range ended {
			p.Del(ctx, s.key(e))
			p.ZRem(ctx, ok, e)
		}
		return nil
	})
	return ended, err
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
