// Package periodic runs toolsvc's background jobs: a job called at an
// interval until its context ends, the one loop and the one way to stop
// it behind every periodic task (reaping sessions, leasing tasks,
// checkpointing the WAL, pruning the audit trail, refreshing keys,
// following replicas, logging the pressure line).
package periodic

import (
	"context"
	"sync"
	"time"
)

// Option adjusts Run.
type Option func(*config)

type config struct {
	now  bool
	wake <-chan struct{}
}

// Now runs the job once at the start, before the first interval passes.
func Now() Option { return func(c *config) { c.now = true } }

// Wake runs the job also whenever ch receives, between intervals (a nudge
// from another replica, a write that wants the job soon).
func Wake(ch <-chan struct{}) Option { return func(c *config) { c.wake = ch } }

// Run calls job every interval until ctx ends and returns then. A job is
// never interrupted: it gets ctx and returns early when it sees ctx end.
// An interval of zero or less runs nothing: the job is off.
func Run(ctx context.Context, interval time.Duration, job func(context.Context), opts ...Option) {
	if interval <= 0 {
		return
	}
	var c config
	for _, o := range opts {
		o(&c)
	}
	if c.now && ctx.Err() == nil {
		job(ctx)
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-c.wake:
		}
		if ctx.Err() != nil {
			return
		}
		job(ctx)
	}
}

// Loop is Run in a goroutine of its own, for the job of an object that
// has a Close rather than a context (a store's checkpointer).
type Loop struct {
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// Start runs Run(ctx, interval, job, opts...) in a goroutine until Stop
// (or ctx ends).
func Start(ctx context.Context, interval time.Duration, job func(context.Context), opts ...Option) *Loop {
	ctx, cancel := context.WithCancel(ctx)
	l := &Loop{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		Run(ctx, interval, job, opts...)
	}()
	return l
}

// Stop ends the loop and waits for a running job to return. It may be
// called more than once.
func (l *Loop) Stop() {
	l.once.Do(l.cancel)
	<-l.done
}
