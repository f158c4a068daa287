package cache

import (
	"context"
	"net"
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
	prefix := "toolsvc-test:cache:" + uuid.NewString() + ":"
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

// newTestRedis returns a Redis cache under a fresh prefix, with a deadline generous enough for -race.
func newTestRedis(tb testing.TB) (*Redis, *redis.Client, string) {
	tb.Helper()
	client := newRedisClient(tb)
	prefix := testPrefix(tb, client)
	return NewRedis(client, WithPrefix(prefix), WithTimeout(5*time.Second)), client, prefix
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

func testKey(tenant, domain, args string) Key {
	return Key{Tenant: tenant, Scope: "user:alice", Tool: "search-notes", Version: "v1", Domain: domain, Args: []byte(args)}
}

// blackHoleClient returns a client for a server that accepts connections and never answers, the worst case
// for a deadline: nothing fails, everything waits. The client does not honour context deadlines on the
// socket, so only the cache's own bound can return in time.
func blackHoleClient(tb testing.TB) *redis.Client {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
	)
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	})
	client := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), MaxRetries: -1, Protocol: 2})
	tb.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
		_ = client.Close()
	})
	return client
}
