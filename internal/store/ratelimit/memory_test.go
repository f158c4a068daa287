package ratelimit_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/store/ratelimit"
)

func TestMemoryAdmitsExactlyMax(t *testing.T) {
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
			clock := newFakeClock()
			m := ratelimit.NewMemory(ratelimit.WithClock(clock.Now))
			l := ratelimit.Limit{Max: tt.max, Window: time.Minute}

			for i := range 3 * tt.max {
				clock.Advance(time.Millisecond)
				d, err := m.Allow(t.Context(), "k", l)
				if err != nil {
					t.Fatalf("call %d: %v", i, err)
				}
				if i < tt.max {
					want := ratelimit.Decision{Allowed: true, Remaining: tt.max - i - 1}
					if d != want {
						t.Fatalf("call %d = %+v, want %+v", i, d, want)
					}
					continue
				}
				// The first admission (at 1 ms) leaves the window at 1 ms + 1 min.
				want := ratelimit.Decision{RetryAfter: time.Minute - time.Duration(i)*time.Millisecond}
				if d != want {
					t.Fatalf("call %d = %+v, want %+v", i, d, want)
				}
			}
			if got := m.Stats(); got.Allowed != uint64(tt.max) || got.Limited != uint64(2*tt.max) {
				t.Errorf("Stats = %+v, want %d allowed and %d limited", got, tt.max, 2*tt.max)
			}
		})
	}
}

func TestMemoryExactUnderConcurrency(t *testing.T) {
	t.Parallel()
	const limit, goroutines, callsEach = 100, 16, 50
	m := ratelimit.NewMemory()
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range callsEach {
				d, err := m.Allow(context.Background(), "shared", ratelimit.Limit{Max: limit, Window: time.Hour})
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
	wg.Wait()
	if got := admitted.Load(); got != limit {
		t.Errorf("admitted %d calls, want exactly %d", got, limit)
	}
}

func TestMemoryWindowRollover(t *testing.T) {
	t.Parallel()
	l := ratelimit.Limit{Max: 3, Window: 10 * time.Second}
	// Each step advances the clock, then makes one call. Admissions happen at 0 s, 4 s, 4 s, 10 s, 14 s, 14 s.
	steps := []struct {
		name    string
		advance time.Duration
		want    ratelimit.Decision
	}{
		{name: "first call", want: ratelimit.Decision{Allowed: true, Remaining: 2}},
		{name: "second call at 4s", advance: 4 * time.Second, want: ratelimit.Decision{Allowed: true, Remaining: 1}},
		{name: "third call at 4s", want: ratelimit.Decision{Allowed: true, Remaining: 0}},
		{name: "full at 5s", advance: time.Second, want: ratelimit.Decision{RetryAfter: 5 * time.Second}},
		{name: "full 1ns before the first admission expires", advance: 5*time.Second - time.Nanosecond, want: ratelimit.Decision{RetryAfter: time.Nanosecond}},
		{name: "first admission expired at 10s", advance: time.Nanosecond, want: ratelimit.Decision{Allowed: true, Remaining: 0}},
		{name: "full again until 14s", want: ratelimit.Decision{RetryAfter: 4 * time.Second}},
		{name: "two slots free at 14s", advance: 4 * time.Second, want: ratelimit.Decision{Allowed: true, Remaining: 1}},
		{name: "second of them", want: ratelimit.Decision{Allowed: true, Remaining: 0}},
		{name: "full until 20s", want: ratelimit.Decision{RetryAfter: 6 * time.Second}},
		{name: "whole window idle", advance: time.Hour, want: ratelimit.Decision{Allowed: true, Remaining: 2}},
	}
	clock := newFakeClock()
	m := ratelimit.NewMemory(ratelimit.WithClock(clock.Now))
	for _, step := range steps {
		clock.Advance(step.advance)
		got, err := m.Allow(t.Context(), "k", l)
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if got != step.want {
			t.Fatalf("%s: got %+v, want %+v", step.name, got, step.want)
		}
	}
}

// TestMemoryRetryAfterIsExact checks, over random call patterns, that a denied caller is still denied 1 ns
// before RetryAfter and admitted exactly at it.
func TestMemoryRetryAfterIsExact(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		limit ratelimit.Limit
		seed  uint64
	}{
		{name: "1 per second", limit: ratelimit.Limit{Max: 1, Window: time.Second}, seed: 1},
		{name: "7 per 3 seconds", limit: ratelimit.Limit{Max: 7, Window: 3 * time.Second}, seed: 2},
		{name: "50 per minute", limit: ratelimit.Limit{Max: 50, Window: time.Minute}, seed: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(tt.seed, tt.seed))
			clock := newFakeClock()
			m := ratelimit.NewMemory(ratelimit.WithClock(clock.Now))
			denials := 0
			for range 2000 {
				clock.Advance(time.Duration(rng.Int64N(int64(tt.limit.Window) / int64(tt.limit.Max))))
				d := mustAllow(t, m, "k", tt.limit)
				if d.Allowed {
					continue
				}
				denials++
				if d.RetryAfter <= 0 || d.RetryAfter > tt.limit.Window {
					t.Fatalf("RetryAfter %s outside (0, %s]", d.RetryAfter, tt.limit.Window)
				}
				clock.Advance(d.RetryAfter - time.Nanosecond)
				if early := mustAllow(t, m, "k", tt.limit); early.Allowed || early.RetryAfter != time.Nanosecond {
					t.Fatalf("1ns before RetryAfter: got %+v, want denied with RetryAfter 1ns", early)
				}
				clock.Advance(time.Nanosecond)
				if onTime := mustAllow(t, m, "k", tt.limit); !onTime.Allowed {
					t.Fatalf("at RetryAfter: got %+v, want admitted", onTime)
				}
			}
			if denials == 0 {
				t.Fatal("the pattern never hit the limit; the test checked nothing")
			}
		})
	}
}

func TestMemoryLimitLowered(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	m := ratelimit.NewMemory(ratelimit.WithClock(clock.Now))
	for range 5 { // admissions at 0, 1, 2, 3 and 4 s
		mustAllow(t, m, "k", ratelimit.Limit{Max: 5, Window: 10 * time.Second})
		clock.Advance(time.Second)
	}
	// At 5 s with Max 2 the call fits once at most one admission is in the window: when the one at 3 s leaves.
	got := mustAllow(t, m, "k", ratelimit.Limit{Max: 2, Window: 10 * time.Second})
	if want := (ratelimit.Decision{RetryAfter: 8 * time.Second}); got != want {
		t.Fatalf("after lowering the limit: got %+v, want %+v", got, want)
	}
	clock.Advance(8 * time.Second)
	if got := mustAllow(t, m, "k", ratelimit.Limit{Max: 2, Window: 10 * time.Second}); !got.Allowed {
		t.Fatalf("at RetryAfter: got %+v, want admitted", got)
	}
}

func TestMemoryKeysAreIndependent(t *testing.T) {
	t.Parallel()
	m := ratelimit.NewMemory()
	l := ratelimit.Limit{Max: 1, Window: time.Hour}
	mustAllow(t, m, "tenant-a", l)
	if d := mustAllow(t, m, "tenant-a", l); d.Allowed {
		t.Fatal("tenant-a admitted twice under Max 1")
	}
	if d := mustAllow(t, m, "tenant-b", l); !d.Allowed {
		t.Fatal("tenant-b denied because of tenant-a")
	}
}

func TestMemoryKeyCap(t *testing.T) {
	t.Parallel()
	const maxKeys = 100
	l := ratelimit.Limit{Max: 1, Window: time.Minute}

	t.Run("live keys are evicted at the cap", func(t *testing.T) {
		t.Parallel()
		caps := []struct {
			name    string
			maxKeys int
		}{
			{name: "single shard", maxKeys: maxKeys},
			{name: "sharded", maxKeys: 20_000},
		}
		for _, tt := range caps {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				m := ratelimit.NewMemory(ratelimit.WithMaxKeys(tt.maxKeys))
				inserted := 3 * tt.maxKeys
				for i := range inserted {
					mustAllow(t, m, fmt.Sprint("key-", i), l)
					if i%97 == 0 && m.Len() > tt.maxKeys {
						t.Fatalf("after %d keys Len = %d, above the cap %d", i+1, m.Len(), tt.maxKeys)
					}
				}
				n := m.Len()
				if n > tt.maxKeys || n < tt.maxKeys*9/10 {
					t.Errorf("Len = %d, want within 90%% of the cap %d and not above it", n, tt.maxKeys)
				}
				// Every key was inside its window, so each one dropped is a counted eviction.
				if got, want := m.Stats().Evictions, uint64(inserted-n); got != want {
					t.Errorf("Evictions = %d, want %d", got, want)
				}
			})
		}
	})

	t.Run("idle keys make room without evicting live ones", func(t *testing.T) {
		t.Parallel()
		clock := newFakeClock()
		m := ratelimit.NewMemory(ratelimit.WithMaxKeys(maxKeys), ratelimit.WithClock(clock.Now))
		for i := range maxKeys {
			mustAllow(t, m, fmt.Sprint("old-", i), l)
		}
		clock.Advance(l.Window)
		for i := range maxKeys {
			mustAllow(t, m, fmt.Sprint("new-", i), l)
		}
		if got := m.Stats().Evictions; got != 0 {
			t.Errorf("Evictions = %d, want 0: only idle keys had to go", got)
		}
		if n := m.Len(); n != maxKeys {
			t.Errorf("Len = %d, want %d", n, maxKeys)
		}
		// The new keys are all live, so they kept their history.
		if d := mustAllow(t, m, "new-0", l); d.Allowed {
			t.Error("new-0 admitted twice: its history was lost")
		}
	})

	t.Run("idle keys are swept without reaching the cap", func(t *testing.T) {
		t.Parallel()
		clock := newFakeClock()
		m := ratelimit.NewMemory(ratelimit.WithClock(clock.Now), ratelimit.WithMaxKeys(10*maxKeys))
		for i := range maxKeys {
			mustAllow(t, m, fmt.Sprint("old-", i), l)
		}
		clock.Advance(l.Window)
		for range maxKeys { // each call sweeps idle keys from the least recently used end
			mustAllow(t, m, "busy", l)
		}
		if n := m.Len(); n != 1 {
			t.Errorf("Len = %d, want 1: idle keys were not swept", n)
		}
	})
}

func TestInvalidLimit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		limit ratelimit.Limit
	}{
		{name: "zero max", limit: ratelimit.Limit{Max: 0, Window: time.Second}},
		{name: "negative max", limit: ratelimit.Limit{Max: -1, Window: time.Second}},
		{name: "zero window", limit: ratelimit.Limit{Max: 1}},
		{name: "negative window", limit: ratelimit.Limit{Max: 1, Window: -time.Second}},
	}
	m := ratelimit.NewMemory()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := m.Allow(t.Context(), "k", tt.limit); !errors.Is(err, ratelimit.ErrInvalidLimit) {
				t.Errorf("Allow error = %v, want ErrInvalidLimit", err)
			}
		})
	}
}

func mustAllow(tb testing.TB, l ratelimit.Limiter, key string, limit ratelimit.Limit) ratelimit.Decision {
	tb.Helper()
	d, err := l.Allow(context.Background(), key, limit)
	if err != nil {
		tb.Fatalf("Allow(%q, %+v): %v", key, limit, err)
	}
	return d
}
