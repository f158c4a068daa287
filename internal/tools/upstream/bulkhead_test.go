package upstream

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
)

func testBulkhead(max, failures int, openFor time.Duration) (*bulkhead, *time.Time) {
	now := time.Unix(1_000_000, 0)
	b := newBulkhead(Config{Name: "up", Serving: Serving{MaxInFlight: max, Circuit: Circuit{Failures: failures, OpenFor: openFor}}})
	b.now = func() time.Time { return now }
	return b, &now
}

func code(err error) toolerr.Code {
	var te *toolerr.Error
	if errors.As(err, &te) {
		return te.Code
	}
	return ""
}

// TestBulkheadBound: beyond max_in_flight a call is refused at once with
// RATE_LIMITED and a retry delay naming the upstream; a finished call
// frees its slot.
func TestBulkheadBound(t *testing.T) {
	b, _ := testBulkhead(2, 5, time.Second)
	d1, err1 := b.enter()
	d2, err2 := b.enter()
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	_, err := b.enter()
	var te *toolerr.Error
	if !errors.As(err, &te) || te.Code != toolerr.RateLimited || te.RetryAfter <= 0 || te.Details["upstream"] != "up" {
		t.Fatalf("third call: %v", err)
	}
	d1(context.Background(), nil)
	d3, err := b.enter()
	if err != nil {
		t.Fatalf("after a call finished: %v", err)
	}
	d2(context.Background(), nil)
	d3(context.Background(), nil)
	if s := b.snapshot(); s.InFlight != 0 || s.Rejected != 1 || s.Circuit != CircuitClosed {
		t.Fatalf("snapshot %+v", s)
	}
}

// TestCircuitBreaker: consecutive failures open the circuit, which answers
// at once with a retryable PROVIDER_ERROR naming the upstream; after
// open_for one probe goes through (the others are still refused); a failed
// probe opens it again, a successful one closes it. A success resets the
// count; errors that do not say the upstream is failing do not count.
func TestCircuitBreaker(t *testing.T) {
	b, now := testBulkhead(10, 3, 10*time.Second)
	ctx := context.Background()
	fail := func(err error) {
		t.Helper()
		done, e := b.enter()
		if e != nil {
			t.Fatalf("refused while closed: %v", e)
		}
		done(ctx, err)
	}
	unavailable := toolerr.New(toolerr.ProviderError, "upstream up is unavailable")
	fail(unavailable)
	fail(unavailable)
	fail(nil) // a success resets the count
	fail(unavailable)
	fail(toolerr.New(toolerr.InvalidInput, "bad")) // an answer: the upstream is up
	final := toolerr.New(toolerr.ProviderError, "the tool reported a failure")
	final.Final = true
	fail(final)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if done, e := b.enter(); e == nil {
		done(cancelled, toolerr.New(toolerr.Timeout, "cancelled")) // the caller went away
	}
	if s := b.snapshot(); s.Circuit != CircuitClosed {
		t.Fatalf("circuit %s after errors that do not count", s.Circuit)
	}
	fail(toolerr.New(toolerr.Timeout, "slow"))
	fail(unavailable)
	fail(unavailable)
	_, err := b.enter()
	var te *toolerr.Error
	if !errors.As(err, &te) || te.Code != toolerr.ProviderError || !te.Code.Retryable() || te.Final || te.Details["circuit"] != CircuitOpen || te.RetryAfter != 10*time.Second {
		t.Fatalf("open circuit answered %v", err)
	}
	*now = now.Add(10 * time.Second)
	probe, err := b.enter()
	if err != nil {
		t.Fatalf("half-open refused the probe: %v", err)
	}
	if _, err := b.enter(); code(err) != toolerr.ProviderError {
		t.Fatalf("a second call during the probe: %v", err)
	}
	probe(ctx, unavailable)
	if s := b.snapshot(); s.Circuit != CircuitOpen || s.Opened != 2 {
		t.Fatalf("after a failed probe: %+v", s)
	}
	*now = now.Add(10 * time.Second)
	probe, err = b.enter()
	if err != nil {
		t.Fatal(err)
	}
	probe(ctx, nil)
	if s := b.snapshot(); s.Circuit != CircuitClosed || s.ShortCircuited != 2 {
		t.Fatalf("after a good probe: %+v", s)
	}
}

// TestCircuitDisabled: failures -1 never opens the circuit.
func TestCircuitDisabled(t *testing.T) {
	b, _ := testBulkhead(10, -1, time.Second)
	for range 20 {
		done, err := b.enter()
		if err != nil {
			t.Fatal(err)
		}
		done(context.Background(), toolerr.New(toolerr.Timeout, "slow"))
	}
	if s := b.snapshot(); s.Circuit != "disabled" {
		t.Fatalf("circuit %s", s.Circuit)
	}
}
