package ratelimit_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/toolsvc/toolsvc/internal/store/ratelimit"
)

func ExampleMemory() {
	clock := newFakeClock()
	limiter := ratelimit.NewMemory(ratelimit.WithClock(clock.Now))
	limit := ratelimit.Limit{Max: 2, Window: time.Minute} // rateLimit: {maxCalls: 2, windowMs: 60000}

	for range 3 {
		d, _ := limiter.Allow(context.Background(), "tenant-1/search-notes", limit)
		fmt.Printf("allowed=%t remaining=%d retryAfter=%s\n", d.Allowed, d.Remaining, d.RetryAfter)
		clock.Advance(10 * time.Second)
	}
	// Output:
	// allowed=true remaining=1 retryAfter=0s
	// allowed=true remaining=0 retryAfter=0s
	// allowed=false remaining=0 retryAfter=40s
}

func ExampleWithFallback() {
	// A Redis nobody listens on stands in for an outage.
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	defer client.Close()

	limiter := ratelimit.WithFallback(ratelimit.NewRedis(client), ratelimit.FailClosed, slog.New(slog.DiscardHandler))
	d, err := limiter.Allow(context.Background(), "tenant-1/search-notes", ratelimit.Limit{Max: 10, Window: time.Second})
	fmt.Println(d.Allowed, d.RetryAfter, err, limiter.Stats().BackendErrors)
	// Output: false 1s <nil> 1
}
