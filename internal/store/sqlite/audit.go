package sqlite

import (
	"context"
	"database/sql"
	"strings"
	"time"

	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/internal/backend"
)

// auditInsert is the INSERT of audit events up to its VALUES. OR ROLLBACK:
// a batch is all or nothing anyway, and a statement that can only fail
// whole needs no statement journal, which SQLite would otherwise write to a
// temporary file for every multi-row insert.
const auditInsert = `INSERT OR ROLLBACK INTO audit_events (at, tenant, tool, tool_version, subject, trace_id, correlation_id,
	transport, decision, reason, code, latency_ms) VALUES `

// auditRow is one row of auditInsert's VALUES.
const auditRow = `(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// appendAuditSQL inserts one audit event; it is prepared once per pool.
const appendAuditSQL = auditInsert + auditRow + ` RETURNING id`

// auditChunks are the row counts of the multi-row inserts AppendAudits cuts
// a batch into, largest first; each is prepared once per pool.
var auditChunks = []int{64, 16, 4, 1}

// auditChunkSQL is the multi-row insert of each auditChunks size.
var auditChunkSQL = func() map[int]string {
	m := map[int]string{}
	for _, n := range auditChunks {
		m[n] = auditInsert + strings.Repeat(auditRow+", ", n-1) + auditRow
	}
	return m
}()

// AppendAudit implements store.AuditStore.
func (s *Store) AppendAudit(ctx context.Context, e *store.AuditEvent) error {
	if err := backend.PrepareAudit(e, backend.Now()); err != nil {
		return err
	}
	ins, err := s.writerStmts.stmt(ctx, appendAuditSQL)
	if err != nil {
		return s.fail(ctx, "AppendAudit", err)
	}
	leave, err := s.writeTurn(ctx, "AppendAudit")
	if err != nil {
		return err
	}
	defer leave()
	err = ins.QueryRowContext(ctx, auditArgs(nil, e)...).Scan(&e.ID)
	return s.fail(ctx, "AppendAudit", err)
}

// auditArgs appends the values of e's row to args.
func auditArgs(args []any, e *store.AuditEvent) []any {
	return append(args, e.At.UnixMicro(), e.Tenant, e.Tool, e.ToolVersion, e.Subject, e.TraceID,
		e.CorrelationID, e.Transport, e.Decision, e.Reason, e.Code, e.LatencyMs)
}

// ListAudit implements store.AuditStore with keyset pagination on (at, id):
// pages stay stable while events are appended.
func (s *Store) ListAudit(ctx context.Context, f store.AuditFilter) ([]store.AuditEvent, string, error) {
	pos, err := backend.PrepareAuditFilter(&f)
	if err != nil {
		return nil, "", err
	}
	query, args := listAuditQuery(f, pos)
	leave, err := s.readTurn(ctx, "ListAudit")
	if err != nil {
		return nil, "", err
	}
	defer leave()
	rows, err := s.reader.QueryContext(ctx, query, args...)
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
// transaction, so a busy service pays one commit per batch, not per call,
// written with multi-row inserts (auditChunks), which cost about half as
// much per row as one insert per event.
func (s *Store) AppendAudits(ctx context.Context, es []*store.AuditEvent) error {
	now := backend.Now()
	for _, e := range es {
		if err := backend.PrepareAudit(e, now); err != nil {
			return err
		}
	}
	// Prepared before the transaction: the writer has one connection.
	prepared := make(map[int]*sql.Stmt, len(auditChunks))
	for _, n := range auditChunks {
		st, err := s.writerStmts.stmt(ctx, auditChunkSQL[n])
		if err != nil {
			return s.fail(ctx, "AppendAudits", err)
		}
		prepared[n] = st
	}
	return s.writeTx(ctx, "AppendAudits", func(tx *sql.Tx) error {
		args := make([]any, 0, 12*auditChunks[0])
		for rest := es; len(rest) > 0; {
			n := auditChunks[len(auditChunks)-1]
			for _, c := range auditChunks {
				if c <= len(rest) {
					n = c
					break
				}
			}
			args = args[:0]
			for _, e := range rest[:n] {
				args = auditArgs(args, e)
			}
			ins := tx.StmtContext(ctx, prepared[n])
			res, err := ins.ExecContext(ctx, args...)
			_ = ins.Close()
			if err != nil {
				return s.fail(ctx, "AppendAudits", err)
			}
			// AUTOINCREMENT ids of one statement in the writer's only
			// transaction are consecutive, in VALUES order.
			last, err := res.LastInsertId()
			if err != nil {
				return s.fail(ctx, "AppendAudits", err)
			}
			for i, e := range rest[:n] {
				e.ID = last - int64(n-1-i)
			}
			rest = rest[n:]
		}
		return nil
	})
}

// listAuditQuery is ListAudit's SELECT for f from pos. The events up to
// the index mark (migration 0014) are walked newest first in
// audit_by_tool when a tool is given, else in audit_by_tenant, each joined
// to its event by rowid and narrowed by subject and decision as it goes
// (migration 0004 says why subject has no index of its own); that walk
// stops after its page. The tail the indexer has not reached yet is read
// straight from audit_events after the mark, a rowid range. Both are one
// statement, so one snapshot: an event is in exactly one of them.
func listAuditQuery(f store.AuditFilter, pos backend.Position) (string, []any) {
	var b strings.Builder
	var args []any
	idx, key := "audit_by_tenant", "x.tenant = ?"
	if f.Tool != "" {
		idx, key = "audit_by_tool", "x.tenant = ? AND x.tool = ?"
	}
	// where writes the filters on the columns of table t (x: an index
	// table, whose at and id are the event's; e: audit_events).
	where := func(t string) {
		for _, c := range []struct{ col, val string }{{"subject", f.Subject}, {"decision", f.Decision}} {
			if c.val != "" {
				b.WriteString(` AND e.` + c.col + ` = ?`)
				args = append(args, c.val)
			}
		}
		if !f.Since.IsZero() {
			b.WriteString(` AND ` + t + `.at >= ?`)
			args = append(args, f.Since.UnixMicro())
		}
		if !f.Until.IsZero() {
			b.WriteString(` AND ` + t + `.at < ?`)
			args = append(args, f.Until.UnixMicro())
		}
		if !pos.IsZero() {
			b.WriteString(` AND (` + t + `.at < ? OR (` + t + `.at = ? AND ` + t + `.id < ?))`)
			args = append(args, pos.AtMicros, pos.AtMicros, pos.ID)
		}
	}
	b.WriteString(`SELECT * FROM (SELECT ` + auditColumns + ` FROM ` + idx + ` x CROSS JOIN audit_events e ON e.id = x.id WHERE ` + key)
	args = append(args, f.Tenant)
	if f.Tool != "" {
		args = append(args, f.Tool)
	}
	where("x")
	b.WriteString(` ORDER BY x.at DESC, x.id DESC LIMIT ?)`)
	args = append(args, f.Limit+1)
	b.WriteString(` UNION ALL SELECT * FROM (SELECT ` + auditColumns + ` FROM audit_events e
		WHERE e.id > (SELECT upto FROM audit_indexed) AND e.tenant = ?`)
	args = append(args, f.Tenant)
	if f.Tool != "" {
		b.WriteString(` AND e.tool = ?`)
		args = append(args, f.Tool)
	}
	where("e")
	b.WriteString(`) ORDER BY 2 DESC, 1 DESC LIMIT ?`)
	args = append(args, f.Limit+1)
	return b.String(), args
}

// auditColumns are the columns ListAudit reads, of audit_events as e.
const auditColumns = `e.id, e.at, e.tenant, e.tool, e.tool_version, e.subject, e.trace_id, e.correlation_id, e.transport,
	e.decision, e.reason, e.code, e.latency_ms`

// auditIndexBatch is how many events one run of the indexer's transaction
// takes at most.
const auditIndexBatch = 8192

// auditIndexEvery is how often the indexer runs. The longer, the larger
// and cheaper its batches (each index page is dirtied once per batch, not
// once per writer batch) and the longer the tail ListAudit reads without
// an index.
const auditIndexEvery = 500 * time.Millisecond

// IndexAudit builds the index entries of the audit events the indexer has
// not reached yet (migration 0014), in transactions of up to
// auditIndexBatch events, and returns how many events it indexed. It runs
// every auditIndexEvery behind the writer; ListAudit never waits for it.
func (s *Store) IndexAudit(ctx context.Context) (int, error) {
	total := 0
	for {
		var n int
		err := s.writeTx(ctx, "IndexAudit", func(tx *sql.Tx) error {
			var upto int64
			var hi sql.NullInt64
			if err := tx.QueryRowContext(ctx, `SELECT upto FROM audit_indexed`).Scan(&upto); err != nil {
				return s.fail(ctx, "IndexAudit", err)
			}
			if err := tx.QueryRowContext(ctx, `SELECT max(id), count(*) FROM (SELECT id FROM audit_events WHERE id > ? ORDER BY id LIMIT ?)`,
				upto, auditIndexBatch).Scan(&hi, &n); err != nil {
				return s.fail(ctx, "IndexAudit", err)
			}
			if !hi.Valid {
				return nil
			}
			for _, q := range []string{
				`INSERT INTO audit_by_tenant (tenant, at, id) SELECT tenant, at, id FROM audit_events
					WHERE id > ? AND id <= ?`,
				`INSERT INTO audit_by_tool (tenant, tool, at, id) SELECT tenant, tool, at, id FROM audit_events
					WHERE id > ? AND id <= ?`,
			} {
				if _, err := tx.ExecContext(ctx, q, upto, hi.Int64); err != nil {
					return s.fail(ctx, "IndexAudit", err)
				}
			}
			_, err := tx.ExecContext(ctx, `UPDATE audit_indexed SET upto = ?`, hi.Int64)
			return s.fail(ctx, "IndexAudit", err)
		})
		total += n
		if err != nil || n < auditIndexBatch {
			return total, err
		}
	}
}

// PruneAudit implements store.AuditPruner: it raises the retention cutoff
// (which the delete trigger of migration 0008 checks) and deletes the
// oldest events before it, walking the primary key from its start, where
// the oldest events are.
func (s *Store) PruneAudit(ctx context.Context, before time.Time, limit int) (int, error) {
	cut := before.UnixMicro()
	var n int64
	err := s.writeTx(ctx, "PruneAudit", func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE audit_retention SET cutoff = max(cutoff, ?)`, cut); err != nil {
			return s.fail(ctx, "PruneAudit", err)
		}
		// The index entries of the events it deletes first (found by the
		// same walk), then the events: an entry never outlives its event.
		for _, q := range []string{
			`DELETE FROM audit_by_tenant WHERE (tenant, at, id) IN
				(SELECT tenant, at, id FROM audit_events WHERE at < ? ORDER BY id LIMIT ?)`,
			`DELETE FROM audit_by_tool WHERE (tenant, tool, at, id) IN
				(SELECT tenant, tool, at, id FROM audit_events WHERE at < ? ORDER BY id LIMIT ?)`,
		} {
			if _, err := tx.ExecContext(ctx, q, cut, limit); err != nil {
				return s.fail(ctx, "PruneAudit", err)
			}
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM audit_events WHERE id IN
			(SELECT id FROM audit_events WHERE at < ? ORDER BY id LIMIT ?)`, cut, limit)
		if err != nil {
			return s.fail(ctx, "PruneAudit", err)
		}
		n, err = res.RowsAffected()
		return s.fail(ctx, "PruneAudit", err)
	})
	return int(n), err
}
