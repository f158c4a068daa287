package ratelimit_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/store/ratelimit"
)

func BenchmarkMemoryAllow(b *testing.B) {
	l := ratelimit.Limit{Max: 1000, Window: time.Second}
	b.Run("one key", func(b *testing.B) {
		m := ratelimit.NewMemory()
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := m.Allow(ctx, "tenant-1/tool-x", l); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("10k keys parallel", func(b *testing.B) {
		m := ratelimit.NewMemory()
		keys := make([]string, 10_000)
		for i := range keys {
			keys[i] = "tenant-" + strconv.Itoa(i) + "/tool-x"
		}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			ctx := context.Background()
			for i := 0; pb.Next(); i++ {
				if _, err := m.Allow(ctx, keys[i%len(keys)], l); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

func BenchmarkRedisAllow(b *testing.B) {
	client := newRedisClient(b)
	r := ratelimit.NewRedis(client, ratelimit.WithPrefix(testPrefix(b, client)), ratelimit.WithTimeout(generousTimeout))
	l := ratelimit.Limit{Max: 1_000_000, Window: time.Second}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Allow(ctx, "tenant-1/tool-x", l); err != nil {
			b.Fatal(err)
		}
	}
}
