package interceptors_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/contract/callctx"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/interceptors"
)

var testDeadlines = interceptors.Deadlines{Fast: time.Hour, Medium: 2 * time.Hour, Slow: 3 * time.Hour}

// deadlineSeen runs the deadline step for a tool of class and returns how
// far the handler's deadline was from its start, and the facts' deadline.
func deadlineSeen(t *testing.T, parent context.Context, class string) (time.Duration, time.Time, time.Time) {
	t.Helper()
	c := &interceptors.Call{Tool: memTool(t, searchMethod, func(tl *registry.Tool) { tl.Spec.ResponseTime = class })}
	var left time.Duration
	var dl time.Time
	next := &fakeNext{resp: func(ctx context.Context, _ any) (any, error) {
		d, ok := ctx.Deadline()
		if !ok {
			t.Fatal("the handler's context has no deadline")
		}
		dl, left = d, time.Until(d)
		return nil, nil
	}}
	if _, err := runStep(callctx.With(parent, &callctx.Facts{}), interceptors.DeadlineStep(testDeadlines), c, nil, next); err != nil {
		t.Fatal(err)
	}
	return left, dl, callctx.From(next.ctx).Deadline
}

func TestDeadlineByResponseTimeClass(t *testing.T) {
	for class, want := range map[string]time.Duration{"fast": testDeadlines.Fast, "medium": testDeadlines.Medium, "slow": testDeadlines.Slow, "": testDeadlines.Medium} {
		left, dl, facts := deadlineSeen(t, context.Background(), class)
		if left > want || left < want-time.Minute {
			t.Errorf("class %q: deadline in %v, want %v", class, left, want)
		}
		if !facts.Equal(dl) {
			t.Errorf("class %q: callctx deadline %v, want the context's %v", class, facts, dl)
		}
	}
}

func TestDeadlineCallersShorterDeadlineWins(t *testing.T) {
	parent, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	left, _, _ := deadlineSeen(t, parent, "slow")
	if left > time.Minute {
		t.Fatalf("deadline in %v, want the caller's minute", left)
	}
}

func TestDeadlineOnlyForTools(t *testing.T) {
	next := &fakeNext{resp: func(ctx context.Context, _ any) (any, error) {
		if _, ok := ctx.Deadline(); ok {
			t.Error("a call that is not a tool got a deadline")
		}
		return nil, nil
	}}
	if _, err := runStep(context.Background(), interceptors.DeadlineStep(testDeadlines), &interceptors.Call{}, nil, next); err != nil || next.count() != 1 {
		t.Fatalf("err %v, handler ran %d times", err, next.count())
	}
}

func TestDeadlineRunOutIsTimeoutUnlessTheToolSaidOtherwise(t *testing.T) {
	short := interceptors.Deadlines{Fast: 10 * time.Millisecond, Medium: 10 * time.Millisecond, Slow: 10 * time.Millisecond}
	tool := memTool(t, searchMethod, nil)
	typed := toolerr.New(toolerr.NotFound, "no such memory")
	for name, tc := range map[string]struct {
		err  error
		want toolerr.Code
	}{
		"plain context error": {context.DeadlineExceeded, toolerr.Timeout},
		"untyped error":       {errors.New("upstream: i/o timeout"), toolerr.Timeout},
		"INTERNAL":            {toolerr.New(toolerr.Internal, "boom"), toolerr.Timeout},
		"typed error kept":    {typed, toolerr.NotFound},
	} {
		t.Run(name, func(t *testing.T) {
			next := &fakeNext{resp: func(ctx context.Context, _ any) (any, error) {
				<-ctx.Done()
				return nil, tc.err
			}}
			_, err := runStep(context.Background(), interceptors.DeadlineStep(short), &interceptors.Call{Tool: tool}, nil, next)
			wantCode(t, err, tc.want)
		})
	}

	// An error before the deadline is the tool's own, whatever it is.
	next := &fakeNext{resp: func(context.Context, any) (any, error) { return nil, errors.New("disk full") }}
	_, err := runStep(context.Background(), interceptors.DeadlineStep(testDeadlines), &interceptors.Call{Tool: tool}, nil, next)
	if _, typed := toolerr.As(err); typed || err == nil {
		t.Fatalf("err %v, want the handler's untyped error unchanged", err)
	}
}

type sleepyAsker struct{ wait time.Duration }

func (a sleepyAsker) Ask(ctx context.Context, _ string, _ json.RawMessage) (json.RawMessage, error) {
	select {
	case <-time.After(a.wait):
		return json.RawMessage(`{"action":"accept"}`), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// A person answering a tool's question (elicitation, sampling) is not the
// tool being slow: the deadline's clock stops while the client answers,
// and runs again after; work after the answer still counts.
func TestDeadlineStopsWhileTheClientAnswers(t *testing.T) {
	short := interceptors.Deadlines{Fast: 150 * time.Millisecond, Medium: 150 * time.Millisecond, Slow: 150 * time.Millisecond}
	tool := memTool(t, searchMethod, nil)
	ask := func(work time.Duration) func(ctx context.Context, _ any) (any, error) {
		return func(ctx context.Context, _ any) (any, error) {
			if _, err := callctx.Ask(ctx, "elicitation/create", json.RawMessage(`{}`)); err != nil {
				return nil, err
			}
			select {
			case <-time.After(work):
				return "done", nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
	parent := callctx.WithAsker(context.Background(), sleepyAsker{wait: 400 * time.Millisecond})
	resp, err := runStep(parent, interceptors.DeadlineStep(short), &interceptors.Call{Tool: tool}, nil, &fakeNext{resp: ask(10 * time.Millisecond)})
	if err != nil || resp != "done" {
		t.Fatalf("an answer taking longer than the deadline: %v, %v; want the tool's result", resp, err)
	}
	_, err = runStep(parent, interceptors.DeadlineStep(short), &interceptors.Call{Tool: tool}, nil, &fakeNext{resp: ask(time.Second)})
	wantCode(t, err, toolerr.Timeout)

	// Without a question, the same wait is the tool's: TIMEOUT.
	_, err = runStep(parent, interceptors.DeadlineStep(short), &interceptors.Call{Tool: tool}, nil, &fakeNext{resp: func(ctx context.Context, _ any) (any, error) {
		select {
		case <-time.After(400 * time.Millisecond):
			return "done", nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}})
	wantCode(t, err, toolerr.Timeout)
}
