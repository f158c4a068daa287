package budget_test

import (
	"context"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/toolsvc/toolsvc/internal/store/budget"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newRedis(t *testing.T) *redis.Client {
	t.Helper()
	url := os.Getenv("TOOLSVC_TEST_REDIS")
	if url == "" {
		t.Skip("TOOLSVC_TEST_REDIS is not set; run the tests with `make test`, which sets it")
	}
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opt)
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	return c
}

// stores returns the in-process store and, with TOOLSVC_TEST_REDIS, two
// Redis stores sharing one prefix (two replicas).
func stores(t *testing.T, now func() time.Time) map[string][]budget.Store {
	out := map[string][]budget.Store{"memory": {budget.NewMemory(now)}}
	if os.Getenv("TOOLSVC_TEST_REDIS") != "" {
		c := newRedis(t)
		prefix := "toolsvc-test:" + uuid.NewString() + ":"
		out["redis"] = []budget.Store{budget.NewRedis(c, prefix, 5*time.Second), budget.NewRedis(c, prefix, 5*time.Second)}
	}
	return out
}

// TestSpendIsExactUnderConcurrency: 50 concurrent callers spending 3
// units each against 100 units admit exactly 33 (99 units), on one
// process and across two Redis replicas.
func TestSpendIsExactUnderConcurrency(t *testing.T) {
	for name, sts := range stores(t, nil) {
		t.Run(name, func(t *testing.T) {
			var ok, refused atomic.Int64
			var wg sync.WaitGroup
			for i := range 50 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					out, err := sts[i%len(sts)].Spend(context.Background(), []budget.Charge{{Key: "b:tenant:acme", Cost: 3, Limit: 100, Window: time.Hour}})
					if err != nil {
						t.Error(err)
						return
					}
					if out.Allowed {
						ok.Add(1)
					} else {
						refused.Add(1)
						if out.Refused != 0 || out.Used[0]+3 <= 100 || !out.Resets[0].After(time.Now()) {
							t.Errorf("refusal %+v", out)
						}
					}
				}()
			}
			wg.Wait()
			if ok.Load() != 33 || refused.Load() != 17 {
				t.Fatalf("admitted %d, refused %d: want exactly 33 and 17", ok.Load(), refused.Load())
			}
			used, _, err := sts[0].Used(context.Background(), "b:tenant:acme", time.Hour)
			if err != nil || used != 99 {
				t.Fatalf("Used = %d, %v; want 99", used, err)
			}
		})
	}
}

// TestSpendAllOrNothing: a call that fits one budget but not another
// charges neither.
func TestSpendAllOrNothing(t *testing.T) {
	for name, sts := range stores(t, nil) {
		t.Run(name, func(t *testing.T) {
			st, ctx := sts[0], context.Background()
			big := budget.Charge{Key: "big", Cost: 5, Limit: 100, Window: time.Hour}
			small := budget.Charge{Key: "small", Cost: 5, Limit: 7, Window: time.Hour}
			if out, err := st.Spend(ctx, []budget.Charge{big, small}); err != nil || !out.Allowed || out.Used[0] != 5 || out.Used[1] != 5 {
				t.Fatalf("first: %+v %v", out, err)
			}
			out, err := st.Spend(ctx, []budget.Charge{big, small})
			if err != nil || out.Allowed || out.Refused != 1 || out.Used[1] != 5 {
				t.Fatalf("second: %+v %v; want refused by the small budget", out, err)
			}
			if used, _, _ := st.Used(ctx, "big", time.Hour); used != 5 {
				t.Fatalf("big budget charged by a refused call: %d", used)
			}
			// A free call is always admitted.
			if out, err := st.Spend(ctx, []budget.Charge{{Key: "small", Cost: 0, Limit: 7, Window: time.Hour}}); err != nil || !out.Allowed {
				t.Fatalf("free call: %+v %v", out, err)
			}
		})
	}
}

// TestWindowRenews: a spent budget has room again when its window ends.
func TestWindowRenews(t *testing.T) {
	var mu sync.Mutex
	now := time.UnixMilli(1_700_000_000_000 - 1_700_000_000_000%60_000)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	st := budget.NewMemory(clock)
	c := []budget.Charge{{Key: "k", Cost: 1, Limit: 2, Window: time.Minute}}
	for i := range 3 {
		out, _ := st.Spend(context.Background(), c)
		if out.Allowed != (i < 2) {
			t.Fatalf("call %d allowed=%v", i, out.Allowed)
		}
		if !out.Resets[0].Equal(now.Add(time.Minute)) {
			t.Fatalf("resets %v, want the window's end %v", out.Resets[0], now.Add(time.Minute))
		}
	}
	mu.Lock()
	now = now.Add(time.Minute)
	mu.Unlock()
	if out, _ := st.Spend(context.Background(), c); !out.Allowed || out.Used[0] != 1 {
		t.Fatalf("after the window: %+v", out)
	}
}

// TestRedisHonoursPrefix: every key the Redis store writes starts with the
// deployment's prefix.
func TestRedisHonoursPrefix(t *testing.T) {
	c := newRedis(t)
	prefix := "toolsvc-test:" + uuid.NewString() + ":"
	st := budget.NewRedis(c, prefix, time.Second)
	ctx := context.Background()
	if _, err := st.Spend(ctx, []budget.Charge{{Key: "daily:tenant:acme", Cost: 1, Limit: 5, Window: 2 * time.Second}}); err != nil {
		t.Fatal(err)
	}
	keys, err := c.Keys(ctx, prefix+"*").Result()
	if err != nil || len(keys) != 1 || !strings.HasPrefix(keys[0], prefix+"budget:daily:tenant:acme:") {
		t.Fatalf("keys %v, %v", keys, err)
	}
	if ttl := c.PTTL(ctx, keys[0]).Val(); ttl <= 0 || ttl > 3*time.Second {
		t.Fatalf("TTL %v: want the window's end and a second", ttl)
	}
}
