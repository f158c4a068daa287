package postgres

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/internal/backend"
)

// AppendAudit implements store.AuditStore.
func (s *Store) AppendAudit(ctx context.Context, e *store.AuditEvent) error {
	if err := backend.PrepareAudit(e, backend.Now()); err != nil {
		return err
	}
	err := s.pool.QueryRow(ctx, `INSERT INTO audit_events (at, tenant, tool, tool_version, subject, trace_id,
		correlation_id, transport, decision, reason, code, latency_ms)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING id`,
		e.At, e.Tenant, e.Tool, e.ToolVersion, e.Subject, e.TraceID, e.CorrelationID, e.Transport,
		e.Decision, e.Reason, e.Code, e.LatencyMs).Scan(&e.ID)
	return s.fail(ctx, "AppendAudit", err)
}

// ListAudit implements store.AuditStore with keyset pagination on (at, id):
// pages stay stable while events are appended.
func (s *Store) ListAudit(ctx context.Context, f store.AuditFilter) ([]store.AuditEvent, string, error) {
	pos, err := backend.PrepareAuditFilter(&f)
	if err != nil {
		return nil, "", err
	}
	var b strings.Builder
	args := []any{f.Tenant}
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	b.WriteString(`SELECT id, at, tenant, tool, tool_version, subject, trace_id, correlation_id, transport, decision,
		reason, code, latency_ms FROM audit_events WHERE tenant = $1`)
	for _, c := range []struct{ col, val string }{{"tool", f.Tool}, {"subject", f.Subject}, {"decision", f.Decision}} {
		if c.val != "" {
			b.WriteString(` AND ` + c.col + ` = ` + arg(c.val))
		}
	}
	if !f.Since.IsZero() {
		b.WriteString(` AND at >= ` + arg(backend.Normalize(f.Since)))
	}
	if !f.Until.IsZero() {
		b.WriteString(` AND at < ` + arg(backend.Normalize(f.Until)))
	}
	if !pos.IsZero() {
		b.WriteString(` AND (at, id) < (` + arg(backend.FromMicros(pos.AtMicros)) + `, ` + arg(pos.ID) + `)`)
	}
	b.WriteString(` ORDER BY at DESC, id DESC LIMIT ` + arg(f.Limit+1))

	rows, err := s.pool.Query(ctx, b.String(), args...)
	if err != nil {
		return nil, "", s.fail(ctx, "ListAudit", err)
	}
	events, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.AuditEvent, error) {
		var e store.AuditEvent
		err := r.Scan(&e.ID, &e.At, &e.Tenant, &e.Tool, &e.ToolVersion, &e.Subject, &e.TraceID,
			&e.CorrelationID, &e.Transport, &e.Decision, &e.Reason, &e.Code, &e.LatencyMs)
		e.At = backend.Normalize(e.At)
		return e, err
	})
	if err != nil {
		return nil, "", s.fail(ctx, "ListAudit", err)
	}
	if events == nil {
		events = []store.AuditEvent{}
	}
	if len(events) <= f.Limit {
		return events, "", nil
	}
	events = events[:f.Limit]
	last := events[len(events)-1]
	return events, backend.EncodeCursor(f, backend.Position{AtMicros: last.At.UnixMicro(), ID: last.ID}), nil
}

// AppendAudits implements store.AuditBatcher: several events in one
// transaction and one round trip (a pgx batch).
func (s *Store) AppendAudits(ctx context.Context, es []*store.AuditEvent) error {
	now := backend.Now()
	batch := &pgx.Batch{}
	for _, e := range es {
		if err := backend.PrepareAudit(e, now); err != nil {
			return err
		}
		e := e
		batch.Queue(`INSERT INTO audit_events (at, tenant, tool, tool_version, subject, trace_id,
			correlation_id, transport, decision, reason, code, latency_ms)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING id`,
			e.At, e.Tenant, e.Tool, e.ToolVersion, e.Subject, e.TraceID, e.CorrelationID, e.Transport,
			e.Decision, e.Reason, e.Code, e.LatencyMs).QueryRow(func(row pgx.Row) error { return row.Scan(&e.ID) })
	}
	return s.inTx(ctx, "AppendAudits", func(tx pgx.Tx) error {
		return s.fail(ctx, "AppendAudits", tx.SendBatch(ctx, batch).Close())
	})
}

// PruneAudit implements store.AuditPruner: it raises the retention cutoff
// (which the delete trigger of migration 0005 checks) and deletes the
// oldest events before it, walking the primary key from its start, where
// the oldest events are.
func (s *Store) PruneAudit(ctx context.Context, before time.Time, limit int) (int, error) {
	cut := backend.Normalize(before)
	var n int64
	err := s.inTx(ctx, "PruneAudit", func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE audit_retention SET cutoff = greatest(cutoff, $1)`, cut); err != nil {
			return s.fail(ctx, "PruneAudit", err)
		}
		tag, err := tx.Exec(ctx, `DELETE FROM audit_events WHERE id IN
			(SELECT id FROM audit_events WHERE at < $1 ORDER BY id LIMIT $2)`, cut, limit)
		if err != nil {
			return s.fail(ctx, "PruneAudit", err)
		}
		n = tag.RowsAffected()
		return nil
	})
	return int(n), err
}
