package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"github.com/toolsvc/toolsvc/internal/base/mcptask"
	"time"

	"github.com/toolsvc/toolsvc/internal/store/internal/backend"
)

var _ mcptask.Store = (*Store)(nil)

// CreateTask implements mcptask.Store, in one transaction on the writer.
func (s *Store) CreateTask(ctx context.Context, r *mcptask.Record, perOwner int, expiredBefore time.Time) (bool, error) {
	const op = "CreateTask"
	leave, err := s.writeTurn(ctx, op)
	if err != nil {
		return false, err
	}
	defer leave()
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return false, s.fail(ctx, op, err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, `DELETE FROM mcp_tasks WHERE owner = ? AND status <> 'working' AND created_at < ?`,
		r.Owner, expiredBefore.UnixMicro()); err != nil {
		return false, s.fail(ctx, op, err)
	}
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM mcp_tasks WHERE owner = ?`, r.Owner).Scan(&n); err != nil {
		return false, s.fail(ctx, op, err)
	}
	for ; n >= perOwner; n-- {
		res, err := tx.ExecContext(ctx, `DELETE FROM mcp_tasks WHERE id = (SELECT id FROM mcp_tasks
			WHERE owner = ? AND status <> 'working' ORDER BY created_at LIMIT 1)`, r.Owner)
		if err != nil {
			return false, s.fail(ctx, op, err)
		}
		if k, _ := res.RowsAffected(); k == 0 {
			return false, nil // all of them running
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO mcp_tasks (id, owner, replica, status, message, created_at, updated_at, lease_until)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, r.ID, r.Owner, r.Replica, r.Status, r.Message,
		r.CreatedAt.UnixMicro(), r.UpdatedAt.UnixMicro(), r.LeaseUntil.UnixMicro()); err != nil {
		return false, s.fail(ctx, op, err)
	}
	return true, s.fail(ctx, op, tx.Commit())
}

// GetTask implements mcptask.Store.
func (s *Store) GetTask(ctx context.Context, id string) (*mcptask.Record, error) {
	const op = "GetTask"
	leave, err := s.readTurn(ctx, op)
	if err != nil {
		return nil, err
	}
	defer leave()
	var (
		r                        mcptask.Record
		created, updated, leased int64
	)
	err = s.reader.QueryRowContext(ctx, `SELECT owner, replica, status, message, result, error, cancel_requested,
		created_at, updated_at, lease_until FROM mcp_tasks WHERE id = ?`, id).
		Scan(&r.Owner, &r.Replica, &r.Status, &r.Message, &r.Result, &r.Error, &r.CancelRequested, &created, &updated, &leased)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, s.fail(ctx, op, err)
	}
	r.ID = id
	r.CreatedAt, r.UpdatedAt, r.LeaseUntil = backend.FromMicros(created), backend.FromMicros(updated), backend.FromMicros(leased)
	return &r, nil
}

// exec runs one statement on the writer and returns the rows it changed.
func (s *Store) exec(ctx context.Context, op, query string, args ...any) (int64, error) {
	leave, err := s.writeTurn(ctx, op)
	if err != nil {
		return 0, err
	}
	defer leave()
	res, err := s.writer.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, s.fail(ctx, op, err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}

// ProgressTask implements mcptask.Store.
func (s *Store) ProgressTask(ctx context.Context, id, message string, at time.Time) error {
	_, err := s.exec(ctx, "ProgressTask", `UPDATE mcp_tasks SET message = ?, updated_at = ? WHERE id = ? AND status = 'working'`,
		message, at.UnixMicro(), id)
	return err
}

// FinishTask implements mcptask.Store.
func (s *Store) FinishTask(ctx context.Context, r *mcptask.Record) error {
	_, err := s.exec(ctx, "FinishTask", `UPDATE mcp_tasks SET status = ?, message = ?, result = ?, error = ?, updated_at = ?
		WHERE id = ? AND replica = ? AND status = 'working'`,
		r.Status, r.Message, r.Result, r.Error, r.UpdatedAt.UnixMicro(), r.ID, r.Replica)
	return err
}

// RenewTasks implements mcptask.Store.
func (s *Store) RenewTasks(ctx context.Context, replica string, leaseUntil time.Time) ([]string, error) {
	const op = "RenewTasks"
	leave, err := s.writeTurn(ctx, op)
	if err != nil {
		return nil, err
	}
	defer leave()
	rows, err := s.writer.QueryContext(ctx, `UPDATE mcp_tasks SET lease_until = ? WHERE replica = ? AND status = 'working'
		RETURNING id, cancel_requested`, leaseUntil.UnixMicro(), replica)
	if err != nil {
		return nil, s.fail(ctx, op, err)
	}
	defer func() { _ = rows.Close() }()
	var cancel []string
	for rows.Next() {
		var (
			id        string
			requested bool
		)
		if err := rows.Scan(&id, &requested); err != nil {
			return nil, s.fail(ctx, op, err)
		}
		if requested {
			cancel = append(cancel, id)
		}
	}
	return cancel, s.fail(ctx, op, rows.Err())
}

// CancelTask implements mcptask.Store.
func (s *Store) CancelTask(ctx context.Context, id string) error {
	_, err := s.exec(ctx, "CancelTask", `UPDATE mcp_tasks SET cancel_requested = 1 WHERE id = ? AND status = 'working'`, id)
	return err
}

// FailLostTasks implements mcptask.Store.
func (s *Store) FailLostTasks(ctx context.Context, now time.Time, message string, errJSON []byte) (int64, error) {
	return s.exec(ctx, "FailLostTasks", `UPDATE mcp_tasks SET status = 'failed', message = ?, error = ?, updated_at = ?
		WHERE status = 'working' AND lease_until < ?`, message, errJSON, now.UnixMicro(), now.UnixMicro())
}

// PurgeTasks implements mcptask.Store.
func (s *Store) PurgeTasks(ctx context.Context, before time.Time) (int64, error) {
	return s.exec(ctx, "PurgeTasks", `DELETE FROM mcp_tasks WHERE status <> 'working' AND created_at < ?`, before.UnixMicro())
}
