// Package auditlog is the writer of the append-only audit trail
// (docs/CONTRACTS.md): records go through a bounded queue to one writer
// that stores them in batches, one transaction per batch (group commit),
// and it knows whether the audit store is failing. The interceptor chain
// decides what to record and what a call meets while the store fails; this
// package only writes. It sits beside the stores it writes to, below the
// chain, so anything that may import a store may write through it.
package auditlog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolsvc/toolsvc/internal/store"
)

// Failure is what the chain does when the audit store fails.
type Failure string

const (
	// FailClosed (the default) refuses calls with a retryable error
	// while the audit store fails: nothing is served that cannot be
	// audited, as Vault does.
	FailClosed Failure = "closed"
	// FailOpen serves calls while the audit store fails, counting every
	// call answered without a durable record
	// (toolsvc_audit_unaudited_total) and logging it at error level.
	FailOpen Failure = "open"
)

// ParseFailure parses the --audit-failure value ("" is closed).
func ParseFailure(s string) (Failure, error) {
	switch Failure(s) {
	case "", FailClosed:
		return FailClosed, nil
	case FailOpen:
		return FailOpen, nil
	}
	return "", fmt.Errorf("audit failure policy %q: want closed or open", s)
}

// Writer writes the audit trail. Records go through a bounded queue to
// one writer (Run) that writes them in batches, one transaction per batch
// (group commit):
//   - a record a caller waits for (Commit, the record of a call with side
//     effects) is written at once: callers that wait together share one
//     transaction, so the cost is one commit per batch, not per call;
//   - other records (Record) may linger up to linger to join a larger
//     batch.
//
// A full queue applies backpressure: a bounded wait, then ErrBusy, never
// a silent drop.
type Writer struct {
	store   store.AuditStore
	logger  *slog.Logger
	metrics metrics
	policy  Failure
	wait    time.Duration
	queue   chan item
	// failing is set by a failed write and cleared by a successful one.
	failing atomic.Bool
	// nudge ends the writer's linger early when the queue is filling up or
	// a caller waits for its record; stop ends it at Close.
	nudge, stop chan struct{}
	once        sync.Once
	// mu guards running and closed: Run writes until its context ends or
	// Close, and Close writes what Run left (all of it without Run).
	mu              sync.Mutex
	running, closed bool
	done            chan struct{}
}

// metrics are the writer's collectors.
type metrics struct {
	dropped, writeFailures prometheus.Counter
	failing                prometheus.Gauge
}

// item is one queued record; done, when set, receives the outcome of its
// write (buffered, so the writer never blocks on it).
type item struct {
	e    *store.AuditEvent
	done chan error
}

// queueCap is the capacity of the queue.
const queueCap = 4096

// DefaultQueueWait is how long a record waits for room in a full queue
// before it is refused.
const DefaultQueueWait = time.Second

// Option configures New.
type Option func(*Writer)

// WithFailure sets the policy the chain applies while the audit store
// fails (Policy); the writer names it in its logs. Default FailClosed.
func WithFailure(p Failure) Option {
	return func(w *Writer) { w.policy = p }
}

// WithQueueWait sets how long a record waits for room in a full queue
// before it is refused. Default DefaultQueueWait.
func WithQueueWait(d time.Duration) Option {
	return func(w *Writer) { w.wait = d }
}

// WithRegisterer registers the writer's collectors
// (toolsvc_audit_dropped_total, toolsvc_audit_write_failures_total,
// toolsvc_audit_store_failing) on reg. Default: not registered.
func WithRegisterer(reg prometheus.Registerer) Option {
	return func(w *Writer) {
		if reg != nil {
			reg.MustRegister(w.metrics.dropped, w.metrics.writeFailures, w.metrics.failing)
		}
	}
}

// New returns a writer of s; it starts nothing: Run writes, and Close
// writes what is left.
func New(s store.AuditStore, logger *slog.Logger, opts ...Option) *Writer {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	w := &Writer{store: s, logger: logger, policy: FailClosed, wait: DefaultQueueWait,
		queue: make(chan item, queueCap), nudge: make(chan struct{}, 1), stop: make(chan struct{}),
		done: make(chan struct{}),
		metrics: metrics{
			dropped:       prometheus.NewCounter(prometheus.CounterOpts{Name: "toolsvc_audit_dropped_total", Help: "Audit records that could not be written."}),
			writeFailures: prometheus.NewCounter(prometheus.CounterOpts{Name: "toolsvc_audit_write_failures_total", Help: "Failed writes (batches) to the audit store."}),
			failing:       prometheus.NewGauge(prometheus.GaugeOpts{Name: "toolsvc_audit_store_failing", Help: "1 while the last write to the audit store failed."}),
		}}
	for _, o := range opts {
		o(w)
	}
	return w
}

// maxBatch bounds how many queued records one transaction takes.
const maxBatch = 1024

// linger is how long the writer waits after a lingering record for more
// to join its batch. Without it a steady stream of read-only calls finds
// the queue nearly empty at each write and pays a commit, and with it an
// fsync, for almost every call, a large share of a get-sync-status call's
// CPU. Fewer commits also spare the readers of the same database from
// reloading changed pages, so a longer linger costs less CPU per call
// (measured: docs/BENCHMARKS.md, "Design measurements"). A record that a
// caller waits for ends the linger at once, and Close flushes at once.
const linger = 50 * time.Millisecond

// writeTimeout bounds one batch's write.
const writeTimeout = 5 * time.Second

// Run writes records in batches until ctx ends or Close is called, then
// writes what is queued and returns; records queued after that are
// written by Close. Woken by a lingering record it waits linger (less if
// the queue passes half full, a caller waits for its record, or the writer
// is stopping); woken by a record a caller waits for it writes at once.
// Either way it then takes everything queued, in transactions of up to
// maxBatch records when the store can batch: the records that queued
// while one write ran share the next (group commit). While it lingers it
// does not receive: a record is then a send into a buffer, not a hand-off
// that wakes the writer, which cost every call a goroutine wake-up when
// the writer received each one. Run runs once: a second call, or a call
// after Close, returns at once.
func (w *Writer) Run(ctx context.Context) {
	w.mu.Lock()
	if w.running || w.closed {
		w.mu.Unlock()
		return
	}
	w.running = true
	w.mu.Unlock()
	defer close(w.done)
	batcher, _ := w.store.(store.AuditBatcher)
	batch := make([]item, 0, maxBatch)
	lingering := time.NewTimer(linger)
	lingering.Stop()
	for {
		var it item
		var ok bool
		select {
		case it, ok = <-w.queue:
		case <-ctx.Done():
			w.flush(batcher, batch)
			return
		}
		if !ok {
			return
		}
		batch = append(batch[:0], it)
		if batcher != nil && it.done == nil {
			lingering.Reset(linger)
			select {
			case <-lingering.C:
			case <-w.nudge:
				lingering.Stop()
			case <-w.stop:
				lingering.Stop()
			case <-ctx.Done():
				lingering.Stop()
			}
		}
		batch = w.flush(batcher, batch)
	}
}

// flush writes batch and everything queued now, in batches of up to
// maxBatch, and returns batch emptied for reuse.
func (w *Writer) flush(batcher store.AuditBatcher, batch []item) []item {
	for {
		batch = w.drain(batch)
		full := len(batch) == maxBatch
		w.write(batcher, batch)
		clear(batch)
		batch = batch[:0]
		if !full {
			return batch
		}
	}
}

// drain appends queued records to batch, without waiting, until the queue
// is empty or closed or the batch holds maxBatch.
func (w *Writer) drain(batch []item) []item {
	for len(batch) < maxBatch {
		select {
		case next, ok := <-w.queue:
			if !ok {
				return batch
			}
			batch = append(batch, next)
		default:
			return batch
		}
	}
	return batch
}

// write stores batch (in one transaction when the store can batch),
// tells the waiting callers the outcome and tracks the store's health.
func (w *Writer) write(batcher store.AuditBatcher, batch []item) {
	if len(batch) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	var err error
	if batcher != nil && len(batch) > 1 {
		es := make([]*store.AuditEvent, len(batch))
		for i, it := range batch {
			es[i] = it.e
		}
		err = batcher.AppendAudits(ctx, es)
	} else {
		for _, it := range batch {
			if err = w.store.AppendAudit(ctx, it.e); err != nil {
				break
			}
		}
	}
	// The store's health is known before any waiting caller hears the
	// outcome, so a caller that is refused and calls again meets a
	// Failing writer (and is refused before its tool runs), never the
	// state before this batch.
	if err != nil {
		w.metrics.dropped.Add(float64(len(batch)))
		w.metrics.writeFailures.Inc()
		if !w.failing.Swap(true) {
			w.metrics.failing.Set(1)
		}
		w.logger.Error("audit write failed", slog.Int("records", len(batch)),
			slog.String("policy", string(w.policy)), slog.String("tool", batch[0].e.Tool),
			slog.String("trace_id", batch[0].e.TraceID), slog.String("error", err.Error()))
	} else if w.failing.Swap(false) {
		w.metrics.failing.Set(0)
		w.logger.Warn("audit store recovered", slog.Int("records", len(batch)))
	}
	for _, it := range batch {
		if it.done != nil {
			it.done <- err
		}
	}
}

// ErrBusy is a full queue that stayed full for the bounded wait.
var ErrBusy = errors.New("audit queue full")

// enqueue queues it, waiting up to w.wait for room in a full queue.
func (w *Writer) enqueue(it item) error {
	select {
	case w.queue <- it:
	default:
		t := time.NewTimer(w.wait)
		defer t.Stop()
		w.poke()
		select {
		case w.queue <- it:
		case <-t.C:
			return ErrBusy
		}
	}
	if it.done != nil || len(w.queue) >= queueCap/2 {
		w.poke()
	}
	return nil
}

// poke ends the writer's linger.
func (w *Writer) poke() {
	select {
	case w.nudge <- struct{}{}:
	default:
	}
}

// Record queues e to be written within the linger. It fails (ErrBusy,
// and counts the record as dropped) only when the queue stays full for
// the bounded wait.
func (w *Writer) Record(e *store.AuditEvent) error {
	err := w.enqueue(item{e: e})
	if err != nil {
		w.metrics.dropped.Inc()
		w.logger.Error("audit queue full; record refused", slog.String("tool", e.Tool), slog.String("trace_id", e.TraceID))
	}
	return err
}

// Commit queues e and returns once it is durable (nil), or the write's
// error, or ErrBusy after the bounded wait.
func (w *Writer) Commit(e *store.AuditEvent) error {
	done := make(chan error, 1)
	if err := w.enqueue(item{e: e, done: done}); err != nil {
		w.logger.Error("audit queue full; record refused", slog.String("tool", e.Tool), slog.String("trace_id", e.TraceID))
		return err
	}
	return <-done
}

// Failing reports whether the last write to the audit store failed.
func (w *Writer) Failing() bool { return w.failing.Load() }

// Policy is the policy the chain applies while the store fails.
func (w *Writer) Policy() Failure { return w.policy }

// Busy reports whether the queue is nearly full.
func (w *Writer) Busy() bool { return len(w.queue) >= queueCap*3/4 }

// WaitRoom waits up to the queue wait for the queue to drain below Busy,
// and reports whether it did (false too when ctx ends first).
func (w *Writer) WaitRoom(ctx context.Context) bool {
	w.poke()
	t := time.NewTimer(w.wait)
	defer t.Stop()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for w.Busy() {
		select {
		case <-tick.C:
		case <-t.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// Close stops accepting records and returns once every queued record is
// written: by Run, if it runs, else by Close itself.
func (w *Writer) Close() {
	w.mu.Lock()
	running := w.running
	w.closed = true
	w.mu.Unlock()
	w.once.Do(func() {
		close(w.stop)
		close(w.queue)
	})
	if running {
		<-w.done
	}
	batcher, _ := w.store.(store.AuditBatcher)
	w.flush(batcher, nil)
}
