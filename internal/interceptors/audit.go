package interceptors

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"

	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/store"
)

// AuditFailure is what the chain does when the audit store fails.
type AuditFailure string

const (
	// AuditFailClosed (the default) refuses calls with a retryable error
	// while the audit store fails: nothing is served that cannot be
	// audited, as Vault does.
	AuditFailClosed AuditFailure = "closed"
	// AuditFailOpen serves calls while the audit store fails, counting
	// every call answered without a durable record
	// (toolsvc_audit_unaudited_total) and logging it at error level.
	AuditFailOpen AuditFailure = "open"
)

// ParseAuditFailure parses the --audit-failure value ("" is closed).
func ParseAuditFailure(s string) (AuditFailure, error) {
	switch AuditFailure(s) {
	case "", AuditFailClosed:
		return AuditFailClosed, nil
	case AuditFailOpen:
		return AuditFailOpen, nil
	}
	return "", fmt.Errorf("audit failure policy %q: want closed or open", s)
}

// Auditor writes the append-only audit trail (docs/CONTRACTS.md). Records go
// through a bounded queue to one writer that writes them in batches, one
// transaction per batch (group commit):
//   - a call with side effects (a tool whose definition is not read-only)
//     is answered only once its record is durable (Commit): callers that
//     wait together share one transaction, so the cost is one commit per
//     batch, not per call;
//   - the records of read-only calls and of denials (Record) may linger up
//     to auditLinger to join a larger batch.
//
// A full queue applies backpressure: a bounded wait, then a retryable
// error, never a silent drop. While the store fails, the policy
// (AuditFailure) decides whether calls are refused or served.
type Auditor struct {
	store   store.AuditStore
	logger  *slog.Logger
	metrics *Metrics
	policy  AuditFailure
	wait    time.Duration
	queue   chan auditItem
	// failing is set by a failed write and cleared by a successful one.
	failing atomic.Bool
	// nudge ends the writer's linger early when the queue is filling up or
	// a caller waits for its record; stop ends it at Close.
	nudge, stop chan struct{}
	done        chan struct{}
	once        sync.Once
}

// auditItem is one queued record; done, when set, receives the outcome of
// its write (buffered, so the writer never blocks on it).
type auditItem struct {
	e    *store.AuditEvent
	done chan error
}

// auditQueue is the capacity of the queue.
const auditQueue = 4096

// DefaultAuditQueueWait is how long a record waits for room in a full
// queue before the call is refused.
const DefaultAuditQueueWait = time.Second

// AuditorOption configures NewAuditor.
type AuditorOption func(*Auditor)

// WithAuditFailure sets the policy while the audit store fails. Default
// AuditFailClosed.
func WithAuditFailure(p AuditFailure) AuditorOption {
	return func(a *Auditor) { a.policy = p }
}

// WithAuditQueueWait sets how long a record waits for room in a full
// queue before the call is refused. Default DefaultAuditQueueWait.
func WithAuditQueueWait(d time.Duration) AuditorOption {
	return func(a *Auditor) { a.wait = d }
}

// NewAuditor starts the writer. Close flushes what is queued.
func NewAuditor(s store.AuditStore, logger *slog.Logger, m *Metrics, opts ...AuditorOption) *Auditor {
	a := &Auditor{store: s, logger: logger, metrics: m, policy: AuditFailClosed, wait: DefaultAuditQueueWait,
		queue: make(chan auditItem, auditQueue), nudge: make(chan struct{}, 1), stop: make(chan struct{}),
		done: make(chan struct{})}
	for _, o := range opts {
		o(a)
	}
	go a.run()
	return a
}

// maxAuditBatch bounds how many queued records one transaction takes.
const maxAuditBatch = 1024

// auditLinger is how long the writer waits after a lingering record for
// more to join its batch. Without it a steady stream of read-only calls
// finds the queue nearly empty at each write and pays a commit, and with
// it an fsync, for almost every call, a large share of a get-sync-status
// call's CPU. Fewer commits also spare the readers of the same database
// from reloading changed pages, so a longer linger costs less CPU per call
// (measured: docs/BENCHMARKS.md, "Design measurements").
// A record that a caller waits for ends the linger at once, and Close
// flushes at once.
const auditLinger = 50 * time.Millisecond

// auditWriteTimeout bounds one batch's write.
const auditWriteTimeout = 5 * time.Second

// run writes records in batches. Woken by a lingering record it waits
// auditLinger (less if the queue passes half full, a caller waits for its
// record, or Close is called); woken by a record a caller waits for it
// writes at once. Either way it then takes everything queued, in
// transactions of up to maxAuditBatch records when the store can batch:
// the records that queued while one write ran share the next (group
// commit). While it lingers it does not receive: a record is then a send
// into a buffer, not a hand-off that wakes the writer, which cost every
// call a goroutine wake-up when the writer received each one.
func (a *Auditor) run() {
	defer close(a.done)
	batcher, _ := a.store.(store.AuditBatcher)
	batch := make([]auditItem, 0, maxAuditBatch)
	linger := time.NewTimer(auditLinger)
	linger.Stop()
	for it := range a.queue {
		batch = append(batch[:0], it)
		if batcher != nil && it.done == nil {
			linger.Reset(auditLinger)
			select {
			case <-linger.C:
			case <-a.nudge:
				linger.Stop()
			case <-a.stop:
				linger.Stop()
			}
		}
		for {
			batch = a.drain(batch)
			full := len(batch) == maxAuditBatch
			a.write(batcher, batch)
			clear(batch)
			batch = batch[:0]
			if !full {
				break
			}
		}
	}
}

// drain appends queued records to batch, without waiting, until the queue
// is empty or closed or the batch holds maxAuditBatch.
func (a *Auditor) drain(batch []auditItem) []auditItem {
	for len(batch) < maxAuditBatch {
		select {
		case next, ok := <-a.queue:
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
func (a *Auditor) write(batcher store.AuditBatcher, batch []auditItem) {
	if len(batch) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), auditWriteTimeout)
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
			if err = a.store.AppendAudit(ctx, it.e); err != nil {
				break
			}
		}
	}
	// The store's health is known before any waiting caller hears the
	// outcome, so a caller that is refused and calls again meets a
	// Failing auditor (and is refused before its tool runs), never the
	// state before this batch.
	if err != nil {
		a.metrics.auditDrop.Add(float64(len(batch)))
		a.metrics.auditWriteFailures.Inc()
		if !a.failing.Swap(true) {
			a.metrics.auditFailing.Set(1)
		}
		a.logger.Error("audit write failed", slog.Int("records", len(batch)),
			slog.String("policy", string(a.policy)), slog.String("tool", batch[0].e.Tool),
			slog.String("trace_id", batch[0].e.TraceID), slog.String("error", err.Error()))
	} else if a.failing.Swap(false) {
		a.metrics.auditFailing.Set(0)
		a.logger.Warn("audit store recovered", slog.Int("records", len(batch)))
	}
	for _, it := range batch {
		if it.done != nil {
			it.done <- err
		}
	}
}

// errAuditBusy is a full queue that stayed full for the bounded wait.
var errAuditBusy = errors.New("audit queue full")

// enqueue queues it, waiting up to a.wait for room in a full queue.
func (a *Auditor) enqueue(it auditItem) error {
	select {
	case a.queue <- it:
	default:
		t := time.NewTimer(a.wait)
		defer t.Stop()
		a.poke()
		select {
		case a.queue <- it:
		case <-t.C:
			return errAuditBusy
		}
	}
	if it.done != nil || len(a.queue) >= auditQueue/2 {
		a.poke()
	}
	return nil
}

// poke ends the writer's linger.
func (a *Auditor) poke() {
	select {
	case a.nudge <- struct{}{}:
	default:
	}
}

// Record queues e to be written within auditLinger. It fails (and counts
// the record as dropped) only when the queue stays full for the bounded
// wait.
func (a *Auditor) Record(e *store.AuditEvent) error {
	err := a.enqueue(auditItem{e: e})
	if err != nil {
		a.metrics.auditDrop.Inc()
		a.logger.Error("audit queue full; record refused", slog.String("tool", e.Tool), slog.String("trace_id", e.TraceID))
	}
	return err
}

// Commit queues e and returns once it is durable (nil), or the write's
// error, or the queue's after the bounded wait.
func (a *Auditor) Commit(e *store.AuditEvent) error {
	done := make(chan error, 1)
	if err := a.enqueue(auditItem{e: e, done: done}); err != nil {
		a.logger.Error("audit queue full; record refused", slog.String("tool", e.Tool), slog.String("trace_id", e.TraceID))
		return err
	}
	return <-done
}

// Failing reports whether the last write to the audit store failed.
func (a *Auditor) Failing() bool { return a.failing.Load() }

// busy reports whether the queue is nearly full.
func (a *Auditor) busy() bool { return len(a.queue) >= auditQueue*3/4 }

// Close stops accepting records and waits until the queue is written.
func (a *Auditor) Close() {
	a.once.Do(func() {
		close(a.stop)
		close(a.queue)
	})
	<-a.done
}

// Reasons of calls refused for the audit trail's sake.
const (
	reasonAuditUnavailable = "audit_unavailable"
	reasonAuditBusy        = "audit_busy"
)

// auditRetryAfter is the retry hint of a call refused for the audit
// trail's sake.
const auditRetryAfter = time.Second

// errAuditUnavailable is the refusal of a call that cannot be audited.
func errAuditUnavailable(cause error, applied bool) *toolerr.Error {
	msg := "the audit trail is unavailable, so the call was not served; retry later"
	reason := reasonAuditUnavailable
	if errors.Is(cause, errAuditBusy) {
		msg, reason = "the audit trail is overloaded, so the call was not served; retry later", reasonAuditBusy
	}
	if applied {
		msg = "the call's effect may have been applied but its audit record could not be written; retry later"
	}
	e := toolerr.Wrap(cause, toolerr.ProviderError, "%s", msg).WithDetails(map[string]any{"reason": reason})
	e.RetryAfter = auditRetryAfter
	return e
}

// auditGate refuses a call before it can have any effect when it could not
// be audited: in AuditFailClosed while the audit store fails (the refusal's
// own record probes the store, so the gate opens with the first write that
// succeeds), and under either policy while the queue is nearly full, after
// a bounded wait for room. It sits after policy, so denials stay what they
// are, and before the rate limit, so refused calls spend no budget.
func auditGate(a *Auditor) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
		c := CallFrom(ctx)
		if c == nil || c.Tool == nil {
			return next(ctx, req)
		}
		if a.policy == AuditFailClosed && a.Failing() {
			c.Decision, c.Reason = "deny", reasonAuditUnavailable
			return nil, errAuditUnavailable(nil, false)
		}
		if a.busy() {
			if !a.waitRoom(ctx) {
				c.Decision, c.Reason = "deny", reasonAuditBusy
				return nil, errAuditUnavailable(errAuditBusy, false)
			}
		}
		return next(ctx, req)
	}
}

// waitRoom waits up to a.wait for the queue to drain below busy.
func (a *Auditor) waitRoom(ctx context.Context) bool {
	a.poke()
	t := time.NewTimer(a.wait)
	defer t.Stop()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for a.busy() {
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

// sideEffect reports whether the call's record must be durable before it
// is answered: a tool whose definition is not read-only that the chain let
// through to its handler.
func (c *Call) sideEffect() bool {
	return c.Tool != nil && !c.Tool.Spec.GetReadOnly() && (c.Decision == "allow" || c.Decision == "error")
}

// audit records every allow and every deny of a tool call: tool, version,
// subject, tenant, trace id, decision, reason, code and latency — never
// inputs or secrets. A call with side effects is answered only once its
// record is durable; when it cannot be, AuditFailClosed answers a
// retryable error instead of the result, AuditFailOpen the result, counted
// and logged.
func audit(a *Auditor) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
		resp, err := next(ctx, req)
		c := CallFrom(ctx)
		name, version := c.unknownTool, ""
		if c.Tool != nil {
			name, version = c.Tool.Name, c.Tool.Version
		}
		// Not tools (listings, health) are not audited; nor are failed
		// authentications, which are counted and logged at a bounded rate
		// by the auth step instead, so that an unauthenticated flood cannot
		// fill the audit store.
		if name == "" || c.Principal == nil {
			return resp, err
		}
		code := "OK"
		if err != nil {
			code = string(toolerr.Classify(err).Code)
		}
		decision, reason := c.Decision, c.Reason
		switch {
		case decision == "" && err != nil:
			decision, reason = "deny", code
		case decision == "allow" && err != nil:
			decision, reason = "error", code
		}
		c.Decision, c.Reason = decision, reason
		e := &store.AuditEvent{
			At: c.Start.UTC(), Tool: name, ToolVersion: version, TraceID: c.Context.GetTraceId(),
			CorrelationID: c.Context.GetCorrelationId(), Transport: c.Transport, Decision: decision, Reason: reason,
			Code: code, LatencyMs: float64(time.Since(c.Start).Microseconds()) / 1000,
		}
		e.Subject, e.Tenant = c.Principal.Subject, c.Principal.Tenant
		if !c.sideEffect() {
			if rerr := a.Record(e); rerr != nil && err == nil && a.policy == AuditFailClosed {
				return nil, errAuditUnavailable(rerr, false)
			}
			return resp, err
		}
		cerr := a.Commit(e)
		if cerr == nil || err != nil {
			return resp, err
		}
		if a.policy == AuditFailOpen {
			a.metrics.auditUnaudited.Inc()
			a.logger.Error("call answered without a durable audit record (--audit-failure=open)",
				slog.String("tool", name), slog.String("subject", e.Subject), slog.String("tenant", e.Tenant),
				slog.String("trace_id", e.TraceID), slog.String("error", cerr.Error()))
			return resp, err
		}
		return nil, errAuditUnavailable(cerr, true)
	}
}
