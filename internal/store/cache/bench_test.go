package cache

import (
	"context"
	"strconv"
	"testing"
	"time"
)

func BenchmarkKeyString(b *testing.B) {
	k := Key{Tenant: "tenant-1", Scope: "user:alice", Tool: "search-notes", Version: "v1", Domain: "notes", Args: []byte(`{"query":"goroutines","limit":20}`)}
	b.ReportAllocs()
	for b.Loop() {
		_ = k.String()
	}
}

func BenchmarkMemory(b *testing.B) {
	ctx := context.Background()
	val := make([]byte, 1024)
	keys := make([]Key, 1000)
	for i := range keys {
		keys[i] = testKey("tenant-1", "notes", strconv.Itoa(i))
	}
	b.Run("Get hit", func(b *testing.B) {
		m := NewMemory(64 << 20)
		for _, k := range keys {
			if err := m.Set(ctx, k, val, time.Hour); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if _, ok, _ := m.Get(ctx, keys[i%len(keys)]); !ok {
				b.Fatal("miss")
			}
			i++
		}
	})
	b.Run("Set", func(b *testing.B) {
		m := NewMemory(512 << 10) // smaller than the key set: Set also evicts
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if err := m.Set(ctx, keys[i%len(keys)], val, time.Hour); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("Get hit parallel", func(b *testing.B) {
		m := NewMemory(64 << 20)
		for _, k := range keys {
			_ = m.Set(ctx, k, val, time.Hour)
		}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for i := 0; pb.Next(); i++ {
				_, _, _ = m.Get(ctx, keys[i%len(keys)])
			}
		})
	})
}

func BenchmarkGroupHit(b *testing.B) {
	ctx := context.Background()
	g := NewGroup(NewMemory(1 << 20))
	k := testKey("tenant-1", "notes", "a")
	load := constLoader("result")
	if _, _, err := g.Do(ctx, k, time.Hour, load); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, hit, _ := g.Do(ctx, k, time.Hour, load); !hit {
			b.Fatal("miss")
		}
	}
}

func BenchmarkRedisGet(b *testing.B) {
	r, _, _ := newTestRedis(b)
	ctx := context.Background()
	k := testKey("tenant-1", "notes", "a")
	if err := r.Set(ctx, k, make([]byte, 1024), time.Hour); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, ok, err := r.Get(ctx, k); err != nil || !ok {
			b.Fatal(ok, err)
		}
	}
}
