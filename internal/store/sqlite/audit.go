package sqlite

import (
	"context"
	"database/sql"
	"strings"

	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/internal/backend"
)

// AppendAudit implements store.AuditStore.
func (s *Store) AppendAudit(ctx context.Context, e *store.AuditEvent) error {
	if err := backend.PrepareAudit(e, backend.Now()); err != nil {
		return err
	}
	err := s.writer.QueryRowContext(ctx, `INSERT INTO audit_events (at, tenant, tool, tool_version, subject, trace_id,
		correlation_id, transport, decision, reason, code, latency_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		RETURNING id`,
		e.At.UnixMicro(), e.Tenant, e.Tool, e.ToolVersion, e.Subject, e.TraceID, e.CorrelationID, e.Transport,
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
	b.WriteString(`SELECT id, at, tenant, tool, tool_version, subject, trace_id, correlation_id, transport, decision,
		reason, code, latency_ms FROM audit_events WHERE tenant = ?`)
	for _, c := range []struct{ col, val string }{{"tool", f.Tool}, {"subject", f.Subject}, {"decision", f.Decision}} {
		if c.val != "" {
			b.WriteString(` AND ` + c.col + ` = ?`)
			args = append(args, c.val)
		}
	}
	if !f.Since.IsZero() {
		b.WriteString(` AND at >= ?`)
		args = append(args, f.Since.UnixMicro())
	}
	if !f.Until.IsZero() {
		b.WriteString(` AND at < ?`)
		args = append(args, f.Until.UnixMicro())
	}
	if !pos.IsZero() {
		b.WriteString(` AND (at < ? OR (at = ? AND id < ?))`)
		args = append(args, pos.AtMicros, pos.AtMicros, pos.ID)
	}
	b.WriteString(` ORDER BY at DESC, id DESC LIMIT ?`)
	args = append(args, f.Limit+1)

	rows, err := s.reader.QueryContext(ctx, b.String(), args...)
	if err != nil {
		return nil, "", s.fail(ctx, "ListAudit", err)
	}
	defer rows.Close()
	events := []store.AuditEvent{}
	for rows.Next() {
		var (
			e  store.AuditEvent
			at int64
		)
		if err := rows.Scan(&e.ID, &at, &e.Tenant, &e.Tool, &e.ToolVersion, &e.Subject, &e.TraceID,
			&e.CorrelationID, &e.Transport, &e.Decision, &e.Reason, &e.Code, &e.LatencyMs); err != nil {
			return nil, "", s.fail(ctx, "ListAudit", err)
		}
		e.At = backend.FromMicros(at)
		events = append(events, e)
	}
	if err := rows.Err(); err != nil {
		return nil, "", s.fail(ctx, "ListAudit", err)
	}
	if len(events) <= f.Limit {
		return events, "", nil
	}
	events = events[:f.Limit]
	last := events[len(events)-1]
	return events, backend.EncodeCursor(f, backend.Position{AtMicros: last.At.UnixMicro(), ID: last.ID}), nil
}

// AppendAudits implements store.AuditBatcher: several events in one
// transaction, so a busy service pays one commit per batch, not per call.
func (s *Store) AppendAudits(ctx context.Context, es []*store.AuditEvent) error {
	now := backend.Now()
	for _, e := range es {
		if err := backend.PrepareAudit(e, now); err != nil {
			return err
		}
	}
	return s.writeTx(ctx, "AppendAudits", func(tx *sql.Tx) error {
		ins, err := tx.PrepareContext(ctx, `INSERT INTO audit_events (at, tenant, tool, tool_version, subject, trace_id,
			correlation_id, transport, decision, reason, code, latency_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			RETURNING id`)
		if err != nil {
			return s.fail(ctx, "AppendAudits", err)
		}
		defer ins.Close()
		for _, e := range es {
			err := ins.QueryRowContext(ctx, e.At.UnixMicro(), e.Tenant, e.Tool, e.ToolVersion, e.Subject, e.TraceID,
				e.CorrelationID, e.Transport, e.Decision, e.Reason, e.Code, e.LatencyMs).Scan(&e.ID)
			if err != nil {
				return s.fail(ctx, "AppendAudits", err)
			}
		}
		return nil
	})
}
