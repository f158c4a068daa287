package interceptors

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/toolsvc/toolsvc/internal/toolerr"
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
			step := shed(tc.max)
			info := &grpc.UnaryServerInfo{FullMethod: "/test/Call"}
			release := make(chan struct{})
			var started, done sync.WaitGroup
			for range tc.inFlight {
				started.Add(1)
				done.Add(1)
				go func() {
					defer done.Done()
					_, _ = step(context.Background(), nil, info, func(context.Context, any) (any, error) {
						started.Done()
						<-release
						return "held", nil
					})
				}()
			}
			started.Wait()
			resp, err := step(context.Background(), nil, info, func(context.Context, any) (any, error) { return "ok", nil })
			close(release)
			done.Wait()
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
	step := shed(1)
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
