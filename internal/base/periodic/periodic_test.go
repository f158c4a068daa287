package periodic_test

import (
	"context"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/base/periodic"
)

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 5s", what)
		}
	}
}

func TestRunRepeatsUntilTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	var n atomic.Int32
	done := make(chan struct{})
	go func() {
		defer close(done)
		periodic.Run(ctx, time.Millisecond, func(context.Context) { n.Add(1) })
	}()
	waitFor(t, "three runs", func() bool { return n.Load() >= 3 })
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	after := n.Load()
	time.Sleep(10 * time.Millisecond)
	if n.Load() != after {
		t.Error("the job ran after Run returned")
	}
}

func TestNowRunsBeforeTheFirstInterval(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	var n atomic.Int32
	periodic.Run(ctx, time.Hour, func(context.Context) { n.Add(1) }, periodic.Now())
	if n.Load() != 1 {
		t.Errorf("ran %d times in the first hour with Now, want 1", n.Load())
	}
	n.Store(0)
	ctx2, cancel2 := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel2()
	periodic.Run(ctx2, time.Hour, func(context.Context) { n.Add(1) })
	if n.Load() != 0 {
		t.Errorf("ran %d times in the first hour without Now, want 0", n.Load())
	}
}

func TestWakeRunsBetweenIntervals(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	wake := make(chan struct{}, 1)
	var n atomic.Int32
	go periodic.Run(ctx, time.Hour, func(context.Context) { n.Add(1) }, periodic.Wake(wake))
	wake <- struct{}{}
	waitFor(t, "a woken run", func() bool { return n.Load() == 1 })
	wake <- struct{}{}
	waitFor(t, "a second woken run", func() bool { return n.Load() == 2 })
}

func TestOffWhenTheIntervalIsZero(t *testing.T) {
	var n atomic.Int32
	periodic.Run(t.Context(), 0, func(context.Context) { n.Add(1) }, periodic.Now())
	if n.Load() != 0 {
		t.Error("a job with interval 0 ran")
	}
}

// TestStopWaitsForTheRunningJob: Stop returns only after a job in
// progress has returned (it sees its context end), is safe twice, and
// leaves no goroutine of the loop behind.
func TestStopWaitsForTheRunningJob(t *testing.T) {
	started := make(chan struct{})
	var finished atomic.Bool
	l := periodic.Start(t.Context(), time.Millisecond, func(ctx context.Context) {
		select {
		case started <- struct{}{}:
		default:
		}
		<-ctx.Done()
		time.Sleep(20 * time.Millisecond)
		finished.Store(true)
	})
	<-started
	l.Stop()
	if !finished.Load() {
		t.Error("Stop returned while the job was running")
	}
	l.Stop()
	waitFor(t, "the loop's goroutine to end", func() bool {
		buf := make([]byte, 1<<20)
		return !strings.Contains(string(buf[:runtime.Stack(buf, true)]), "periodic.Start")
	})
}
