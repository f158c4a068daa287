package interceptors

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/toolerr"
)

// Auditor writes the append-only audit trail (seed 003) off the call path:
// records go through a bounded queue to one writer, so auditing adds no
// latency and a failed or slow audit write never fails a call (it is logged
// and counted as dropped instead).
type Auditor struct {
	store   store.AuditStore
	logger  *slog.Logger
	metrics *Metrics
	queue   chan *store.AuditEvent
	// nudge ends the writer's linger early when the queue is filling up;
	// stop ends it at Close.
	nudge, stop chan struct{}
	done        chan struct{}
	once        sync.Once
}

// auditQueue is the capacity of the queue; a record that finds it full is
// dropped and counted.
const auditQueue = 4096

// NewAuditor starts the writer. Close flushes what is queued.
func NewAuditor(s store.AuditStore, logger *slog.Logger, m *Metrics) *Auditor {
	a := &Auditor{store: s, logger: logger, metrics: m, queue: make(chan *store.AuditEvent, auditQueue),
		nudge: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go a.run()
	return a
}

// maxAuditBatch bounds how many queued records one transaction takes.
const maxAuditBatch = 1024

// auditLinger is how long the writer waits after a record for more to
// join its batch (group commit). Without it a steady stream of calls
// finds the queue nearly empty at each write and pays a commit, and with
// it an fsync, for almost every call: at concurrency 1 that was a quarter
// of a get-sync-status call's CPU. Fewer commits also spare the readers of
// the same database from reloading changed pages; 50 ms cost a tenth less
// CPU per call than 10 ms at 64 calls in flight (BenchmarkGRPCSyncStatus).
// Records reach the store within that time, and Close flushes at once.
const auditLinger = 50 * time.Millisecond

// run writes records in batches: woken by the first record, it waits
// auditLinger (less if the queue passes half full or Close is called),
// then takes everything queued, in transactions of up to maxAuditBatch
// records when the store can batch, so a busy service pays one commit per
// batch, not per call. While it lingers it does not receive: a record is
// then a send into a buffer, not a hand-off that wakes the writer, which
// cost every call a goroutine wake-up when the writer received each one.
func (a *Auditor) run() {
	defer close(a.done)
	batcher, _ := a.store.(store.AuditBatcher)
	batch := make([]*store.AuditEvent, 0, maxAuditBatch)
	linger := time.NewTimer(auditLinger)
	linger.Stop()
	for e := range a.queue {
		batch = append(batch[:0], e)
		if batcher == nil {
			a.write(nil, batch)
			continue
		}
		linger.Reset(auditLinger)
		select {
		case <-linger.C:
		case <-a.nudge:
			linger.Stop()
		case <-a.stop:
			linger.Stop()
		}
		for {
			batch = a.drain(batch)
			full := len(batch) == maxAuditBatch
			a.write(batcher, batch)
			batch = batch[:0]
			if !full {
				break
			}
		}
	}
}

// drain appends queued records to batch, without waiting, until the queue
// is empty or closed or the batch holds maxAuditBatch.
func (a *Auditor) drain(batch []*store.AuditEvent) []*store.AuditEvent {
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

func (a *Auditor) write(batcher store.AuditBatcher, batch []*store.AuditEvent) {
	if len(batch) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var err error
	if batcher != nil && len(batch) > 1 {
		err = batcher.AppendAudits(ctx, batch)
	} else {
		err = a.store.AppendAudit(ctx, batch[0])
	}
	if err != nil {
		a.metrics.auditDrop.Add(float64(len(batch)))
		a.logger.Warn("audit write failed", slog.Int("records", len(batch)), slog.String("tool", batch[0].Tool),
			slog.String("trace_id", batch[0].TraceID), slog.String("error", err.Error()))
	}
}

// Record queues e; when the queue is full the record is dropped and counted.
func (a *Auditor) Record(e *store.AuditEvent) {
	select {
	case a.queue <- e:
		if len(a.queue) >= auditQueue/2 {
			select {
			case a.nudge <- struct{}{}:
			default:
			}
		}
	default:
		a.metrics.auditDrop.Inc()
		a.logger.Warn("audit queue full; record dropped", slog.String("tool", e.Tool), slog.String("trace_id", e.TraceID))
	}
}

// Close stops accepting records and waits until the queue is written.
func (a *Auditor) Close() {
	a.once.Do(func() {
		close(a.stop)
		close(a.queue)
	})
	<-a.done
}

// audit records every allow and every deny of a tool call: tool, version,
// subject, tenant, trace id, decision, reason, code and latency — never
// inputs or secrets.
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
		e := &store.AuditEvent{
			At: c.Start.UTC(), Tool: name, ToolVersion: version, TraceID: c.Context.GetTraceId(),
			CorrelationID: c.Context.GetCorrelationId(), Transport: c.Transport, Decision: decision, Reason: reason,
			Code: code, LatencyMs: float64(time.Since(c.Start).Microseconds()) / 1000,
		}
		e.Subject, e.Tenant = c.Principal.Subject, c.Principal.Tenant
		a.Record(e)
		return resp, err
	}
}
