package sqlite

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// TestGateIsFirstComeFirstServed: callers that queue at a full gate get
// their turns in the order they arrived, which database/sql's pool (a
// random waiter per freed connection) does not guarantee.
func TestGateIsFirstComeFirstServed(t *testing.T) {
	g := newGate(1)
	leave, err := g.enter(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	const n = 20
	var (
		mu    sync.Mutex
		order []int
		wg    sync.WaitGroup
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := g.enter(context.Background())
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			l()
		}()
		// Let caller i block in the gate before i+1 arrives.
		time.Sleep(5 * time.Millisecond)
	}
	leave()
	wg.Wait()
	for i, got := range order {
		if got != i {
			t.Fatalf("turns taken in order %v, want arrival order", order)
		}
	}
}

// TestGateWaitEndsWithTheContext: a caller whose context ends while it
// waits gets the context's error and takes no turn.
func TestGateWaitEndsWithTheContext(t *testing.T) {
	g := newGate(1)
	leave, err := g.enter(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if _, err := g.enter(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("enter on a full gate = %v, want the deadline", err)
	}
	leave()
	l, err := g.enter(t.Context())
	if err != nil {
		t.Fatalf("enter after leave = %v", err)
	}
	l()
}
