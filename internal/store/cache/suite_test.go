package cache

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"
)

// backend is a cache under test and a way to let time pass for it.
type backend struct {
	cache   Generational
	advance func(time.Duration)
}

// testCacheSuite runs the behaviour every Cache must share against the backend newBackend builds, fresh for
// each case.
func testCacheSuite(t *testing.T, newBackend func(testing.TB) backend) {
	t.Helper()
	ctx := context.Background()
	cases := []struct {
		name string
		run  func(t *testing.T, b backend)
	}{
		{name: "miss then hit", run: func(t *testing.T, b backend) {
			k := testKey("t1", "notes", `{"q":"go"}`)
			mustMiss(t, b.cache, k)
			mustSet(t, b.cache, k, "result", time.Minute)
			mustHit(t, b.cache, k, "result")
		}},
		{name: "set replaces", run: func(t *testing.T, b backend) {
			k := testKey("t1", "notes", "a")
			mustSet(t, b.cache, k, "old", time.Minute)
			mustSet(t, b.cache, k, "new", time.Minute)
			mustHit(t, b.cache, k, "new")
		}},
		{name: "values round-trip byte for byte", run: func(t *testing.T, b backend) {
			for i, v := range []string{"", "1:2:3", "\x00\xff:\n", string(bytes.Repeat([]byte{0x80}, 70_000))} {
				k := testKey("t1", "notes", string(rune('a'+i)))
				mustSet(t, b.cache, k, v, time.Minute)
				mustHit(t, b.cache, k, v)
			}
		}},
		{name: "every key field separates entries", run: func(t *testing.T, b backend) {
			base := Key{Tenant: "t1", Scope: "s", Tool: "tool", Version: "v1", Domain: "d", Args: []byte("x")}
			mustSet(t, b.cache, base, "base", time.Minute)
			for _, k := range []Key{
				{Tenant: "t2", Scope: "s", Tool: "tool", Version: "v1", Domain: "d", Args: []byte("x")},
				{Tenant: "t1", Scope: "s2", Tool: "tool", Version: "v1", Domain: "d", Args: []byte("x")},
				{Tenant: "t1", Scope: "s", Tool: "tool2", Version: "v1", Domain: "d", Args: []byte("x")},
				{Tenant: "t1", Scope: "s", Tool: "tool", Version: "v2", Domain: "d", Args: []byte("x")},
				{Tenant: "t1", Scope: "s", Tool: "tool", Version: "v1", Domain: "d2", Args: []byte("x")},
				{Tenant: "t1", Scope: "s", Tool: "tool", Version: "v1", Domain: "d", Args: []byte("y")},
				{Tenant: "t1s", Scope: "", Tool: "tool", Version: "v1", Domain: "d", Args: []byte("x")},
			} {
				mustMiss(t, b.cache, k)
			}
			mustHit(t, b.cache, base, "base")
		}},
		{name: "entries expire after their ttl", run: func(t *testing.T, b backend) {
			k := testKey("t1", "notes", "a")
			// Against Redis the clock is real: the slack before expiry absorbs a slow test machine.
			mustSet(t, b.cache, k, "v", 500*time.Millisecond)
			b.advance(250 * time.Millisecond)
			mustHit(t, b.cache, k, "v")
			b.advance(300 * time.Millisecond)
			mustMiss(t, b.cache, k)
		}},
		{name: "invalidation is per tenant and domain", run: func(t *testing.T, b backend) {
			target := testKey("t1", "notes", "a")
			others := []Key{
				testKey("t1", "notes2", "a"), // same tenant, other domain
				testKey("t2", "notes", "a"),  // other tenant, same domain
				testKey("t1n", "otes", "a"),  // the same bytes split differently
			}
			mustSet(t, b.cache, target, "target", time.Minute)
			for _, k := range others {
				mustSet(t, b.cache, k, "other", time.Minute)
			}
			if err := b.cache.InvalidateDomain(ctx, "t1", "notes"); err != nil {
				t.Fatal(err)
			}
			mustMiss(t, b.cache, target)
			for _, k := range others {
				mustHit(t, b.cache, k, "other")
			}
			mustSet(t, b.cache, target, "fresh", time.Minute) // the new generation caches again
			mustHit(t, b.cache, target, "fresh")
		}},
		{name: "a store from before an invalidation is dropped", run: func(t *testing.T, b backend) {
			k := testKey("t1", "notes", "a")
			_, gen, ok, err := b.cache.Lookup(ctx, k)
			if err != nil || ok {
				t.Fatalf("Lookup = ok %t, err %v; want a miss", ok, err)
			}
			if err := b.cache.InvalidateDomain(ctx, "t1", "notes"); err != nil {
				t.Fatal(err)
			}
			if stored, err := b.cache.SetIfGeneration(ctx, k, gen, []byte("stale"), time.Minute); err != nil || stored {
				t.Fatalf("SetIfGeneration(old generation) = %t, %v; want not stored", stored, err)
			}
			mustMiss(t, b.cache, k)
			_, gen, _, _ = b.cache.Lookup(ctx, k)
			if stored, err := b.cache.SetIfGeneration(ctx, k, gen, []byte("fresh"), time.Minute); err != nil || !stored {
				t.Fatalf("SetIfGeneration(current generation) = %t, %v; want stored", stored, err)
			}
			mustHit(t, b.cache, k, "fresh")
		}},
		{name: "ttl must be positive", run: func(t *testing.T, b backend) {
			for _, ttl := range []time.Duration{0, -time.Second} {
				if err := b.cache.Set(ctx, testKey("t1", "notes", "a"), []byte("v"), ttl); !errors.Is(err, ErrInvalidTTL) {
					t.Errorf("Set(ttl %s) error = %v, want ErrInvalidTTL", ttl, err)
				}
			}
		}},
		{name: "stats count hits, misses and invalidations", run: func(t *testing.T, b backend) {
			k := testKey("t1", "notes", "a")
			mustMiss(t, b.cache, k)
			mustSet(t, b.cache, k, "v", time.Minute)
			mustHit(t, b.cache, k, "v")
			mustHit(t, b.cache, k, "v")
			if err := b.cache.InvalidateDomain(ctx, "t1", "notes"); err != nil {
				t.Fatal(err)
			}
			got := b.cache.(interface{ Stats() Stats }).Stats()
			if want := (Stats{Hits: 2, Misses: 1, Invalidations: 1}); got != want {
				t.Errorf("Stats = %+v, want %+v", got, want)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, newBackend(t))
		})
	}
}

func TestMemorySuite(t *testing.T) {
	t.Parallel()
	testCacheSuite(t, func(testing.TB) backend {
		clock := newFakeClock()
		return backend{cache: NewMemory(1<<20, WithClock(clock.Now)), advance: clock.Advance}
	})
}

func TestRedisSuite(t *testing.T) {
	t.Parallel()
	testCacheSuite(t, func(tb testing.TB) backend {
		r, _, _ := newTestRedis(tb)
		return backend{cache: r, advance: func(d time.Duration) { time.Sleep(d) }}
	})
}

func mustSet(tb testing.TB, c Cache, k Key, val string, ttl time.Duration) {
	tb.Helper()
	if err := c.Set(context.Background(), k, []byte(val), ttl); err != nil {
		tb.Fatalf("Set(%+v): %v", k, err)
	}
}

func mustHit(tb testing.TB, c Cache, k Key, want string) {
	tb.Helper()
	got, ok, err := c.Get(context.Background(), k)
	if err != nil || !ok {
		tb.Fatalf("Get(%+v) = ok %t, err %v; want a hit", k, ok, err)
	}
	if string(got) != want {
		tb.Fatalf("Get(%+v) = %.40q, want %.40q", k, got, want)
	}
}

func mustMiss(tb testing.TB, c Cache, k Key) {
	tb.Helper()
	got, ok, err := c.Get(context.Background(), k)
	if err != nil || ok {
		tb.Fatalf("Get(%+v) = %.40q, ok %t, err %v; want a miss", k, got, ok, err)
	}
}
