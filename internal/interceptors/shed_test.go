package interceptors

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
)

func TestShed(t *testing.T) {
	tests := []struct {
		name     string
		max      int
		inFlight int // calls held inside the handler
		wantShed bool
	}{
		{name: "under the limit", max: 3, inFlight: 2, wantShed: false},
		{name: "at the limit", max: 3, inFlight: 3, wantShed: true},
		{name: "disabled", max: -1, inFlight: 50, wantShed: false},
		{name: "default limit", max: 0, inFlight: 10, wantShed: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			limit := tc.max
			if limit == 0 { // the default, as Chain sets it
				c := Config{Logger: slog.New(slog.DiscardHandler)}
				c.SetDefaults()
				limit = c.MaxInFlight
			}
			step := shed(limit, -1)
			info := &grpc.UnaryServerInfo{FullMethod: "/test/Call"}
			release := hold(t, step, tc.inFlight)
			resp, err := step(context.Background(), nil, info, func(context.Context, any) (any, error) { return "ok", nil })
			release()
			var te *toolerr.Error
			switch {
			case tc.wantShed && !errors.As(err, &te):
				t.Fatalf("call beyond the limit: err = %v, want a RATE_LIMITED toolerr", err)
			case tc.wantShed:
				if te.Code != toolerr.RateLimited || te.RetryAfter != shedRetryAfter || te.Details["reason"] != "overloaded" {
					t.Fatalf("shed error = %+v, want RATE_LIMITED, retry after %s, reason overloaded", te, shedRetryAfter)
				}
			case err != nil || resp != "ok":
				t.Fatalf("call under the limit: %v %v", resp, err)
			}
			// Slots are released: a call after the burst is admitted.
			if resp, err := step(context.Background(), nil, info, func(context.Context, any) (any, error) { return "after", nil }); err != nil || resp != "after" {
				t.Fatalf("call after the burst: %v %v", resp, err)
			}
		})
	}
}

func TestShedDoesNotHoldSlotsOfFailedCalls(t *testing.T) {
	step := shed(1, -1)
	info := &grpc.UnaryServerInfo{FullMethod: "/test/Call"}
	for i := range 5 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		_, err := step(ctx, nil, info, func(ctx context.Context, _ any) (any, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		})
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("call %d: err = %v, want the handler's deadline error (a slot leaked?)", i, err)
		}
	}
}

// hold fills n slots of step with calls that stay in the handler until the
// returned release is called.
func hold(t *testing.T, step grpc.UnaryServerInterceptor, n int) (release func()) {
	t.Helper()
	info := &grpc.UnaryServerInfo{FullMethod: "/test/Call"}
	ch := make(chan struct{})
	var started, done sync.WaitGroup
	for range n {
		started.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			_, _ = step(context.Background(), nil, info, func(context.Context, any) (any, error) {
				started.Done()
				<-ch
				return "held", nil
			})
		}()
	}
	started.Wait()
	var once sync.Once
	release = func() { once.Do(func() { close(ch); done.Wait() }) }
	t.Cleanup(release)
	return release
}

func TestShedWaitAbsorbsABurst(t *testing.T) {
	step := shed(2, 5*time.Second)
	release := hold(t, step, 2)
	info := &grpc.UnaryServerInfo{FullMethod: "/test/Call"}
	got := make(chan error, 1)
	go func() {
		_, err := step(context.Background(), nil, info, func(context.Context, any) (any, error) { return "ok", nil })
		got <- err
	}()
	// The call waits while both slots are held...
	select {
	case err := <-got:
		t.Fatalf("a call beyond the limit returned before a slot was free: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	// ...and is served as soon as one frees.
	release()
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("waiting call: %v, want it served", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("waiting call not served after the slots were freed")
	}
}

func TestShedWaitIsBounded(t *testing.T) {
	const wait = 100 * time.Millisecond
	step := shed(2, wait)
	hold(t, step, 2)
	info := &grpc.UnaryServerInfo{FullMethod: "/test/Call"}
	never := func(context.Context, any) (any, error) {
		t.Error("a call beyond the limit reached the handler")
		return nil, nil
	}

	// A call that finds no slot within the wait is shed after it.
	start := time.Now()
	_, err := step(context.Background(), nil, info, never)
	if el := time.Since(start); !isShed(err) || el < wait || el > wait+2*time.Second {
		t.Fatalf("after %s: err = %v, want shed after about %s", el, err, wait)
	}
	// A caller's deadline shortens the wait to half of what is left.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start = time.Now()
	if _, err := step(ctx, nil, info, never); !isShed(err) || time.Since(start) > wait {
		t.Fatalf("short deadline: err = %v after %s, want shed within half the deadline", err, time.Since(start))
	}
	// The line holds at most as many calls as the limit; beyond it a call
	// is shed at once.
	var line sync.WaitGroup
	for range 2 {
		line.Add(1)
		go func() { defer line.Done(); _, _ = step(context.Background(), nil, info, never) }()
	}
	time.Sleep(20 * time.Millisecond) // both are in line
	start = time.Now()
	if _, err := step(context.Background(), nil, info, never); !isShed(err) || time.Since(start) > wait/2 {
		t.Fatalf("full line: err = %v after %s, want shed at once", err, time.Since(start))
	}
	line.Wait()
}

func isShed(err error) bool {
	var te *toolerr.Error
	return errors.As(err, &te) && te.Code == toolerr.RateLimited && te.Details["reason"] == "overloaded"
}
