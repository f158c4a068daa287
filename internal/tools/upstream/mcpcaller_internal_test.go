package upstream

import (
	"context"
	"testing"
)

// TestQuestionFindsTheOneCallerRequest: a server's question that came with
// no related request belongs to the one caller's request in flight;
// toolsvc's own requests beside it (a listing read again after
// list_changed) do not make it ambiguous, and two callers' requests do.
func TestQuestionFindsTheOneCallerRequest(t *testing.T) {
	c := &mcpClient{calls: map[int64]*inflight{}, tokens: map[string]*inflight{}}
	call := &inflight{ctx: context.Background(), asks: true}
	c.track(1, "", call)
	c.track(2, "", &inflight{ctx: context.Background()}) // tools/list
	if got := c.caller(0); got != call {
		t.Fatalf("caller(0) = %p, want the tools/call %p", got, call)
	}
	c.track(3, "", &inflight{ctx: context.Background(), asks: true})
	if got := c.caller(0); got != nil {
		t.Fatalf("caller(0) with two callers' requests = %p, want none (ambiguous)", got)
	}
	if got := c.caller(2); got == nil || got.asks {
		t.Fatalf("caller(2), the related request, = %+v", got)
	}
}
