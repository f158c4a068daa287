package interceptors_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	memoryv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/memory/v1"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
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
			ctx := metadata.AppendToOutgoingContext(as("full"), interceptors.HeaderIdempotencyKey, "key-"+strings.ReplaceAll(tc.name, " ", "-"))
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
			ctx2 := metadata.AppendToOutgoingContext(as("full"), interceptors.HeaderIdempotencyKey, "new-"+strings.ReplaceAll(tc.name, " ", "-"))
			if _, err := client.AddMemory(ctx2, req); err != nil || writes != 2 {
				t.Errorf("a new key: err %v, tool ran %d time(s) in all; want 2", err, writes)
			}
		})
	}
	var _ store.IdempotencyStore = st
}

// agedClaims is the store as a repeat sees it long after the first call
// claimed its key: every claim found unfinished was made an hour ago.
type agedClaims struct{ store.IdempotencyStore }

func (a agedClaims) ClaimIdempotency(ctx context.Context, r *store.IdempotencyRecord) (*store.IdempotencyRecord, bool, error) {
	existing, claimed, err := a.IdempotencyStore.ClaimIdempotency(ctx, r)
	if existing != nil && !existing.Done {
		existing.CreatedAt = existing.CreatedAt.Add(-time.Hour)
	}
	return existing, claimed, err
}

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
	ctx := metadata.AppendToOutgoingContext(as("full"), interceptors.HeaderIdempotencyKey, "key-abandoned")
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
