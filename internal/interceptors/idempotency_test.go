package interceptors_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	memoryv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/memory/v1"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/contract/wire"
	"github.com/toolsvc/toolsvc/internal/interceptors"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/sqlite"
)

// TestKeyKeptWhenTheEffectMayHaveApplied: a keyed add-memory that fails
// after its tool ran in a way that may have left the write committed (the
// store failing mid-write, the deadline or the caller's cancellation
// striking after the commit) keeps its key: the retry with the key is told
// the outcome is unknown and does not run the tool a second time. A
// failure the tool decided (invalid input) releases the key, so the retry
// runs.
func TestKeyKeptWhenTheEffectMayHaveApplied(t *testing.T) {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "keys.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	for _, tc := range []struct {
		name     string
		fail     error
		firstErr string
		kept     bool
	}{
		{"store failed after the write", &unavailable{}, "PROVIDER_ERROR", true},
		{"deadline after the commit", context.DeadlineExceeded, "TIMEOUT", true},
		{"caller gone after the commit", context.Canceled, "TIMEOUT", true},
		{"internal fault after the write", errors.New("boom"), "INTERNAL", true},
		{"tool refused the input", toolerr.Invalid("content", "string.min_len", "must not be empty"), "INVALID_INPUT", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *interceptors.Config) { c.Idempotency = st })
			writes := 0
			h.mem.add = func(ctx context.Context, r *memoryv1.AddMemoryRequest) (*memoryv1.AddMemoryResponse, error) {
				writes++ // the write committed; what follows fails the call
				if writes == 1 {
					return nil, tc.fail
				}
				return goodAdd(ctx, r)
			}
			client := memoryv1.NewMemoryServiceClient(h.ch)
			ctx := metadata.AppendToOutgoingContext(as("full"), wire.HeaderIdempotencyKey, "key-"+strings.ReplaceAll(tc.name, " ", "-"))
			req := &memoryv1.AddMemoryRequest{Content: "deploys need a ticket"}

			_, err := client.AddMemory(ctx, req)
			if _, te := toolError(t, err); te.GetCode() != tc.firstErr {
				t.Fatalf("first call: %s, want %s", te.GetCode(), tc.firstErr)
			}
			_, err = client.AddMemory(ctx, req)
			if !tc.kept {
				if err != nil || writes != 2 {
					t.Fatalf("retry after a refused call: err %v, tool ran %d time(s); want it to run again", err, writes)
				}
				return
			}
			s, te := toolError(t, err)
			if s.Code() == codes.OK {
				t.Errorf("retry: OK, want an error")
			}
			if te.GetCode() != "CONFLICT" || te.GetRetryable() {
				t.Errorf("retry: %s retryable=%v, want CONFLICT, not retryable (the same key can never tell more)", te.GetCode(), te.GetRetryable())
			}
			d := te.GetDetails().GetFields()
			if d["outcome"].GetStringValue() != "unknown" || d["firstErrorCode"].GetStringValue() != tc.firstErr {
				t.Errorf("retry details = %v, want outcome unknown, firstErrorCode %s", d, tc.firstErr)
			}
			if writes != 1 {
				t.Errorf("the tool ran %d times for one key, want once", writes)
			}
			// A new key is a new call.
			ctx2 := metadata.AppendToOutgoingContext(as("full"), wire.HeaderIdempotencyKey, "new-"+strings.ReplaceAll(tc.name, " ", "-"))
			if _, err := client.AddMemory(ctx2, req); err != nil || writes != 2 {
				t.Errorf("a new key: err %v, tool ran %d time(s) in all; want 2", err, writes)
			}
		})
	}
	var _ store.IdempotencyStore = st
}

// agedClaims is the store as a repeat sees it long after the first call
// claimed its key: every claim found unfinished was made an hour ago, by
// a release whose claims carry no lease.
type agedClaims struct{ store.IdempotencyStore }

func (a agedClaims) ClaimIdempotency(ctx context.Context, r *store.IdempotencyRecord) (*store.IdempotencyRecord, bool, error) {
	existing, claimed, err := a.IdempotencyStore.ClaimIdempotency(ctx, r)
	if existing != nil && !existing.Done {
		existing.CreatedAt = existing.CreatedAt.Add(-time.Hour)
		existing.LeaseUntil = time.Time{}
	}
	return existing, claimed, err
}

// frozenOwner is the store of a replica that stopped mid-call: its claims'
// leases are never renewed.
type frozenOwner struct{ store.IdempotencyStore }

func (frozenOwner) RenewIdempotency(context.Context, string, string, time.Time) error { return nil }

// TestAbandonedClaimIsAnUnknownOutcome: a keyed write whose replica stopped
// mid-call (SIGKILL) leaves its key claimed and never completed. A repeat
// older than the tool's deadline can have no first call still running: it
// is told at once that the outcome is unknown (CONFLICT, not retryable),
// not made to wait for a result until the key expires, and the tool does
// not run again.
func TestAbandonedClaimIsAnUnknownOutcome(t *testing.T) {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "keys.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	h := newHarness(t, func(c *interceptors.Config) { c.Idempotency = agedClaims{st} })
	release := make(chan struct{})
	entered := make(chan struct{}, 2)
	h.mem.add = func(ctx context.Context, r *memoryv1.AddMemoryRequest) (*memoryv1.AddMemoryResponse, error) {
		entered <- struct{}{}
		<-release // the replica that runs it never finishes
		return goodAdd(ctx, r)
	}
	client := memoryv1.NewMemoryServiceClient(h.ch)
	ctx := metadata.AppendToOutgoingContext(as("full"), wire.HeaderIdempotencyKey, "key-abandoned")
	req := &memoryv1.AddMemoryRequest{Content: "deploys need a ticket"}
	first := make(chan error, 1)
	go func() {
		_, err := client.AddMemory(ctx, req)
		first <- err
	}()
	<-entered

	_, err = client.AddMemory(ctx, req)
	_, te := toolError(t, err)
	if te.GetCode() != "CONFLICT" || te.GetRetryable() {
		t.Fatalf("repeat of an abandoned claim: %s retryable=%v, want CONFLICT, not retryable", te.GetCode(), te.GetRetryable())
	}
	if d := te.GetDetails().GetFields(); d["outcome"].GetStringValue() != "unknown" || d["firstErrorCode"].GetStringValue() != "ABANDONED" {
		t.Errorf("details = %v, want outcome unknown, firstErrorCode ABANDONED", d)
	}
	select {
	case <-entered:
		t.Error("the tool ran a second time for one key")
	default:
	}
	close(release)
	if err := <-first; err != nil {
		t.Errorf("first call: %v", err)
	}
}

// TestLapsedLeaseIsAnUnknownOutcome: a keyed write whose owner stopped
// renewing its claim's lease (its replica was SIGKILLed mid-call; here the
// renewals are dropped) is answered "outcome unknown" (ABANDONED) once the
// lease lapses, well before the tool's deadline, and the tool does not run
// again. While the owner renews, a repeat waits and gets its result.
func TestLapsedLeaseIsAnUnknownOutcome(t *testing.T) {
	const lease = 300 * time.Millisecond
	for _, tc := range []struct {
		name   string
		frozen bool
	}{
		{name: "owner gone", frozen: true},
		{name: "owner renewing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "keys.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			var is store.IdempotencyStore = st
			if tc.frozen {
				is = frozenOwner{st}
			}
			h := newHarness(t, func(c *interceptors.Config) {
				c.Idempotency, c.IdempotencyLease = is, lease
				c.Deadlines = interceptors.Deadlines{Fast: time.Minute, Medium: time.Minute, Slow: time.Minute}
			})
			release := make(chan struct{})
			entered := make(chan struct{}, 2)
			h.mem.add = func(ctx context.Context, r *memoryv1.AddMemoryRequest) (*memoryv1.AddMemoryResponse, error) {
				entered <- struct{}{}
				select { // runs for several leases
				case <-release:
				case <-time.After(6 * lease):
				}
				return goodAdd(ctx, r)
			}
			client := memoryv1.NewMemoryServiceClient(h.ch)
			ctx := metadata.AppendToOutgoingContext(as("full"), wire.HeaderIdempotencyKey, "key-lease")
			req := &memoryv1.AddMemoryRequest{Content: "deploys need a ticket"}
			first := make(chan error, 1)
			go func() {
				_, err := client.AddMemory(ctx, req)
				first <- err
			}()
			<-entered

			rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			_, err = client.AddMemory(rctx, req)
			if !tc.frozen {
				if err != nil {
					t.Fatalf("repeat while the owner renews its lease: %v; want the first call's result", err)
				}
			} else {
				_, te := toolError(t, err)
				if te.GetCode() != "CONFLICT" || te.GetRetryable() {
					t.Fatalf("repeat after the lease lapsed: %s retryable=%v, want CONFLICT, not retryable", te.GetCode(), te.GetRetryable())
				}
				if d := te.GetDetails().GetFields(); d["outcome"].GetStringValue() != "unknown" || d["firstErrorCode"].GetStringValue() != "ABANDONED" {
					t.Errorf("details = %v, want outcome unknown, firstErrorCode ABANDONED", d)
				}
			}
			select {
			case <-entered:
				t.Error("the tool ran a second time for one key")
			default:
			}
			close(release)
			if err := <-first; err != nil {
				t.Errorf("first call: %v", err)
			}
		})
	}
}

// countedClaims counts the claims a store is asked for.
type countedClaims struct {
	store.IdempotencyStore
	n *atomic.Int64
}

func (c countedClaims) ClaimIdempotency(ctx context.Context, r *store.IdempotencyRecord) (*store.IdempotencyRecord, bool, error) {
	c.n.Add(1)
	return c.IdempotencyStore.ClaimIdempotency(ctx, r)
}

// TestRepeatWaitsWithoutPolling: a repeat of a keyed call that runs for
// 1.5 s gets its result without asking the store every 20 ms (75 times):
// on the same replica it waits for the first call's end, on another it
// looks again after a doubling pause (20 ms up to 500 ms).
func TestRepeatWaitsWithoutPolling(t *testing.T) {
	for _, tc := range []struct {
		name      string
		other     bool
		maxClaims int64
	}{
		{name: "same replica", maxClaims: 3},
		{name: "other replica", other: true, maxClaims: 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "keys.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			var claims atomic.Int64
			counted := countedClaims{st, &claims}
			entered := make(chan struct{}, 2)
			slowAdd := func(ctx context.Context, r *memoryv1.AddMemoryRequest) (*memoryv1.AddMemoryResponse, error) {
				entered <- struct{}{}
				time.Sleep(1500 * time.Millisecond)
				return goodAdd(ctx, r)
			}
			h1 := newHarness(t, func(c *interceptors.Config) { c.Idempotency = counted })
			h1.mem.add = slowAdd
			h2 := h1
			if tc.other {
				h2 = newHarness(t, func(c *interceptors.Config) { c.Idempotency = counted })
				h2.mem.add = slowAdd
			}
			ctx := metadata.AppendToOutgoingContext(as("full"), wire.HeaderIdempotencyKey, "key-wait")
			req := &memoryv1.AddMemoryRequest{Content: "deploys need a ticket"}
			first := make(chan error, 1)
			go func() {
				_, err := memoryv1.NewMemoryServiceClient(h1.ch).AddMemory(ctx, req)
				first <- err
			}()
			<-entered
			before := claims.Load()
			resp, err := memoryv1.NewMemoryServiceClient(h2.ch).AddMemory(ctx, req)
			if err != nil || !resp.GetMetadata().GetReplayed() {
				t.Fatalf("repeat: %v, replayed %v; want the first call's result", err, resp.GetMetadata().GetReplayed())
			}
			n := claims.Load() - before
			t.Logf("the repeat asked the store %d times", n)
			if n > tc.maxClaims {
				t.Errorf("the repeat asked the store %d times while it waited; want at most %d", n, tc.maxClaims)
			}
			if err := <-first; err != nil {
				t.Errorf("first call: %v", err)
			}
		})
	}
}
