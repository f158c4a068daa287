package callctx

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"
)

// AnswerWait bounds how long one question put to the call's client (the
// user reading a form, opening a URL, the client's model answering) may
// wait for its answer. It is as long as a 2026-07-28 client's follow-up
// may take (the MCP transport's bound).
const AnswerWait = 10 * time.Minute

// ErrNoAnswer is the cause of a context ended by WithDeadlineBetweenQuestions
// because the client did not answer a question within AnswerWait.
var ErrNoAnswer = errors.New("the client did not answer the question in time")

// WithDeadlineBetweenQuestions is ctx bounded by d of the call's own time:
// while a question of the call waits for the client's answer (Ask through
// the returned context), the clock is stopped and AnswerWait bounds the
// wait instead. A person's answer time is not a tool's slowness. Without
// an Asker in ctx it is context.WithTimeout. ctx ends with cause
// context.DeadlineExceeded when the call takes too long, ErrNoAnswer when
// the client does.
func WithDeadlineBetweenQuestions(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	next := AskerOf(ctx)
	if next == nil {
		return context.WithTimeout(ctx, d)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	now := time.Now()
	k := &questionClock{cancel: cancel, left: d, started: now, next: next}
	k.timer = time.AfterFunc(d, func() { cancel(context.DeadlineExceeded) })
	if time.Until(now.Add(d)) <= 0 {
		// As context.WithTimeout: a deadline already past ends the call
		// now, not whenever the timer's goroutine runs.
		cancel(context.DeadlineExceeded)
	}
	return WithAsker(ctx, k), func() {
		k.mu.Lock()
		k.timer.Stop()
		k.mu.Unlock()
		cancel(context.Canceled)
	}
}

// questionClock is the deadline of WithDeadlineBetweenQuestions.
type questionClock struct {
	mu      sync.Mutex
	cancel  context.CancelCauseFunc
	timer   *time.Timer
	left    time.Duration // of the call's time, when the clock last started
	started time.Time
	asking  int
	next    Asker
}

// ElicitationComplete tells the call's client, if it can be told, that a
// URL-mode elicitation it was asked has completed.
func (k *questionClock) ElicitationComplete(elicitationID string) {
	if to, ok := k.next.(ElicitationCompleter); ok {
		to.ElicitationComplete(elicitationID)
	}
}

// Ask puts the question to the client with the clock stopped.
func (k *questionClock) Ask(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	k.mu.Lock()
	if k.asking == 0 && k.timer.Stop() {
		k.left -= time.Since(k.started)
		k.timer = time.AfterFunc(AnswerWait, func() { k.cancel(ErrNoAnswer) })
	}
	k.asking++
	k.mu.Unlock()
	defer func() {
		k.mu.Lock()
		defer k.mu.Unlock()
		if k.asking--; k.asking == 0 && k.timer.Stop() {
			k.started = time.Now()
			k.timer = time.AfterFunc(max(k.left, 0), func() { k.cancel(context.DeadlineExceeded) })
		}
	}()
	return k.next.Ask(ctx, method, params)
}
