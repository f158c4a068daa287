package ratelimit_test

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fakeClock is a manually advanced clock, safe for concurrent use.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// redisURLEnv names the Redis the Redis tests run against; the project's test command sets it.
const redisURLEnv = "TOOLSVC_TEST_REDIS"

// newRedisClient returns a client for the test Redis, closed at cleanup, or skips the test when none is
// configured.
func newRedisClient(tb testing.TB) *redis.Client {
	tb.Helper()
	url := os.Getenv(redisURLEnv)
	if url == "" {
		tb.Skip(redisURLEnv + " is not set (e.g. redis://127.0.0.1:6379/0); skipping the Redis tests")
	}
	opt, err := redis.ParseURL(url)
	if err != nil {
		tb.Fatalf("parse %s: %v", redisURLEnv, err)
	}
	client := redis.NewClient(opt)
	tb.Cleanup(func() { _ = client.Close() })
	if err := client.Ping(context.Background()).Err(); err != nil {
		tb.Fatalf("ping Redis at %s: %v", url, err)
	}
	return client
}

// testPrefix returns a key prefix unique to this test and deletes every key under it at cleanup.
func testPrefix(tb testing.TB, client *redis.Client) string {
	tb.Helper()
	prefix := "toolsvc-test:rl:" + uuid.NewString() + ":"
	tb.Cleanup(func() {
		ctx := context.Background()
		iter := client.Scan(ctx, 0, prefix+"*", 100).Iterator()
		for iter.Next(ctx) {
			client.Del(ctx, iter.Val())
		}
		if err := iter.Err(); err != nil {
			tb.Errorf("clean up %s*: %v", prefix, err)
		}
	})
	return prefix
}

// unreachableClient returns a client for a port nothing listens on.
func unreachableClient(tb testing.TB) *redis.Client {
	tb.Helper()
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	tb.Cleanup(func() { _ = client.Close() })
	return client
}

// withinHangGuard fails the test if call has not returned after a generous bound. It checks that a call
// returns at all, not how fast.
func withinHangGuard[T any](tb testing.TB, call func() T) T {
	tb.Helper()
	done := make(chan T, 1)
	go func() { done <- call() }()
	select {
	case v := <-done:
		return v
	case <-time.After(2 * time.Second):
		tb.Fatal("call did not return within the 2 s hang guard")
		panic("unreachable")
	}
}
