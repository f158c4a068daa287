package ratelimit_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/toolsvc/toolsvc/internal/store/ratelimit"
)

func TestFallbackPolicies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		client func(testing.TB) redis.UniversalClient
		policy ratelimit.FailurePolicy
		want   ratelimit.Decision
	}{
		{name: "refused, fail open", client: refused, policy: ratelimit.FailOpen, want: ratelimit.Decision{Allowed: true, Degraded: true}},
		{name: "refused, fail closed", client: refused, policy: ratelimit.FailClosed, want: ratelimit.Decision{RetryAfter: time.Second, Degraded: true}},
		{name: "silent server, fail open", client: silent, policy: ratelimit.FailOpen, want: ratelimit.Decision{Allowed: true, Degraded: true}},
		{name: "silent server, fail closed", client: silent, policy: ratelimit.FailClosed, want: ratelimit.Decision{RetryAfter: time.Second, Degraded: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var hooked atomic.Int64
			f := ratelimit.WithFallback(ratelimit.NewRedis(tt.client(t)), tt.policy, nil,
				ratelimit.WithErrorHook(func(error) { hooked.Add(1) }))
			for range 3 {
				d, err := withinHangGuard(t, func() result {
					d, err := f.Allow(context.Background(), "k", ratelimit.Limit{Max: 1, Window: time.Second})
					return result{d, err}
				}).unpack()
				if err != nil {
					t.Fatalf("Allow error = %v, want the policy's decision", err)
				}
				if d != tt.want {
					t.Fatalf("Allow = %+v, want %+v", d, tt.want)
				}
			}
			if got := hooked.Load(); got != 3 {
				t.Errorf("error hook called %d times, want 3", got)
			}
			stats := f.Stats()
			if stats.BackendErrors != 3 || stats.Allowed+stats.Limited != 3 {
				t.Errorf("Stats = %+v, want 3 backend errors and 3 decisions", stats)
			}
		})
	}
}

func TestFallbackPassesThroughHealthyDecisions(t *testing.T) {
	t.Parallel()
	f := ratelimit.WithFallback(ratelimit.NewMemory(), ratelimit.FailOpen, nil)
	l := ratelimit.Limit{Max: 1, Window: time.Hour}
	mustAllow(t, f, "k", l)
	if d := mustAllow(t, f, "k", l); d.Allowed {
		t.Fatal("FailOpen admitted a call the healthy limiter denied")
	}
	if got := f.Stats(); got != (ratelimit.Stats{Allowed: 1, Limited: 1}) {
		t.Errorf("Stats = %+v, want 1 allowed and 1 limited", got)
	}
}

func TestFallbackDoesNotAbsorbCallerErrors(t *testing.T) {
	t.Parallel()
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name  string
		ctx   context.Context
		inner error
		want  error
	}{
		{name: "invalid limit", ctx: context.Background(), inner: ratelimit.ErrInvalidLimit, want: ratelimit.ErrInvalidLimit},
		{name: "caller canceled", ctx: canceled, inner: errors.New("redis: connection pool: context canceled"), want: context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := ratelimit.WithFallback(failing{tt.inner}, ratelimit.FailOpen, nil)
			if _, err := f.Allow(tt.ctx, "k", ratelimit.Limit{Max: 1, Window: time.Second}); !errors.Is(err, tt.want) {
				t.Fatalf("Allow error = %v, want %v", err, tt.want)
			}
			if got := f.Stats().BackendErrors; got != 0 {
				t.Errorf("BackendErrors = %d, want 0", got)
			}
		})
	}
}

func TestFallbackThrottlesLogging(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	logs := &recorder{}
	f := ratelimit.WithFallback(failing{errors.New("redis down")}, ratelimit.FailClosed, slog.New(logs),
		ratelimit.WithClock(clock.Now), ratelimit.WithLogInterval(10*time.Second))
	l := ratelimit.Limit{Max: 1, Window: time.Second}

	for range 50 {
		mustAllow(t, f, "k", l)
		clock.Advance(100 * time.Millisecond)
	}
	// 50 failures over 5 s: one warning, the other 49 suppressed.
	if got := logs.count(); got != 1 {
		t.Fatalf("logged %d warnings over one interval, want 1", got)
	}
	clock.Advance(10 * time.Second)
	mustAllow(t, f, "k", l)
	if got := logs.count(); got != 2 {
		t.Fatalf("logged %d warnings after the interval, want 2", got)
	}
	if got := logs.last("suppressed"); got != int64(49) {
		t.Errorf("second warning reports %v suppressed failures, want 49", got)
	}
}

func TestFailurePolicyString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		policy ratelimit.FailurePolicy
		want   string
	}{
		{name: "open", policy: ratelimit.FailOpen, want: "fail-open"},
		{name: "closed", policy: ratelimit.FailClosed, want: "fail-closed"},
		{name: "unknown", policy: 7, want: "FailurePolicy(7)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.policy.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}

type result struct {
	d   ratelimit.Decision
	err error
}

func (r result) unpack() (ratelimit.Decision, error) { return r.d, r.err }

func refused(tb testing.TB) redis.UniversalClient { return unreachableClient(tb) }

func silent(tb testing.TB) redis.UniversalClient { return blackHoleClient(tb, false) }

// blackHoleClient returns a client for a server that accepts connections and never answers, the worst case
// for a deadline: nothing fails, everything waits.
func blackHoleClient(tb testing.TB, contextTimeout bool) *redis.Client {
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
	client := redis.NewClient(&redis.Options{
		Addr:                  ln.Addr().String(),
		MaxRetries:            -1,
		ContextTimeoutEnabled: contextTimeout,
		Protocol:              2, // skip the HELLO handshake, which would also hang
	})
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

// failing is a Limiter whose backend always fails with err.
type failing struct{ err error }

func (f failing) Allow(context.Context, string, ratelimit.Limit) (ratelimit.Decision, error) {
	return ratelimit.Decision{}, f.err
}

func (f failing) Close() error { return nil }

// recorder is a slog.Handler that keeps the records it receives.
type recorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }

func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records = append(r.records, rec)
	return nil
}

func (r *recorder) WithAttrs([]slog.Attr) slog.Handler { return r }

func (r *recorder) WithGroup(string) slog.Handler { return r }

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.records)
}

// last returns the value of attribute key in the last record, or nil.
func (r *recorder) last(key string) any {
	r.mu.Lock()
	defer r.mu.Unlock()
	var v any
	r.records[len(r.records)-1].Attrs(func(a slog.Attr) bool {
		if a.Key == key {
			v = a.Value.Any()
			return false
		}
		return true
	})
	return v
}
