package ratelimit_test

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/toolsvc/toolsvc/internal/store/ratelimit"
)

// generousTimeout replaces the 50 ms production deadline where a test checks counting, not latency: under
// -race with 32 goroutines a healthy Redis can take longer than that.
const generousTimeout = 5 * time.Second

// TestRedisExactAcrossInstances runs two limiters on two separate clients — two replicas — that hammer one
// key concurrently, and checks that exactly Max calls are admitted between them.
func TestRedisExactAcrossInstances(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		max  int
	}{
		{name: "one", max: 1},
		{name: "five", max: 5},
		{name: "hundred", max: 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			first, second := newRedisClient(t), newRedisClient(t)
			prefix := testPrefix(t, first)
			instances := []*ratelimit.Redis{
				ratelimit.NewRedis(first, ratelimit.WithPrefix(prefix), ratelimit.WithTimeout(generousTimeout)),
				ratelimit.NewRedis(second, ratelimit.WithPrefix(prefix), ratelimit.WithTimeout(generousTimeout)),
			}
			l := ratelimit.Limit{Max: tt.max, Window: time.Hour}
			callsEach := max(tt.max/4, 4) // 2 × 16 × callsEach attempts: always well above Max

			var admitted atomic.Int64
			var wg sync.WaitGroup
			for _, inst := range instances {
				for range 16 {
					wg.Go(func() {
						for range callsEach {
							d, err := inst.Allow(context.Background(), "tenant-1/tool-x", l)
							if err != nil {
								t.Error(err)
								return
							}
							if d.Allowed {
								admitted.Add(1)
							}
						}
					})
				}
			}
			wg.Wait()
			if got := admitted.Load(); got != int64(tt.max) {
				t.Errorf("admitted %d calls across two instances, want exactly %d", got, tt.max)
			}
			total := instances[0].Stats().Allowed + instances[1].Stats().Allowed
			if total != uint64(tt.max) {
				t.Errorf("Stats report %d allowed, want %d", total, tt.max)
			}
		})
	}
}

func TestRedisRolloverAndRetryAfter(t *testing.T) {
	t.Parallel()
	client := newRedisClient(t)
	r := ratelimit.NewRedis(client, ratelimit.WithPrefix(testPrefix(t, client)), ratelimit.WithTimeout(generousTimeout))
	l := ratelimit.Limit{Max: 2, Window: time.Second} // long enough that the denial cannot be missed on a slow machine

	for i := range 2 {
		if d := mustAllow(t, r, "k", l); !d.Allowed || d.Remaining != 1-i {
			t.Fatalf("call %d = %+v, want admitted with Remaining %d", i, d, 1-i)
		}
	}
	denied := mustAllow(t, r, "k", l)
	if denied.Allowed || denied.RetryAfter <= 0 || denied.RetryAfter > l.Window {
		t.Fatalf("third call = %+v, want denied with RetryAfter in (0, %s]", denied, l.Window)
	}
	time.Sleep(denied.RetryAfter + 5*time.Millisecond)
	if d := mustAllow(t, r, "k", l); !d.Allowed {
		t.Fatalf("after RetryAfter: %+v, want admitted", d)
	}
}

func TestRedisKeysAreHashedAndPrefixed(t *testing.T) {
	t.Parallel()
	client := newRedisClient(t)
	prefix := testPrefix(t, client)
	r := ratelimit.NewRedis(client, ratelimit.WithPrefix(prefix), ratelimit.WithTimeout(generousTimeout))
	hostile := "tenant-1\r\n*{slot}*:" + strings.Repeat("x", 1000)
	mustAllow(t, r, hostile, ratelimit.Limit{Max: 1, Window: time.Minute})

	keys, err := client.Keys(t.Context(), prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 1 {
		t.Fatalf("keys under the prefix = %q, want exactly one", keys)
	}
	if want := regexp.MustCompile("^" + regexp.QuoteMeta(prefix) + "[0-9a-f]{64}$"); !want.MatchString(keys[0]) {
		t.Errorf("Redis key %q is not the prefix followed by a SHA-256 hex digest", keys[0])
	}
	ttl, err := client.PTTL(t.Context(), keys[0]).Result()
	if err != nil || ttl <= 0 || ttl > time.Minute {
		t.Errorf("PTTL = %s, %v; want a positive expiry no longer than the window", ttl, err)
	}
}

// TestRedisReloadsFlushedScript checks the EVALSHA → EVAL fallback: after SCRIPT FLUSH the next call still
// succeeds.
func TestRedisReloadsFlushedScript(t *testing.T) {
	t.Parallel()
	client := newRedisClient(t)
	r := ratelimit.NewRedis(client, ratelimit.WithPrefix(testPrefix(t, client)), ratelimit.WithTimeout(generousTimeout))
	l := ratelimit.Limit{Max: 2, Window: time.Minute}
	mustAllow(t, r, "k", l)
	if err := client.ScriptFlush(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	if d := mustAllow(t, r, "k", l); !d.Allowed || d.Remaining != 0 {
		t.Fatalf("after SCRIPT FLUSH: %+v, want the second admission", d)
	}
}

func TestRedisInvalidLimit(t *testing.T) {
	t.Parallel()
	// Validation happens before any Redis call, so an unreachable client proves it.
	r := ratelimit.NewRedis(unreachableClient(t))
	if _, err := r.Allow(t.Context(), "k", ratelimit.Limit{Max: 0, Window: time.Second}); !errors.Is(err, ratelimit.ErrInvalidLimit) {
		t.Fatalf("Allow error = %v, want ErrInvalidLimit", err)
	}
	if got := r.Stats().BackendErrors; got != 0 {
		t.Errorf("BackendErrors = %d, want 0", got)
	}
}

func TestRedisUnreachableReturnsError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		client func(testing.TB) redis.UniversalClient
	}{
		{name: "connection refused", client: func(tb testing.TB) redis.UniversalClient { return unreachableClient(tb) }},
		{name: "server never answers", client: func(tb testing.TB) redis.UniversalClient { return blackHoleClient(tb, false) }},
		{name: "server never answers, context-aware client", client: func(tb testing.TB) redis.UniversalClient { return blackHoleClient(tb, true) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := ratelimit.NewRedis(tt.client(t))
			err := withinHangGuard(t, func() error {
				_, err := r.Allow(context.Background(), "k", ratelimit.Limit{Max: 1, Window: time.Second})
				return err
			})
			if err == nil {
				t.Fatal("Allow succeeded against an unusable Redis")
			}
			if got := r.Stats().BackendErrors; got != 1 {
				t.Errorf("BackendErrors = %d, want 1", got)
			}
		})
	}
}
