package interceptors_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	memoryv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/memory/v1"
	"github.com/toolsvc/toolsvc/internal/interceptors"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/sqlite"
	"github.com/toolsvc/toolsvc/internal/toolerr"
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
