package budget

import (
	"context"
	"time"
)

// Charge is one budget a call must fit in: Cost units added to the counter
// Key of the current Window, which may hold at most Limit.
type Charge struct {
	// Key names the counter (the budget and whose it is); the store adds
	// its prefix and the window's start.
	Key string
	// Cost is what the call spends; 0 is free (always admitted, counted as
	// nothing).
	Cost int64
	// Limit is the most units the window may hold.
	Limit int64
	// Window is the window's length, at least a millisecond.
	Window time.Duration
}

// Outcome is a Spend's answer.
type Outcome struct {
	// Allowed reports whether every charge fitted; then all were added,
	// else none was.
	Allowed bool
	// Refused is the index of the first charge that did not fit; -1 when
	// Allowed.
	Refused int
	// Used is each counter's units after the call (Allowed), or the
	// refused counter's units only (Used[Refused]; the others 0).
	Used []int64
	// Resets is when each charge's window ends.
	Resets []time.Time
}

// Store checks and adds charges atomically.
type Store interface {
	// Spend adds every charge when each fits in its limit, or none.
	Spend(ctx context.Context, charges []Charge) (Outcome, error)
	// Used returns the units counted in the current window of key.
	Used(ctx context.Context, key string, window time.Duration) (used int64, resets time.Time, err error)
}

// windowStart is the start of the window of length w holding t, aligned to
// the Unix epoch.
func windowStart(t time.Time, w time.Duration) time.Time {
	ms := w.Milliseconds()
	if ms <= 0 {
		ms = 1
	}
	now := t.UnixMilli()
	return time.UnixMilli(now - now%ms)
}
