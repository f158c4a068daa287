package reliability

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/interceptors"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// TestKilledReplicasKeyedCallAnsweredWithinTheLease: a keyed sync-knowledge
// (deadline 60 s) is running on replica r1 — stuck in its embedding phase
// on an embeddings endpoint that never answers — when r1 is SIGKILLed. The
// same call repeated with the same key on replica r2 (same PostgreSQL) is
// answered "outcome unknown" (CONFLICT, not retryable, firstErrorCode
// ABANDONED) once r1's lease on the key lapses, well before the tool's
// deadline (it used to wait the whole 60 s, then say "still
// running").
func TestKilledReplicasKeyedCallAnsweredWithinTheLease(t *testing.T) {
	dsn := testserver.PostgresDSN(t)
	hit := make(chan struct{}, 1)
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case hit <- struct{}{}:
		default:
		}
		select {
		case <-r.Context().Done():
		case <-release:
		}
		http.Error(w, "never", http.StatusServiceUnavailable)
	}))
	defer hang.Close()
	defer close(release)

	r1 := newProcConfig(t, "--db", dsn, "--embeddings-url", hang.URL+"/v1/embeddings").start(t)
	r2 := newProcConfig(t, "--db", dsn).start(t)
	headers := map[string]string{"idempotency-key": "sync-killed-mid-call"}
	args := map[string]any{"force": true}

	first := make(chan outcome, 1)
	conn1 := r1.dial(t)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		o, err := grpcCall(ctx, conn1, "", "sync-knowledge", args, headers)
		if err != nil {
			o.Code, o.Message = "RPC_ERROR", err.Error()
		}
		first <- o
	}()
	select {
	case <-hit: // the sync wrote its pointers and waits for their embeddings
	case o := <-first:
		t.Fatalf("the first sync ended before the kill: %+v", o)
	case <-time.After(60 * time.Second):
		t.Fatalf("the first sync never reached the embeddings endpoint:\n%s", r1.Logs.String())
	}
	r1.kill()
	killed := time.Now()
	if o := <-first; o.Code == "OK" {
		t.Fatalf("the first sync answered OK though its replica was killed mid-call: %+v", o)
	}

	// Bounded below the tool's deadline: on the code before the lease, the
	// repeat waited for it (60 s) and then said "still running".
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	o, err := grpcCall(ctx, r2.dial(t), "", "sync-knowledge", args, headers)
	took := time.Since(killed)
	t.Logf("repeat on r2 answered %s after %s from the SIGKILL (lease %s, deadline %s)",
		o.Code, took.Round(time.Millisecond), interceptors.DefaultIdempotencyLease, interceptors.DefaultDeadlines.Slow)
	if err != nil {
		t.Fatalf("repeat on r2: %v", err)
	}
	details, _ := o.Error["details"].(map[string]any)
	if o.Code != "CONFLICT" || o.Error["retryable"] == true ||
		details["outcome"] != "unknown" || details["firstErrorCode"] != "ABANDONED" {
		t.Fatalf("repeat on r2 = %s %q %v; want CONFLICT, not retryable, outcome unknown, firstErrorCode ABANDONED", o.Code, o.Message, o.Error)
	}
	if limit := interceptors.DefaultIdempotencyLease + 10*time.Second; took > limit {
		t.Errorf("repeat answered %s after the SIGKILL; want within the lease (%s) and some slack, %s", took, interceptors.DefaultIdempotencyLease, limit)
	}
}
