package callctx_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/contract/callctx"
)

type silentAsker struct{}

func (silentAsker) Ask(context.Context, string, json.RawMessage) (json.RawMessage, error) {
	return nil, errors.New("not asked")
}

// TestDeadlineAlreadyPastEndsTheCallAtOnce: a call that may ask questions
// gets the stoppable clock; a deadline that has passed when it starts ends
// the call before the handler runs, as context.WithTimeout does, instead of
// whenever the timer's goroutine is scheduled.
func TestDeadlineAlreadyPastEndsTheCallAtOnce(t *testing.T) {
	ctx := callctx.WithAsker(t.Context(), silentAsker{})
	for range 100 {
		c, cancel := callctx.WithDeadlineBetweenQuestions(ctx, time.Nanosecond)
		err := c.Err()
		cause := context.Cause(c)
		cancel()
		if err == nil || !errors.Is(cause, context.DeadlineExceeded) {
			t.Fatalf("a 1 ns deadline: Err %v, cause %v; want the call ended by its deadline at once", err, cause)
		}
	}
	c, cancel := callctx.WithDeadlineBetweenQuestions(ctx, time.Minute)
	defer cancel()
	if c.Err() != nil {
		t.Fatalf("a minute's deadline ended the call at once: %v", c.Err())
	}
}
