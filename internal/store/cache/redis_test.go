package cache

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestRedisKeyLayout(t *testing.T) {
	t.Parallel()
	r, client, prefix := newTestRedis(t)
	hostile := Key{Tenant: "t1\r\n*{x}*", Scope: "s", Tool: "tool", Version: "v1", Domain: "notes", Args: []byte("a")}
	mustSet(t, r, hostile, "v", time.Minute)
	if err := r.InvalidateDomain(context.Background(), hostile.Tenant, hostile.Domain); err != nil {
		t.Fatal(err)
	}

	keys, err := client.Keys(t.Context(), prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	layout := regexp.MustCompile("^" + regexp.QuoteMeta(prefix) + `\{[0-9a-f]{32}\}:(gen|[0-9a-f]{64})$`)
	if len(keys) != 2 {
		t.Fatalf("keys = %q, want the generation and the entry", keys)
	}
	slot := ""
	for _, k := range keys {
		if !layout.MatchString(k) {
			t.Errorf("Redis key %q does not follow prefix{domain}:gen|digest", k)
		}
		tag := k[len(prefix) : len(prefix)+34]
		if slot != "" && tag != slot {
			t.Errorf("keys %q are in different hash slots", keys)
		}
		slot = tag
	}
	ttl, err := client.PTTL(t.Context(), prefix+slot+":"+hostile.String()).Result()
	if err != nil || ttl <= 0 || ttl > time.Minute {
		t.Errorf("entry PTTL = %s, %v; want a positive expiry no longer than the TTL", ttl, err)
	}
}

func TestRedisSharedBetweenInstances(t *testing.T) {
	t.Parallel()
	first, _, prefix := newTestRedis(t)
	second := NewRedis(newRedisClient(t), WithPrefix(prefix), WithTimeout(5*time.Second))
	k := testKey("t1", "notes", "a")
	mustSet(t, first, k, "from first", time.Minute)
	mustHit(t, second, k, "from first")
	if err := second.InvalidateDomain(context.Background(), "t1", "notes"); err != nil {
		t.Fatal(err)
	}
	mustMiss(t, first, k)
}

func TestRedisFailuresAreBounded(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		client func(testing.TB) redis.UniversalClient
	}{
		{name: "connection refused", client: func(tb testing.TB) redis.UniversalClient { return unreachableClient(tb) }},
		{name: "server never answers", client: func(tb testing.TB) redis.UniversalClient { return blackHoleClient(tb) }},
	}
	ctx := context.Background()
	k := testKey("t1", "notes", "a")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := NewRedis(tt.client(t))
			errs := withinHangGuard(t, func() []error {
				_, _, getErr := r.Get(ctx, k)
				return []error{getErr, r.Set(ctx, k, []byte("v"), time.Minute), r.InvalidateDomain(ctx, "t1", "notes")}
			})
			for i, err := range errs {
				if err == nil {
					t.Errorf("call %d succeeded against an unusable Redis", i)
				}
			}
			if got := r.Stats().Errors; got != 3 {
				t.Errorf("Errors = %d, want 3", got)
			}
		})
	}
}
