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

// AppendAudit implements store.AuditStore. Events are appended to
// audit_incoming, a heap without indexes; IndexAudit moves them into
// audit_events behind the writer (migration 0013).
func (s *Store) AppendAudit(ctx context.Context, e *store.AuditEvent) error {
	if err := backend.PrepareAudit(e, backend.Now()); err != nil {
		return err
	}
	err := s.pool.QueryRow(ctx, `INSERT INTO audit_incoming (at, tenant, tool, tool_version, subject, trace_id,
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
	query, args := listAuditQuery(f, pos)
	rows, err := s.pool.Query(ctx, query, args...)
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
		batch.Queue(`INSERT INTO audit_incoming (at, tenant, tool, tool_version, subject, trace_id,
			correlation_id, transport, decision, reason, code, latency_ms)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING id`,
			e.At, e.Tenant, e.Tool, e.ToolVersion, e.Subject, e.TraceID, e.CorrelationID, e.Transport,
			e.Decision, e.Reason, e.Code, e.LatencyMs).QueryRow(func(row pgx.Row) error { return row.Scan(&e.ID) })
	}
	return s.inTx(ctx, "AppendAudits", func(tx pgx.Tx) error {
		return s.fail(ctx, "AppendAudits", tx.SendBatch(ctx, batch).Close())
	})
}

// listAuditQuery is ListAudit's SELECT for f from pos: a page of
// audit_events, walked newest first on its indexes and stopping after the
// page, and the events of audit_incoming the indexer has not moved yet
// (a small heap, scanned), in one statement, so one snapshot: an event is
// in exactly one of the two tables.
func listAuditQuery(f store.AuditFilter, pos backend.Position) (string, []any) {
	var b strings.Builder
	args := []any{f.Tenant}
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	var where strings.Builder
	where.WriteString(` WHERE tenant = $1`)
	for _, c := range []struct{ col, val string }{{"tool", f.Tool}, {"subject", f.Subject}, {"decision", f.Decision}} {
		if c.val != "" {
			where.WriteString(` AND ` + c.col + ` = ` + arg(c.val))
		}
	}
	if !f.Since.IsZero() {
		where.WriteString(` AND at >= ` + arg(backend.Normalize(f.Since)))
	}
	if !f.Until.IsZero() {
		where.WriteString(` AND at < ` + arg(backend.Normalize(f.Until)))
	}
	if !pos.IsZero() {
		where.WriteString(` AND (at, id) < (` + arg(backend.FromMicros(pos.AtMicros)) + `, ` + arg(pos.ID) + `)`)
	}
	limit := arg(f.Limit + 1)
	const cols = `id, at, tenant, tool, tool_version, subject, trace_id, correlation_id, transport, decision,
		reason, code, latency_ms`
	b.WriteString(`(SELECT ` + cols + ` FROM audit_events` + where.String() + ` ORDER BY at DESC, id DESC LIMIT ` + limit + `)
		UNION ALL (SELECT ` + cols + ` FROM audit_incoming` + where.String() + `)
		ORDER BY at DESC, id DESC LIMIT ` + limit)
	return b.String(), args
}

// auditIndexBatch is how many events one transaction of IndexAudit moves
// at most.
const auditIndexBatch = 8192

// auditIndexEvery is how often the indexer runs.
const auditIndexEvery = 500 * time.Millisecond

// IndexAudit implements store.AuditIndexer: it moves the events of
// audit_incoming into audit_events, oldest first, in transactions of up to
// auditIndexBatch events, and returns how many it moved. Replicas sharing
// the database run it at once without conflict: each takes the rows no
// other holds (SKIP LOCKED).
func (s *Store) IndexAudit(ctx context.Context) (int, error) {
	total := 0
	for {
		var n int
		err := s.inTx(ctx, "IndexAudit", func(tx pgx.Tx) error {
			rows, err := tx.Query(ctx, `SELECT id FROM audit_incoming ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED`, auditIndexBatch)
			if err != nil {
				return s.fail(ctx, "IndexAudit", err)
			}
			ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
			if err != nil || len(ids) == 0 {
				return s.fail(ctx, "IndexAudit", err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO audit_events (id, at, tenant, tool, tool_version,
				subject, trace_id, correlation_id, transport, decision, reason, code, latency_ms)
				OVERRIDING SYSTEM VALUE SELECT id, at, tenant, tool, tool_version, subject, trace_id, correlation_id, transport, decision, reason,
				code, latency_ms FROM audit_incoming WHERE id = ANY($1) ORDER BY id`, ids); err != nil {
				return s.fail(ctx, "IndexAudit", err)
			}
			if _, err := tx.Exec(ctx, `DELETE FROM audit_incoming WHERE id = ANY($1)`, ids); err != nil {
				return s.fail(ctx, "IndexAudit", err)
			}
			n = len(ids)
			return nil
		})
		total += n
		if err != nil || n < auditIndexBatch {
			return total, err
		}
	}
}

// PruneAudit implements store.AuditPruner: it moves what audit_incoming
// holds into audit_events first (IndexAudit), so that it prunes every
// event before the cutoff, then raises the retention cutoff
// (which the delete trigger of migration 0005 checks) and deletes the
// oldest events before it, walking the primary key from its start, where
// the oldest events are.
func (s *Store) PruneAudit(ctx context.Context, before time.Time, limit int) (int, error) {
	if _, err := s.IndexAudit(ctx); err != nil {
		return 0, err
	}
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
